"""Typed backend interfaces. Each has a real in-process implementation (the embedded default)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from schemas import ChatMessage, DecisionOp, MemoryDecision, MemoryRecord, TopicSummary

DocKind = Literal["turn", "fact", "summary", "qa", "task", "decision", "title", "profile"]


@runtime_checkable
class Embedder(Protocol):
    """Text -> L2-normalised float32 vectors. Implementations cache by text hash."""

    name: str
    dim: int

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray: ...


class Doc(BaseModel):
    """One searchable document: a raw turn or one version of a memory record."""

    model_config = ConfigDict(frozen=True)

    doc_id: str
    chat_id: str
    kind: DocKind
    text: str
    speaker: str | None = None
    ts: datetime
    valid_to: datetime | None = None
    topic_id: str | None = None
    source_message_ids: list[str]
    entities: list[str] = Field(default_factory=list)


class SearchQuery(BaseModel):
    """A store-level query. ``chat_id`` is mandatory: no store search runs across chats."""

    model_config = ConfigDict(frozen=True)

    chat_id: str
    text: str
    vector: list[float] | None = None
    mode: Literal["bm25", "knn", "hybrid"] = "hybrid"
    k: int = 10
    kinds: list[DocKind] | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False
    rrf_k: int = 10
    candidates: int = 20


class MemoryFilter(BaseModel):
    """A filter-only lookup of memory records within one chat (no ranking).

    ``attribute``: records filling that slot; ``message_ids``: records derived from any of those messages;
    ``state``: ``live`` (valid now), ``invalidated`` (superseded or deleted versions) or ``all``.
    """

    model_config = ConfigDict(frozen=True)

    kinds: list[DocKind] | None = None
    attribute: str | None = None
    message_ids: list[str] | None = None
    state: Literal["live", "invalidated", "all"] = "live"
    limit: int = Field(default=1000, ge=1, le=100_000)


class Hit(BaseModel):
    model_config = ConfigDict(frozen=True)

    doc: Doc
    score: float
    scores: dict[str, float] = Field(default_factory=dict)


@runtime_checkable
class MemoryStore(Protocol):
    """The hybrid index of turns and memory records (SQLite embedded; Elasticsearch in production)."""

    async def bootstrap(self) -> None: ...

    async def close(self) -> None: ...

    async def upsert_messages(self, messages: list[ChatMessage], vectors: np.ndarray | None) -> int: ...

    async def replace_message(self, message: ChatMessage, vector: np.ndarray | None) -> bool: ...

    async def get_messages(self, chat_id: str, message_ids: list[str]) -> list[ChatMessage]: ...

    async def get_messages_in(self, keys: Sequence[tuple[str, str]]) -> list[ChatMessage]:
        """The stored messages among ``(chat_id, message_id)`` keys of any chats, in the order asked (unknown
        keys skipped): one read for a batch of many chats."""
        ...

    async def list_messages(
        self, chat_id: str, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[ChatMessage]: ...

    async def apply_decision(self, decision: MemoryDecision, vector: np.ndarray | None) -> bool: ...

    async def apply_decisions(self, decisions: list[MemoryDecision], vectors: list[np.ndarray | None]) -> int:
        """``apply_decision`` for each in order, as one write where the backend can; returns how many changed
        the store. An invalid decision raises after the ones before it are applied."""
        ...

    async def get_memory(self, chat_id: str, memory_id: str) -> MemoryRecord | None: ...

    async def list_memories(self, chat_id: str, *, live_only: bool = True) -> list[MemoryRecord]: ...

    async def similar_memories(
        self, chat_id: str, vector: np.ndarray, *, k: int = 10, subject: str | None = None
    ) -> list[tuple[MemoryRecord, float]]: ...

    async def similar_memories_many(
        self, chat_id: str, vectors: np.ndarray, *, k: int = 10
    ) -> list[list[tuple[MemoryRecord, float]]]:
        """``similar_memories`` for each row of ``vectors``, in one read where the backend can."""
        ...

    async def find_memories(self, chat_id: str, query: MemoryFilter) -> list[MemoryRecord]: ...

    async def turn_vectors(self, chat_id: str, message_ids: list[str]) -> dict[str, np.ndarray]: ...

    async def turn_vectors_in(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], np.ndarray]:
        """``turn_vectors`` for ``(chat_id, message_id)`` keys of any chats, in one read (a batch's)."""
        ...

    async def search(self, query: SearchQuery) -> list[Hit]: ...

    async def upsert_topic(self, topic: TopicSummary) -> None: ...

    async def upsert_topics(self, topics: Sequence[TopicSummary]) -> None:
        """Several topics' states in one write (a segmenter batch's), in order."""
        ...

    async def list_topics(self, chat_id: str) -> list[TopicSummary]: ...

    async def chats(self) -> list[str]: ...

    async def delete_chat(self, chat_id: str) -> int: ...

    async def delete_user(self, chat_id: str | None, sender: str) -> int: ...


def check_decision(decision: MemoryDecision) -> None:
    """What every store refuses to apply (``ValueError``): an ADD or UPDATE without its record, a record of
    another chat than the decision's."""
    record = decision.record
    if decision.op in (DecisionOp.ADD, DecisionOp.UPDATE) and record is None:
        raise ValueError(f"{decision.op} decision {decision.decision_id} carries no record")
    if record is not None and record.chat_id != decision.chat_id:
        raise ValueError(f"decision {decision.decision_id}: record belongs to another chat")
