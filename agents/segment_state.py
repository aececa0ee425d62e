"""The segmenter's per-chat state: the active topics, who spoke where, the linker's window (plain pydantic,
so a runner checkpoints it with its consumer offset; ``step`` copies on write and never mutates a pool it
was given)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import numpy as np
from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter

from agents.reply_linker import LinkMsg
from agents.reply_window import WindowCols, WindowVecs

__all__ = [
    "ActiveTopic", "ChatPool", "Memo", "PendingShift", "SenderSeen", "absorb", "dump_pools", "load_pools", "rounded",
    "rounded_array",
]  # fmt: skip

SEEN_MAX = 5000


class Memo:
    """A cache slot that compares equal to any other, so cached arrays never take part in model equality."""

    __slots__ = ("value",)

    def __init__(self, value: object = None) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Memo)

    __hash__ = None  # type: ignore[assignment]


class ActiveTopic(BaseModel):
    """One open topic. ``message_ids`` lists members in arrival order, soft members (``soft``) included."""

    topic_id: str
    message_ids: list[str] = Field(default_factory=list)
    soft: dict[str, float] = Field(default_factory=dict)
    participants: list[str] = Field(default_factory=list)
    started_at: datetime
    last_active_at: datetime
    last_ts: float  # last_active_at as epoch seconds (hot path)
    centroid: list[float] | None = None
    centroid_n: int = 0
    recent_vectors: list[list[float]] = Field(default_factory=list)
    keywords: dict[str, int] = Field(default_factory=dict)
    last_sender: str | None = None
    count: int = 0
    last_by_sender: dict[str, float] = Field(default_factory=dict)
    addressed: dict[str, float] = Field(default_factory=dict)  # sender id -> when someone here addressed them
    _matrix: Memo = PrivateAttr(default_factory=Memo)
    _centroid32: Memo = PrivateAttr(default_factory=Memo)  # (the centroid list, it as float32)

    def primary_ids(self) -> list[str]:
        return [m for m in self.message_ids if m not in self.soft]

    def vectors(self) -> np.ndarray | None:
        """Unit centroid followed by the last-k vectors, as one matrix (cached until the topic changes)."""
        memo = self.__pydantic_private__["_matrix"]  # hot path: pydantic's __getattr__ costs ~2 us a read
        if memo.value is None and self.centroid is not None:
            mat = _unit_first(np.asarray([self.centroid, *self.recent_vectors], dtype=np.float32))
            self._matrix = memo = Memo(mat)  # replaced, never mutated: copies share it safely
        return memo.value

    def centroid32(self) -> np.ndarray:
        """``np.asarray(centroid, dtype=np.float32)`` (read-only), kept while ``centroid`` is the same list
        (lists here are replaced, never changed in place): converting 384 floats each message was ~10 us."""
        memo = self.__pydantic_private__["_centroid32"].value
        if memo is None or memo[0] is not self.centroid:
            return self._keep_centroid32(np.asarray(self.centroid, dtype=np.float32))
        return memo[1]

    def _keep_centroid32(self, centroid32: np.ndarray) -> np.ndarray:
        """Keep ``centroid32`` (read-only from here) as :meth:`centroid32` of the current centroid list."""
        centroid32.setflags(write=False)
        self._centroid32 = Memo((self.centroid, centroid32))
        return centroid32

    def built_vectors(self) -> np.ndarray | None:
        """The matrix :meth:`vectors` has built since the topic last changed, else None (nothing is built)."""
        return self.__pydantic_private__["_matrix"].value

    def changed(
        self, before: np.ndarray | None = None, grown: bool = False, last: tuple[np.ndarray, np.ndarray] | None = None
    ) -> None:
        """Forget the matrix; or, given ``before`` (:meth:`built_vectors` before the change), keep it as it
        was (``grown`` False: no vector joined) or grow it by the vector that joined last (``grown``): the
        new unit centroid, the recent rows still kept, the new row. Row for row what :meth:`vectors` builds
        from the lists (each row converted alone), without converting every recent list again. ``last``:
        the centroid and the new recent vector as the float64 arrays their lists were made from (a double
        converts to float32 alike from either)."""
        if before is not None and grown:
            if last is not None:  # each float64 row converted as np.asarray converts the pair
                rows = np.empty((2, len(last[0])), dtype=np.float32)
                rows[0], rows[1] = last
                self._keep_centroid32(rows[0].copy())  # the centroid list was made from last[0]
            else:
                rows = np.asarray([self.centroid, self.recent_vectors[-1]], dtype=np.float32)
            rows = _unit_first(rows)
            kept = before[1:][len(before) - len(self.recent_vectors) :]  # the recent rows still in the window
            before = np.concatenate([rows[:1], kept, rows[1:]])
        self._matrix = Memo(before)

    def owned_copy(self) -> ActiveTopic:
        """A copy whose containers may be mutated without touching this topic."""
        return self.model_copy(
            update={
                "message_ids": list(self.message_ids),
                "soft": dict(self.soft),
                "participants": list(self.participants),
                "recent_vectors": list(self.recent_vectors),
                "keywords": dict(self.keywords),
                "last_by_sender": dict(self.last_by_sender),
                "addressed": dict(self.addressed),
            }
        )


class SenderSeen(BaseModel):
    """Where and when a sender last spoke (their latest message's topic)."""

    ts: float
    topic_id: str
    message_id: str


class PendingShift(BaseModel):
    """A two-person chat's latest turn opened a topic on the shift model's word; the next turn may withdraw
    that (agents/segment_revise.revise_p): the topic it opened, the one it left, its log-odds and features,
    and whether the turn before it closed an exchange."""

    topic_id: str
    left_id: str
    logit: float
    closing_before: bool = False
    features: list[float] = Field(default_factory=list)  # segment_shift.SHIFT_FEATURES order


class ChatPool(BaseModel):
    """All segmentation state of one chat."""

    chat_id: str
    topics: list[ActiveTopic] = Field(default_factory=list)
    msg_topic: dict[str, str] = Field(default_factory=dict)  # bounded: the last MSG_TOPIC_MAX messages
    seen: list[str] = Field(default_factory=list)  # bounded idempotency window
    senders: dict[str, SenderSeen] = Field(default_factory=dict)
    names: dict[str, str] = Field(default_factory=dict)  # lowercased nick / display name / id -> sender id
    window: list[LinkMsg] = Field(default_factory=list)  # the reply linker's recent messages (replaced, not mutated)
    window_vectors: list[str] = Field(default_factory=list)  # their vectors, base64 float16 ("" = none)
    gaps: list[float] = Field(default_factory=list)  # seconds between recent messages (the chat's pace)
    last_closing: bool = False  # the latest message closed an exchange (agents/segment_shift.closing_cue)
    private: bool = False  # a two-person chat (its latest message said so): topics close after a longer silence
    pending_shift: PendingShift | None = None  # the latest turn's shift, open to revision by the next turn
    segmentation_version: int = 1
    last_at: datetime | None = None
    counters: dict[str, int] = Field(default_factory=dict)
    _seen_set: set[str] | None = PrivateAttr(default=None)
    _cols: Memo = PrivateAttr(default_factory=Memo)  # the window's columns (WindowCols), kept step to step
    _vecs: Memo = PrivateAttr(default_factory=Memo)  # the window's vectors (WindowVecs), kept step to step

    def link_cols(self) -> WindowCols:
        """The linker window's columns: kept from the step that made the window, else built from it."""
        cols = self.__pydantic_private__["_cols"].value
        if cols is None or cols.window is not self.window:
            cols = WindowCols.build(self.window)
            self._cols = Memo(cols)
        return cols

    def link_vectors(self, decode: Callable[[str], np.ndarray | None]) -> WindowVecs:
        """The linker window's vectors as a matrix (``decode``: an encoded vector to its array): kept from the
        step that made the window, else built."""
        vecs = self.__pydantic_private__["_vecs"].value
        if vecs is None or vecs.raw is not self.window_vectors:
            vecs = WindowVecs.build(self.window_vectors, [decode(v) for v in self.window_vectors])
            self._vecs = Memo(vecs)
        return vecs

    def push_link(
        self, lm: LinkMsg, vector: str, keep: int, decode: Callable[[str], np.ndarray | None] | None = None
    ) -> None:
        """Append ``lm`` (its vector base64 float16, "" for none) to the linker's window, keeping the last
        ``keep``; the window's columns follow it, and its vector matrix when ``decode`` is given."""
        cols = self.link_cols()
        old, before = self.__pydantic_private__["_vecs"].value, self.window_vectors
        self.window = [*self.window, lm][-keep:]
        self.window_vectors = [*before, vector][-keep:]
        self._cols = Memo(cols.appended(lm, self.window))
        if decode is not None and old is not None and old.raw is before:
            self._vecs = Memo(old.appended(self.window_vectors, decode(vector), decode))

    def topic(self, topic_id: str) -> ActiveTopic | None:
        return next((t for t in self.topics if t.topic_id == topic_id), None)

    def has_seen(self, message_id: str) -> bool:
        return message_id in self._seen()

    def mark_seen(self, message_id: str) -> None:
        seen = self._seen()
        self.seen.append(message_id)
        seen.add(message_id)
        if len(self.seen) > SEEN_MAX:
            seen.discard(self.seen.pop(0))

    def _seen(self) -> set[str]:
        """``seen`` as a set, built on first use (read past pydantic's __getattr__: ~2 us a read)."""
        private = self.__pydantic_private__
        if private["_seen_set"] is None:
            self._seen_set = set(self.seen)
        return private["_seen_set"]

    def bump(self, counter: str, n: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + n

    def fork(self) -> ChatPool:
        """A copy sharing only immutable parts (topics are copied on write by :meth:`own`): ``step`` never
        mutates the pool it was given, so a failed step leaves the caller's state intact."""
        new = self.model_copy(
            update={
                "topics": list(self.topics),
                "msg_topic": dict(self.msg_topic),
                "seen": list(self.seen),
                "senders": dict(self.senders),
                "names": dict(self.names),
                "counters": dict(self.counters),
            }
        )
        # the seen set is a cache of ``seen``: handed to the copy (which extends it) rather than copied (up to
        # SEEN_MAX ids a step); this pool rebuilds its own from its list if it is read again
        new._seen_set = self.__pydantic_private__["_seen_set"]
        self._seen_set = None
        return new

    def own(self, topic: ActiveTopic) -> ActiveTopic:
        """Replace ``topic`` in this pool by a private copy and return the copy."""
        mine = topic.owned_copy()
        self.topics = [mine if t is topic else t for t in self.topics]
        return mine


_POOLS = TypeAdapter(dict[str, ChatPool])


def dump_pools(pools: dict[str, ChatPool]) -> str:
    return _POOLS.dump_json(pools).decode()


def load_pools(raw: str) -> dict[str, ChatPool]:
    return _POOLS.validate_json(raw)


def _unit_first(mat: np.ndarray) -> np.ndarray:
    """``mat`` with its first row (the centroid) scaled to unit length, in place."""
    mat[0] /= max(float(np.linalg.norm(mat[0])), 1e-9)
    return mat


def rounded(vec: np.ndarray) -> list[float]:
    return rounded_array(vec).tolist()  # compact JSON checkpoints


def rounded_array(vec: np.ndarray) -> np.ndarray:
    """``vec`` as float64 rounded to 5 decimals (what :func:`rounded` lists)."""
    return np.asarray(vec, dtype=np.float64).round(5)  # np.round without its Python wrapper


def absorb(keep: ActiveTopic, gone: ActiveTopic, arrival: list[str]) -> None:
    """Merge ``gone`` into ``keep`` (in place): members in arrival order, people, vectors, keywords, times."""
    keep.changed()
    order = {m: i for i, m in enumerate(arrival)}  # ids older than the seen window sort first, stably
    keep.message_ids = sorted(
        dict.fromkeys(keep.message_ids + gone.message_ids), key=lambda m: order.get(m, -1)
    )
    primary = set(keep.primary_ids()) | set(gone.primary_ids())
    keep.soft = {m: w for m, w in {**gone.soft, **keep.soft}.items() if m not in primary}
    keep.participants += [p for p in gone.participants if p not in keep.participants]
    if gone.centroid is not None and keep.centroid is not None:
        n, k = keep.centroid_n, gone.centroid_n
        mix = (np.asarray(keep.centroid) * n + np.asarray(gone.centroid) * k) / (n + k)
        keep.centroid, keep.centroid_n = rounded(mix), n + k
    k = max(len(keep.recent_vectors), len(gone.recent_vectors))
    keep.recent_vectors = (gone.recent_vectors + keep.recent_vectors)[-k:] if k else []
    for w, c in gone.keywords.items():
        keep.keywords[w] = keep.keywords.get(w, 0) + c
    for s, ts in gone.last_by_sender.items():
        keep.last_by_sender[s] = max(ts, keep.last_by_sender.get(s, ts))
    for s, ts in gone.addressed.items():
        keep.addressed[s] = max(ts, keep.addressed.get(s, ts))
    keep.count += gone.count
    if gone.last_ts > keep.last_ts:
        keep.last_ts, keep.last_active_at = gone.last_ts, gone.last_active_at
        keep.last_sender = gone.last_sender
    keep.started_at = min(keep.started_at, gone.started_at)
