"""The segmenter's per-chat state: the active topics, who spoke where, the linker's window (plain pydantic,
so a runner checkpoints it with its consumer offset; ``step`` copies on write and never mutates a pool it
was given)."""

from __future__ import annotations

from datetime import datetime

import numpy as np
from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter

from agents.reply_linker import LinkMsg
from agents.segment_signals import Memo

__all__ = ["ActiveTopic", "ChatPool", "SenderSeen", "dump_pools", "load_pools"]

SEEN_MAX = 5000


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

    def primary_ids(self) -> list[str]:
        return [m for m in self.message_ids if m not in self.soft]

    def vectors(self) -> np.ndarray | None:
        """Unit centroid followed by the last-k vectors, as one matrix (cached until the topic changes)."""
        if self._matrix.value is None and self.centroid is not None:
            mat = np.asarray([self.centroid, *self.recent_vectors], dtype=np.float32)
            mat[0] /= max(float(np.linalg.norm(mat[0])), 1e-9)
            self._matrix = Memo(mat)  # replaced, never mutated: copies share it safely
        return self._matrix.value

    def changed(self) -> None:
        self._matrix = Memo()

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


class ChatPool(BaseModel):
    """All segmentation state of one chat."""

    chat_id: str
    topics: list[ActiveTopic] = Field(default_factory=list)
    msg_topic: dict[str, str] = Field(default_factory=dict)  # bounded: the last MSG_TOPIC_MAX messages
    seen: list[str] = Field(default_factory=list)  # bounded idempotency window
    senders: dict[str, SenderSeen] = Field(default_factory=dict)
    names: dict[str, str] = Field(default_factory=dict)  # lowercased nick / display name / id -> sender id
    recent_best: list[float] = Field(default_factory=list)
    window: list[LinkMsg] = Field(default_factory=list)  # the reply linker's recent messages (replaced, not mutated)
    window_vectors: list[str] = Field(default_factory=list)  # their vectors, base64 float16 ("" = none)
    gaps: list[float] = Field(default_factory=list)  # seconds between recent messages (the chat's pace)
    segmentation_version: int = 1
    last_at: datetime | None = None
    counters: dict[str, int] = Field(default_factory=dict)
    _seen_set: set[str] | None = PrivateAttr(default=None)

    def topic(self, topic_id: str) -> ActiveTopic | None:
        return next((t for t in self.topics if t.topic_id == topic_id), None)

    def has_seen(self, message_id: str) -> bool:
        if self._seen_set is None:
            self._seen_set = set(self.seen)
        return message_id in self._seen_set

    def mark_seen(self, message_id: str) -> None:
        self.has_seen(message_id)
        self.seen.append(message_id)
        self._seen_set.add(message_id)  # type: ignore[union-attr]
        if len(self.seen) > SEEN_MAX:
            self._seen_set.discard(self.seen.pop(0))  # type: ignore[union-attr]

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
                "recent_best": list(self.recent_best),
                "counters": dict(self.counters),
            }
        )
        new._seen_set = set(self._seen_set) if self._seen_set is not None else None
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
