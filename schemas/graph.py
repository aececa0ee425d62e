"""Graph memory data (Mem0g-style): typed entity nodes, time-bounded relation edges, what a store call returns.

Nodes and edges belong to exactly one chat; every store call names the chat and never crosses it. Nothing
is deleted by consolidation: a contradicted edge keeps its row with ``valid_to`` and ``invalidated_by``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

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
