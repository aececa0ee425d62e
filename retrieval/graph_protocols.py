"""Graph memory contracts (Mem0g-style): typed entity nodes, time-bounded relation edges, the store Protocol.

Nodes and edges belong to exactly one chat; every store call names the chat and never crosses it. Nothing
is deleted by consolidation: a contradicted edge keeps its row with ``valid_to`` and ``invalidated_by``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

EntityType = Literal["person", "place", "organisation", "object", "event", "concept"]
ENTITY_TYPES: tuple[EntityType, ...] = ("person", "place", "organisation", "object", "event", "concept")

EXCLUSIVE_PREDICATES = frozenset(
    "lives_in works_at job school hometown age birthday relationship_status phone email name".split()
)
"""Single-valued predicates: a new object replaces the old one (``lives_in`` Beijing -> Hangzhou). So are
``pet_name:<animal>`` and ``favorite_<thing>``; every other predicate (``likes``, ``visited``…) is multi-valued."""
_EXCLUSIVE_PREFIXES = ("pet_name:", "favorite_")


def is_exclusive(predicate: str) -> bool:
    return predicate in EXCLUSIVE_PREDICATES or predicate.startswith(_EXCLUSIVE_PREFIXES)


class EntityNode(BaseModel):
    """One entity of a chat. ``key`` is the normalised name; ``aliases`` are every normalised key merged in."""

    model_config = ConfigDict(frozen=True)

    entity_id: str
    chat_id: str
    name: str
    key: str
    type: EntityType = "concept"
    subtype: str | None = None  # "animal", "cat", "city", "school", "occupation"…
    aliases: list[str] = Field(default_factory=list)
    sender: str | None = None  # for a participant's person node: the sender id (deletion by user)
    first_seen: datetime


class RelationEdge(BaseModel):
    """A directed relation triple ``subject —predicate→ object`` valid from ``valid_from`` until ``valid_to``."""

    model_config = ConfigDict(frozen=True)

    edge_id: str
    chat_id: str
    subject_id: str
    predicate: str
    object_id: str
    subject_name: str
    object_name: str
    text: str  # the triple as a sentence, embedded for triple-semantic search
    fact: str | None = None  # the standalone fact it was derived from (evidence for the reader)
    valid_from: datetime
    valid_to: datetime | None = None
    invalidated_by: str | None = None
    speaker: str | None = None
    sender: str | None = None
    source_message_ids: list[str] = Field(min_length=1)
    source_event_id: str

    @property
    def live(self) -> bool:
        return self.valid_to is None


class EdgeInvalidation(BaseModel):
    """Close a live edge at ``at`` (a contradiction or a retraction); an already closed edge is left as is."""

    model_config = ConfigDict(frozen=True)

    edge_id: str
    at: datetime
    by_edge_id: str | None = None
    reason: str = ""


class Subgraph(BaseModel):
    model_config = ConfigDict(frozen=True)

    nodes: list[EntityNode] = Field(default_factory=list)
    edges: list[RelationEdge] = Field(default_factory=list)


class Neighbour(BaseModel):
    """One hop from an entity: the edge and the node at its other end (``direction`` seen from the entity)."""

    model_config = ConfigDict(frozen=True)

    edge: RelationEdge
    node: EntityNode
    direction: Literal["out", "in"]


class GraphApplyStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    nodes_added: int = 0
    nodes_updated: int = 0
    edges_added: int = 0
    edges_invalidated: int = 0


@runtime_checkable
class GraphStore(Protocol):
    """Entity/relation graph of each chat (SQLite embedded). Idempotent: ids derive from event ids."""

    async def bootstrap(self) -> None: ...

    async def close(self) -> None: ...

    async def apply(
        self,
        chat_id: str,
        nodes: Sequence[EntityNode],
        edges: Sequence[RelationEdge],
        invalidations: Sequence[EdgeInvalidation],
        *,
        node_vectors: Mapping[str, np.ndarray] | None = None,
        edge_vectors: Mapping[str, np.ndarray] | None = None,
    ) -> GraphApplyStats: ...

    async def entities(self, chat_id: str, keys: Sequence[str] | None = None) -> list[EntityNode]: ...

    async def similar_entities(
        self, chat_id: str, vectors: np.ndarray, *, k: int = 3
    ) -> list[list[tuple[EntityNode, float]]]: ...

    async def entities_for_query(
        self, chat_id: str, query_text: str, query_vector: np.ndarray | None, *, k: int = 5
    ) -> list[tuple[EntityNode, float]]: ...

    async def subgraph(
        self, chat_id: str, entity_ids: Sequence[str], *, hops: int = 1, include_invalid: bool = False
    ) -> Subgraph: ...

    async def search_triples(
        self,
        chat_id: str,
        query_vector: np.ndarray,
        *,
        k: int = 10,
        min_score: float = 0.3,
        include_invalid: bool = False,
    ) -> list[tuple[RelationEdge, float]]: ...

    async def neighbours(
        self, chat_id: str, entity_id: str, *, include_invalid: bool = False
    ) -> list[Neighbour]: ...

    async def edges(self, chat_id: str, *, include_invalid: bool = False) -> list[RelationEdge]: ...

    async def edges_for_messages(
        self, chat_id: str, message_ids: Sequence[str], *, include_invalid: bool = True
    ) -> list[RelationEdge]: ...

    async def chats(self) -> list[str]: ...

    async def delete_chat(self, chat_id: str) -> int: ...

    async def delete_user(self, chat_id: str | None, sender: str, names: Sequence[str] = ()) -> int: ...
