"""Per-chat in-memory vector matrices for exact cosine kNN, kept current by the store's writes (its own
directly, other connections' through :mod:`backends.sqlite.vectors`).

A chat of :data:`backends.sqlite.knn_int8.MIN_ROWS` vectors or more also gets an int8 copy that answers the same
top n in a quarter of the memory traffic (:mod:`backends.sqlite.knn_int8`): built on the first search, rebuilt in a
background thread when an eighth of the rows were appended since (those are scanned exactly meanwhile).
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from backends.sqlite import knn_int8

_BUILDER: list[ThreadPoolExecutor] = []  # one background thread for index rebuilds, started on first use


def _builder() -> ThreadPoolExecutor:
    if not _BUILDER:
        _BUILDER.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="knn-int8"))
    return _BUILDER[0]


# (rid, kind, ts_epoch, live, subject, unit vector): one row as the store's writes record it
Row = tuple[int, str, float, bool, str | None, np.ndarray]
_DTYPES = (
    ("rids", np.int64),
    ("matrix", np.float32),
    ("codes", np.int16),
    ("ts", np.float64),
    ("live", bool),
    ("subjects", object),
)


class _Column:
    """A column of :class:`ChatVectors`: a view of the first ``size`` rows of its buffer of that name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: ChatVectors, owner: type | None = None) -> np.ndarray:
        return obj.buffers[self.name][: obj.size]


@dataclass
class Columns:
    """Rows of one chat as columns, in rid order (what :meth:`ChatVectors.extend` appends)."""

    rids: np.ndarray  # int64
    matrix: np.ndarray  # (rows, dim) float32, unit rows
    kinds: list[str]
    ts: np.ndarray  # float64
    live: np.ndarray  # bool
    subjects: list[str | None]

    @classmethod
    def of_rows(cls, rows: list[Row], dim: int) -> Columns:
        matrix = np.stack([r[5] for r in rows]).astype(np.float32) if rows else np.zeros((0, dim), np.float32)
        return cls(np.array([r[0] for r in rows], dtype=np.int64), matrix, [r[1] for r in rows],
                   np.array([r[2] for r in rows], dtype=np.float64), np.array([r[3] for r in rows], dtype=bool),
                   [r[4] for r in rows])  # fmt: skip


@dataclass(eq=False)
class ChatVectors:
    """One chat's vectors and the metadata kNN filters on, in rid (insertion) order.

    The columns live in buffers of ``capacity`` rows of which the first ``size`` are the chat's: appending
    writes past ``size`` and reallocates (doubling; an eighth spare after a load) only when full, so a chat
    growing by small batches copies its matrix O(log n) times, not once a batch (153 MB at 100k x 384).
    Rows below ``size`` are never rewritten (the int8 index and a background rebuild read them); only the
    ``live`` flags change (:meth:`close`, :meth:`set_closed`). Kinds are kept as small codes
    (:attr:`kind_names`).
    """

    size: int
    buffers: dict[str, np.ndarray] = field(repr=False)
    kind_names: list[str] = field(default_factory=list)
    index: knn_int8.Int8Index | None = field(default=None, repr=False)
    pending: Future | None = field(default=None, repr=False)  # an index being rebuilt
    reallocations: int = 0  # how many times the buffers were copied into larger ones

    @classmethod
    def empty(cls, dim: int) -> ChatVectors:
        return cls(0, {name: np.zeros((0, dim) if name == "matrix" else 0, dtype) for name, dtype in _DTYPES})

    @classmethod
    def from_rows(cls, rows: list[Row], dim: int) -> ChatVectors:
        """From ``(rid, kind, ts_epoch, live, subject, unit vector)`` rows in rid order."""
        return cls.empty(dim).extend(Columns.of_rows(rows, dim))

    @property
    def capacity(self) -> int:
        return len(self.buffers["rids"])

    rids, matrix, codes, ts, live, subjects = (_Column() for _ in range(6))

    @property
    def kinds(self) -> np.ndarray:
        """The rows' kinds as strings (decoded: for inspection, not for the search path)."""
        return np.array(self.kind_names or [""], dtype=str)[self.codes]

    @property
    def nbytes(self) -> int:
        """What this chat's vectors hold in memory, roughly: the filled rows of every column (a buffer's spare
        rows are never touched, so they cost no memory) and the int8 copy."""
        row = sum(b.itemsize * (b.shape[1] if b.ndim == 2 else 1) for b in self.buffers.values())
        index = self.index
        return self.size * row + (0 if index is None else index.rows * (self.buffers["matrix"].shape[1] + 4))

    @property
    def last_rid(self) -> int:
        return int(self.rids[-1]) if self.size else -1

    def mask(
        self, kinds: Iterable[str] | None, since: float | None, until: float | None, live_only: bool
    ) -> np.ndarray:
        keep = np.ones(self.size, dtype=bool) if kinds is None else self.kind_mask(kinds)
        if since is not None:
            keep &= self.ts >= since
        if until is not None:
            keep &= self.ts <= until
        if live_only:
            keep &= self.live
        return keep

    def kind_mask(self, kinds: Iterable[str]) -> np.ndarray:
        """Rows of any of ``kinds`` (a comparison of small integer codes per kind: ``np.isin`` over strings
        cost 3 ms a search at 100k rows)."""
        keep = np.zeros(self.size, dtype=bool)
        codes = self.codes
        for kind in set(kinds):
            if kind in self.kind_names:
                keep |= codes == self.kind_names.index(kind)
        return keep

    def extend(self, new: Columns | list[Row]) -> ChatVectors:
        """Append rows (their rids above every row's here, so rid order is kept; the int8 index of the first
        rows stays valid), in place; returns ``self``."""
        if isinstance(new, list):
            new = Columns.of_rows(new, self.buffers["matrix"].shape[1])
        n = len(new.rids)
        if n == 0:
            return self
        if self.size and new.rids[0] <= self.rids[-1]:
            raise ValueError(f"rows appended out of rid order ({new.rids[0]} after {self.rids[-1]})")
        self._reserve(self.size + n)
        end = self.size + n
        for kind in dict.fromkeys(new.kinds):
            if kind not in self.kind_names:
                self.kind_names.append(kind)
        code = {kind: i for i, kind in enumerate(self.kind_names)}
        b = self.buffers
        b["rids"][self.size : end] = new.rids
        b["matrix"][self.size : end] = new.matrix
        b["codes"][self.size : end] = [code[k] for k in new.kinds]
        b["ts"][self.size : end] = new.ts
        b["live"][self.size : end] = new.live
        b["subjects"][self.size : end] = new.subjects
        self.size = end
        return self

    def _reserve(self, rows: int) -> None:
        if rows <= self.capacity:
            return
        cap = max(rows + rows // 8, 2 * self.capacity, 64)  # an eighth spare: untouched pages cost no memory
        grown = {}
        for name, old in self.buffers.items():
            buf = np.empty((cap, *old.shape[1:]), dtype=old.dtype)
            buf[: self.size] = old[: self.size]
            grown[name] = buf
        self.buffers = grown  # the old buffers stay valid for whoever holds a view (a background build)
        self.reallocations += 1

    def close(self, rid: int) -> None:
        """Mark the row of ``rid`` not live (an invalidated memory version); unknown rids are ignored."""
        self.set_closed([rid], reset=False)

    def set_closed(self, rids: Iterable[int], *, reset: bool = True) -> None:
        """The rows of ``rids`` are not live (``reset``: and every other row is)."""
        wanted = np.fromiter(rids, dtype=np.int64)
        live = self.live
        if reset:
            live[:] = True
        at = np.searchsorted(self.rids, wanted)
        found = at < self.size
        at = at[found]
        live[at[self.rids[at] == wanted[found]]] = False

    def top(self, query: np.ndarray, keep: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The ``n`` best kept rows by cosine (rows are unit vectors), ties by insertion order."""
        if n <= 0 or not keep.any():
            return []
        if (index := self.int8_index()) is not None:
            found = knn_int8.top(index, self.matrix, query, keep, n)
            if found is not None:
                return [(int(self.rids[i]), float(s)) for i, s in zip(*found, strict=True)]
        # einsum, not matmul: a gemv this size is ~0.1 ms single-threaded, while waking OpenBLAS's thread
        # pool after idle time costs several ms at p95
        sims = np.where(keep, np.einsum("ij,j->i", self.matrix, query), -np.inf)
        n = min(n, int(keep.sum()))
        part = np.argpartition(-sims, n - 1)[:n] if n < sims.size else np.arange(sims.size)
        order = part[np.lexsort((part, -sims[part]))]
        return [(int(self.rids[i]), float(sims[i])) for i in order if keep[i]]

    def int8_index(self, *, wait: bool = False) -> knn_int8.Int8Index | None:
        """The int8 index of a large chat: built now when there is none, in the background when an eighth of
        the rows came after it (``wait``: until that rebuild is done)."""
        rows = len(self.rids)
        if rows < knn_int8.MIN_ROWS:
            return None
        if self.pending is not None and (wait or self.pending.done()):
            built, self.pending = self.pending.result(), None
            if self.index is None or built.rows > self.index.rows:
                self.index = built
        if self.index is None:
            self.index = knn_int8.build(self.matrix)
        elif self.pending is None and rows - self.index.rows > rows // 8:
            self.pending = _builder().submit(knn_int8.build, self.matrix)
        return self.index


@dataclass
class Effects:
    """What one committed write means for the per-chat vector caches."""

    added: dict[str, list[Row]] = field(default_factory=dict)
    closed: list[tuple[str, int]] = field(default_factory=list)
    stale: set[str] = field(default_factory=set)
