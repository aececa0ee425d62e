"""The graph store Protocol (the graph memory's data models are :mod:`schemas.graph`).

Nodes and edges belong to exactly one chat; every store call names the chat and never crosses it. Nothing
is deleted by consolidation: a contradicted edge keeps its row with ``valid_to`` and ``invalidated_by``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from schemas.graph import (
    EdgeInvalidation,
    EntityNode,
    GraphApplyStats,
    Neighbour,
    RelationEdge,
    Subgraph,
)

__all__ = ["GraphStore"]


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
