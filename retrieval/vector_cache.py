"""Per-chat in-memory vector matrices for exact cosine kNN, kept current by the store's own writes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ChatVectors:
    """One chat's vectors and the metadata kNN filters on, in rid (insertion) order.

    Built from SQLite on first use; then kept current by the writes of this store (new rows appended,
    invalidated versions marked not live); dropped and rebuilt after deletions or vector replacements.
    """

    rids: np.ndarray
    matrix: np.ndarray
    kinds: np.ndarray
    ts: np.ndarray
    live: np.ndarray
    subjects: np.ndarray

    def mask(
        self, kinds: Iterable[str] | None, since: float | None, until: float | None, live_only: bool
    ) -> np.ndarray:
        keep = np.ones(len(self.rids), dtype=bool)
        if kinds is not None:
            keep &= np.isin(self.kinds, list(kinds))
        if since is not None:
            keep &= self.ts >= since
        if until is not None:
            keep &= self.ts <= until
        if live_only:
            keep &= self.live
        return keep

    @classmethod
    def from_rows(
        cls, rows: list[tuple[int, str, float, bool, str | None, np.ndarray]], dim: int
    ) -> ChatVectors:
        """From ``(rid, kind, ts_epoch, live, subject, unit vector)`` rows in rid order."""
        matrix = np.stack([r[5] for r in rows]).astype(np.float32) if rows else np.zeros((0, dim), np.float32)
        return cls(
            rids=np.array([r[0] for r in rows], dtype=np.int64),
            matrix=matrix,
            kinds=np.array([r[1] for r in rows], dtype=str),
            ts=np.array([r[2] for r in rows], dtype=np.float64),
            live=np.array([r[3] for r in rows], dtype=bool),
            subjects=np.array([r[4] for r in rows], dtype=object),
        )

    def extend(self, rows: list[tuple[int, str, float, bool, str | None, np.ndarray]]) -> ChatVectors:
        """A copy with new rows appended (rids grow monotonically, so rid order is kept)."""
        new = ChatVectors.from_rows(rows, self.matrix.shape[1])
        return ChatVectors(
            *(np.concatenate([a, b]) for a, b in zip(self.fields(), new.fields(), strict=True))
        )

    def fields(self) -> tuple[np.ndarray, ...]:
        return self.rids, self.matrix, self.kinds, self.ts, self.live, self.subjects

    def close(self, rid: int) -> None:
        self.live[self.rids == rid] = False

    def top(self, query: np.ndarray, keep: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The ``n`` best kept rows by cosine (rows are unit vectors), ties by insertion order."""
        if n <= 0 or not keep.any():
            return []
        # einsum, not matmul: a gemv this size is ~0.1 ms single-threaded, while waking OpenBLAS's thread
        # pool after idle time costs several ms at p95
        sims = np.where(keep, np.einsum("ij,j->i", self.matrix, query), -np.inf)
        n = min(n, int(keep.sum()))
        part = np.argpartition(-sims, n - 1)[:n] if n < sims.size else np.arange(sims.size)
        order = part[np.lexsort((part, -sims[part]))]
        return [(int(self.rids[i]), float(sims[i])) for i in order if keep[i]]


@dataclass
class Effects:
    """What one committed write means for the per-chat vector caches."""

    added: dict[str, list[tuple[int, str, float, bool, str | None, np.ndarray]]] = field(default_factory=dict)
    closed: list[tuple[str, int]] = field(default_factory=list)
    stale: set[str] = field(default_factory=set)
