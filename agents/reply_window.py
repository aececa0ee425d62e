"""The reply linker's window as columns: what each window message says, as numpy arrays aligned with the
window, so that the pair features of a new message are a few array expressions
(:mod:`agents.reply_pairs`) rather than a loop over the candidates.

Built once from a window (:meth:`WindowCols.build`), then extended by one message per step
(:meth:`WindowCols.appended`), which costs about what one candidate did before. People (senders, the people
they address or name) are small integer codes; a code never changes meaning, so an extended copy may share
the code table with the copy it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["STATIC", "WindowCols", "WindowVecs"]

# per-message facts that go into the features as they are, one row each of WindowCols.static
STATIC = ("question", "no_addressee", "length", "greeting", "root", "thanks", "command")
_CODES_MAX = 4096  # past this many people the code table is rebuilt from the window


@dataclass(frozen=True, slots=True)
class WindowCols:
    """Columns of ``window`` (``LinkMsg``s, oldest first). ``base`` is the position of ``window[0]`` in the
    chat's stream of linked messages, so a parent is named by its position (``parent_at``: -1 none or
    outside the window when it was linked; a message that starts a conversation is its own parent)."""

    window: list[Any]
    codes: dict[str, int]
    base: int
    sender: np.ndarray  # code per message
    ts: np.ndarray
    addressed: np.ndarray  # (n, width): codes of the people addressed, -1 padded
    mentioned: np.ndarray  # (n, width): codes of the people named
    parent_at: np.ndarray  # the parent's position in the stream (see above)
    parent_sender: np.ndarray  # its sender's code, -1 unknown
    answers: np.ndarray  # bool: the message answers another one (not None, not itself)
    static: np.ndarray  # (len(STATIC), n) float64
    ids: list[str]
    keywords: list[frozenset[str]]

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def build(cls, window: list[Any]) -> WindowCols:
        codes: dict[str, int] = {}
        rows = [_entry(m, codes, window[:k], 0) for k, m in enumerate(window)]
        return cls._of(window, codes, 0, rows)

    def appended(self, msg: Any, window: list[Any]) -> WindowCols:
        """These columns with ``msg`` added last and the oldest dropped so that they match ``window`` (the new
        window: the old one's tail, then ``msg``)."""
        drop = len(self.window) + 1 - len(window)
        if len(self.codes) > _CODES_MAX or drop < 0 or window[-1] is not msg:
            return WindowCols.build(window)
        sender, ts, addressed, mentioned, parent_at, parent_sender, answers, static, mid, words = _entry(
            msg, self.codes, self.window, self.base
        )
        return WindowCols(
            window,
            self.codes,
            self.base + drop,
            _append(self.sender[drop:], sender),
            _append(self.ts[drop:], ts),
            _append_row(self.addressed[drop:], addressed),
            _append_row(self.mentioned[drop:], mentioned),
            _append(self.parent_at[drop:], parent_at),
            _append(self.parent_sender[drop:], parent_sender),
            _append(self.answers[drop:], answers),
            np.concatenate([self.static[:, drop:], np.asarray(static, dtype=np.float64)[:, None]], axis=1),
            [*self.ids[drop:], mid],
            [*self.keywords[drop:], words],
        )

    @classmethod
    def _of(cls, window: list[Any], codes: dict[str, int], base: int, rows: list[tuple]) -> WindowCols:
        n = len(rows)
        sender, ts, addressed, mentioned, parent_at, parent_sender, answers, static, ids, keywords = (
            zip(*rows, strict=True) if rows else ((),) * 10
        )
        return cls(
            window,
            codes,
            base,
            np.asarray(sender, dtype=np.intp),
            np.asarray(ts, dtype=np.float64),
            _padded(addressed),
            _padded(mentioned),
            np.asarray(parent_at, dtype=np.intp),
            np.asarray(parent_sender, dtype=np.intp),
            np.asarray(answers, dtype=bool),
            np.asarray(static, dtype=np.float64).reshape(n, len(STATIC)).T.copy(),
            list(ids),
            list(keywords),
        )


@dataclass(frozen=True, slots=True)
class WindowVecs:
    """The window's vectors as one float32 matrix, a row per message (NaN: no vector, or one of another size
    than the newest), so that a message's cosines to the window are one batched product. ``raw`` is the list
    of encoded vectors it was built from (the pool's, compared by identity)."""

    raw: list[str]
    mat: np.ndarray  # (n, dim), read-only; dim 0 when no vector is known

    @classmethod
    def build(cls, raw: list[str], vecs: list[np.ndarray | None]) -> WindowVecs:
        dim = next((len(v) for v in reversed(vecs) if v is not None), 0)
        mat = np.full((len(vecs), dim), np.nan, dtype=np.float32)
        for i, v in enumerate(vecs):
            if v is not None and len(v) == dim:
                mat[i] = v
        mat.setflags(write=False)
        return cls(raw, mat)

    def appended(self, raw: list[str], vec: np.ndarray | None, decode: Any) -> WindowVecs:
        """These rows with ``vec`` added last and the oldest dropped to match ``raw`` (the new encoded list: the
        old one's tail, then ``vec``'s); ``decode`` turns an encoded vector back into an array (a rebuild)."""
        drop = len(self.raw) + 1 - len(raw)
        dim = self.mat.shape[1]
        if drop < 0 or (vec is not None and len(vec) != dim):
            return WindowVecs.build(raw, [decode(r) for r in raw])
        row = np.full((1, dim), np.nan, dtype=np.float32) if vec is None else vec.reshape(1, dim)
        mat = np.concatenate([self.mat[drop:], row])
        mat.setflags(write=False)
        return WindowVecs(raw, mat)

    def cosines(self, vec: np.ndarray, n: int) -> np.ndarray | None:
        """``vec``'s dot with each of the last ``n`` rows (NaN: no vector there), as float64; each the value
        ``row.dot(vec)`` gives (a batch of vector products: a matrix-vector product rounds differently).
        None when the rows cannot say (another size or type, fewer rows than ``n``)."""
        mat = self.mat
        if vec.dtype != np.float32 or vec.ndim != 1 or len(vec) != mat.shape[1] or len(mat) < n or not n:
            return None
        return np.matmul(mat[len(mat) - n :, None, :], vec[:, None])[:, 0, 0].astype(np.float64)


def _entry(m: Any, codes: dict[str, int], before: list[Any], base: int) -> tuple:
    """One message's values (``before`` the window messages preceding it, the first at position ``base``)."""
    code = codes.setdefault
    parent_at = -1
    if m.parent == m.message_id:
        parent_at = base + len(before)
    elif m.parent is not None:
        at = next((k for k in range(len(before) - 1, -1, -1) if before[k].message_id == m.parent), None)
        parent_at = -1 if at is None else base + at
    ps = -1 if m.parent_sender is None else code(m.parent_sender, len(codes))
    return (
        code(m.sender, len(codes)),
        m.ts,
        [code(a, len(codes)) for a in m.addressees],
        [code(a, len(codes)) for a in m.mentions],
        parent_at,
        ps,
        m.parent is not None and m.parent != m.message_id,
        (m.question, not m.addressees, m.length, m.greeting, m.parent == m.message_id, m.thanks, m.command),
        m.message_id,
        m.keywords,
    )


def _append(a: np.ndarray, value: object) -> np.ndarray:
    """``a`` with ``value`` added last, in ``a``'s dtype (``np.append`` without its Python overhead)."""
    out = np.empty(len(a) + 1, dtype=a.dtype)
    out[:-1] = a
    out[-1] = value
    return out


def _padded(lists: tuple[list[int], ...]) -> np.ndarray:
    width = max([1, *(len(x) for x in lists)])
    out = np.full((len(lists), width), -1, dtype=np.intp)
    for i, x in enumerate(lists):
        out[i, : len(x)] = x
    return out


def _append_row(a: np.ndarray, codes: list[int]) -> np.ndarray:
    """``a`` (codes, -1 padded) with one more row, widened if ``codes`` is longer than its rows."""
    out = np.full((a.shape[0] + 1, max(a.shape[1], len(codes))), -1, dtype=np.intp)
    out[:-1, : a.shape[1]] = a
    out[-1, : len(codes)] = codes
    return out
