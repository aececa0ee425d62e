"""Retrieval request/response contracts of the HTTP endpoint and the CLI."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from schemas.base import Contract

ItemKind = Literal["turn", "fact", "summary", "qa", "task", "decision", "title"]


class RetrieveRequest(Contract):
    chat_id: str = Field(min_length=1)
    query: str = Field(min_length=1, max_length=4000)
    k: int = Field(default=10, ge=1, le=100)
    mode: Literal["hybrid", "bm25", "embedding"] = "hybrid"
    kinds: list[ItemKind] | None = None
    token_budget: int = Field(default=1500, ge=50, le=32000)
    include_superseded: bool = False


class RetrievedItem(Contract):
    item_id: str
    kind: ItemKind
    text: str
    speaker: str | None = None
    timestamp: datetime
    score: float
    source_message_ids: list[str]
    topic_id: str | None = None
    valid_to: datetime | None = None
    scores: dict[str, float] = Field(default_factory=dict)


class TraceStep(Contract):
    step: str
    detail: dict[str, Any] = Field(default_factory=dict)
    ms: float = 0.0


class RetrieveResponse(Contract):
    chat_id: str
    query: str
    items: list[RetrievedItem]
    context: str
    context_tokens: int
    no_relevant_memory: bool
    strategy: str
    trace: list[TraceStep] = Field(default_factory=list)
