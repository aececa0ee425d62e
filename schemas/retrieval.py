"""Retrieval request/response contracts of the HTTP endpoint and the CLI."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from schemas.base import AwareDatetime, CleanText, Contract, Id

ItemKind = Literal["turn", "fact", "summary", "qa", "task", "decision", "title", "profile"]


class RetrieveRequest(Contract):
    """A query of one chat. Strict: ``k`` must be a JSON integer (``"5"`` is refused, not coerced), ``now``
    must carry a zone, the query must not be blank."""

    chat_id: Id
    query: Annotated[CleanText, Field(min_length=1, max_length=4000, pattern=r"\S")]
    k: int = Field(default=10, ge=1, le=100, strict=True)
    # ``routed``: classify the query and run its strategy (see retrieval/router); the others are uniform
    mode: Literal["hybrid", "bm25", "embedding", "routed"] = "hybrid"
    kinds: list[ItemKind] | None = None
    token_budget: int = Field(default=1500, ge=50, le=32000, strict=True)
    include_superseded: bool = False
    # reference time for relative expressions ("last month"); default: the server's clock
    now: AwareDatetime | None = None
    # bot context (``/v1/context``): the message that triggered the bot and who sent it
    trigger_message_id: Id | None = None
    asker: Id | None = None


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
    # routed retrieval: which context layer the item belongs to, and what the strategy noted about it
    layer: str | None = None
    note: str | None = None


class TraceStep(Contract):
    step: str
    detail: dict[str, Any] = Field(default_factory=dict)
    ms: float = 0.0


class ContextLayer(Contract):
    """One part of a rendered context, in the order the context shows them."""

    name: str  # reply_chain | active_topic | asker_recent | direct | derived | related
    description: str
    item_ids: list[str] = Field(default_factory=list)
    text: str = ""
    tokens: int = 0


class RetrieveResponse(Contract):
    chat_id: str
    query: str
    items: list[RetrievedItem]
    context: str
    context_tokens: int
    no_relevant_memory: bool
    strategy: str
    trace: list[TraceStep] = Field(default_factory=list)
    # routed retrieval only
    query_type: str | None = None
    strategy_probs: dict[str, float] = Field(default_factory=dict)
    abstention_reason: str | None = None
    layers: list[ContextLayer] = Field(default_factory=list)
