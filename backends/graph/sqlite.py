"""The embedded ``GraphStore``: entity nodes and relation edges in SQLite, cosine kNN in numpy.

One SQLite file (its own, next to the memory store). Every row carries ``chat_id`` and every statement is
filtered by it; kNN only ever sees the vectors of the queried chat. Writes are idempotent: node and edge ids
derive from event ids, an edge is inserted once, a closed edge is never reopened or closed again. Entity-name
and triple-text vectors are stored as L2-normalised float32 blobs.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from backends.graph import delete as graph_delete
from backends.graph.writes import SCHEMA, close_edge, insert_edge, upsert_node
from backends.sqlite.util import chunks as _chunks
from backends.sqlite.util import marks as _marks
from backends.sqlite.util import open_sqlite
from language.text import has_cjk, text_cache
from schemas.graph import (
    EdgeInvalidation,
    EntityNode,
    GraphApplyStats,
    Neighbour,
    RelationEdge,
    Subgraph,
)

_MIN_ENTITY_COSINE = 0.45  # a query sentence against an entity name: below this it is not about it


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("\u2019", "'").casefold()


def _mentions(query: str, key: str) -> bool:
    """Whether the folded query names ``key``: a substring for CJK, a whole-word match otherwise."""
    if has_cjk(key):
        return len(key) >= 2 and key in query
    return len(key) >= 3 and re.search(rf"(?<!\w){re.escape(key)}(?!\w)", query) is not None


@dataclass
class _Matrix:
    """One chat's vectors of one table (entity names or triple texts), with a live mask for edges."""

    ids: list[str]
    matrix: np.ndarray
    live: np.ndarray

    def top(self, query: np.ndarray, n: int, min_score: float, live_only: bool) -> list[tuple[str, float]]:
        if n <= 0 or not self.ids:
            return []
        sims = np.einsum("ij,j->i", self.matrix, query)
        if live_only:
            sims = np.where(self.live, sims, -np.inf)
        order = np.lexsort((np.arange(sims.size), -sims))[:n]
        return [(self.ids[i], float(sims[i])) for i in order if sims[i] >= min_score]


class GraphSQLiteStore:
    """``GraphStore`` over one SQLite file (or ``":memory:"``). Call :meth:`bootstrap` before use."""

    def __init__(self, path: str | Path, dim: int | None = None) -> None:
        self.path = str(path)
        self.dim = dim
        self._conn: sqlite3.Connection | None = None
        self._cache: dict[tuple[str, str], _Matrix] = {}
        self._data_version = -1

    # ---- lifecycle -------------------------------------------------------------------------------

    async def bootstrap(self) -> None:
        if self._conn is not None:
            return
        conn, recorded = open_sqlite(self.path, SCHEMA, self.dim, "graph store")
        if recorded is not None:
            self.dim = recorded
        self._conn = conn

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._cache.clear()

    @property
    def db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("GraphSQLiteStore used before bootstrap() (or after close())")
        return self._conn

    @contextmanager
    def transaction(self, chat_id: str | None) -> Iterator[sqlite3.Connection]:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        for key in [k for k in self._cache if chat_id is None or k[0] == chat_id]:
            del self._cache[key]

    # ---- vectors ---------------------------------------------------------------------------------

    def _unit(self, vector: np.ndarray) -> np.ndarray:
        v = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self.dim is None:
            self.dim = int(v.size)
            self.db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('dim', ?)", (str(self.dim),))
        if v.size != self.dim:
            raise ValueError(f"vector is {v.size}-d, graph store is {self.dim}-d")
        norm = float(np.linalg.norm(v))
        return v / norm if norm else v

    def _blob(self, vectors: Mapping[str, np.ndarray] | None, item_id: str) -> bytes | None:
        if vectors is None or item_id not in vectors:
            return None
        return self._unit(vectors[item_id]).tobytes()

    def _matrix(self, chat_id: str, table: str) -> _Matrix | None:
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:  # another connection committed: cached matrices may be stale
            self._cache.clear()
            self._data_version = version
        if self.dim is None:
            return None
        cached = self._cache.get((chat_id, table))
        if cached is None:
            id_col, live = ("entity_id", "1") if table == "entities" else ("edge_id", "valid_to IS NULL")
            rows = self.db.execute(
                f"SELECT {id_col}, {live}, vec FROM {table} WHERE chat_id = ? AND vec IS NOT NULL ORDER BY rowid",
                (chat_id,),
            ).fetchall()
            rows = [r for r in rows if len(r[2]) == 4 * self.dim]
            matrix = (
                np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows])
                if rows
                else np.zeros((0, self.dim), np.float32)
            )
            cached = _Matrix([r[0] for r in rows], matrix, np.array([bool(r[1]) for r in rows], dtype=bool))
            self._cache[(chat_id, table)] = cached
        return cached

    # ---- writes ----------------------------------------------------------------------------------

    async def apply(
        self,
        chat_id: str,
        nodes: Sequence[EntityNode],
        edges: Sequence[RelationEdge],
        invalidations: Sequence[EdgeInvalidation],
        *,
        node_vectors: Mapping[str, np.ndarray] | None = None,
        edge_vectors: Mapping[str, np.ndarray] | None = None,
    ) -> GraphApplyStats:
        """Upsert nodes (aliases merged, a ``concept`` upgraded to a sharper type), insert new edges, close
        invalidated live edges — one transaction. Re-applying the same update changes nothing."""
        if any(n.chat_id != chat_id for n in nodes) or any(e.chat_id != chat_id for e in edges):
            raise ValueError(f"graph update for chat {chat_id!r} carries rows of another chat")
        added = updated = edges_added = closed = 0
        with self.transaction(chat_id) as db:
            for node in nodes:
                status = upsert_node(db, node, self._blob(node_vectors, node.entity_id))
                added += status == "added"
                updated += status == "updated"
            for edge in edges:
                edges_added += insert_edge(db, edge, self._blob(edge_vectors, edge.edge_id))
            for inv in invalidations:
                closed += close_edge(db, chat_id, inv)
        return GraphApplyStats(
            nodes_added=added, nodes_updated=updated, edges_added=edges_added, edges_invalidated=closed
        )

    # ---- reads -----------------------------------------------------------------------------------

    def _nodes(self, chat_id: str, ids: Sequence[str]) -> dict[str, EntityNode]:
        out: dict[str, EntityNode] = {}
        for chunk in _chunks(list(dict.fromkeys(ids))):
            rows = self.db.execute(
                f"SELECT entity_id, payload FROM entities WHERE chat_id = ? AND entity_id IN ({_marks(chunk)})",
                (chat_id, *chunk),
            ).fetchall()
            out.update((i, _node(p)) for i, p in rows)
        return out

    def _edges_where(
        self, chat_id: str, where: str, args: Sequence[Any], include_invalid: bool
    ) -> list[RelationEdge]:
        live = "" if include_invalid else " AND valid_to IS NULL"
        rows = self.db.execute(
            f"SELECT payload FROM edges WHERE chat_id = ? AND ({where}){live} ORDER BY valid_from, rowid",
            (chat_id, *args),
        ).fetchall()
        return [_edge(r[0]) for r in rows]

    def _touching(self, chat_id: str, ids: Sequence[str], include_invalid: bool) -> list[RelationEdge]:
        found: dict[str, RelationEdge] = {}
        for chunk in _chunks(list(ids)):
            where = f"subject_id IN ({_marks(chunk)}) OR object_id IN ({_marks(chunk)})"
            for e in self._edges_where(chat_id, where, [*chunk, *chunk], include_invalid):
                found[e.edge_id] = e
        return sorted(found.values(), key=lambda e: e.valid_from)

    async def entities(self, chat_id: str, keys: Sequence[str] | None = None) -> list[EntityNode]:
        """The chat's entities (first seen first), or those any of ``keys`` (normalised names) resolves to."""
        if keys is None:
            rows = self.db.execute(
                "SELECT payload FROM entities WHERE chat_id = ? ORDER BY rowid", (chat_id,)
            )
            return [EntityNode.model_validate_json(r[0]) for r in rows.fetchall()]
        ids: list[str] = []
        for chunk in _chunks(list(dict.fromkeys(keys))):
            ids += [r[0] for r in self.db.execute(
                f"SELECT entity_id FROM entity_keys WHERE chat_id = ? AND key IN ({_marks(chunk)})", (chat_id, *chunk)
            ).fetchall()]  # fmt: skip
        nodes = self._nodes(chat_id, ids)
        return [nodes[i] for i in dict.fromkeys(ids) if i in nodes]

    async def similar_entities(
        self, chat_id: str, vectors: np.ndarray, *, k: int = 3
    ) -> list[list[tuple[EntityNode, float]]]:
        """For each row of ``vectors``: the chat's ``k`` entities with the most similar name vectors."""
        m = self._matrix(chat_id, "entities")
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1) if len(vectors) else []
        if m is None or not m.ids:
            return [[] for _ in range(len(rows))]
        tops = [m.top(self._unit(v), k, -1.0, live_only=False) for v in rows]
        nodes = self._nodes(chat_id, [i for top in tops for i, _ in top])
        return [[(nodes[i], s) for i, s in top if i in nodes] for top in tops]

    async def entities_for_query(
        self,
        chat_id: str,
        query_text: str,
        query_vector: np.ndarray | None,
        *,
        k: int = 5,
        min_score: float = _MIN_ENTITY_COSINE,
    ) -> list[tuple[EntityNode, float]]:
        """Entities the query is about: names (or aliases) it contains (score ≥ 1), then entities whose name
        vector is close to the query vector (cosine ≥ ``min_score``). Best first."""
        folded = _fold(query_text)
        scores: dict[str, float] = {}
        for key, entity_id in self.db.execute(
            "SELECT key, entity_id FROM entity_keys WHERE chat_id = ?", (chat_id,)
        ).fetchall():
            if _mentions(folded, key):
                scores[entity_id] = max(scores.get(entity_id, 0.0), 1.0 + min(len(key), 30) / 100)
        m = self._matrix(chat_id, "entities") if query_vector is not None else None
        if m is not None and m.ids:
            for entity_id, s in m.top(self._unit(query_vector), k, min_score, live_only=False):
                scores[entity_id] = max(scores.get(entity_id, 0.0), s)
        best = sorted(scores.items(), key=lambda kv: -kv[1])[:k]
        nodes = self._nodes(chat_id, [i for i, _ in best])
        return [(nodes[i], s) for i, s in best if i in nodes]

    async def subgraph(
        self, chat_id: str, entity_ids: Sequence[str], *, hops: int = 1, include_invalid: bool = False
    ) -> Subgraph:
        """The entities within ``hops`` edges of ``entity_ids`` and the edges walked (hops=0: edges among them)."""
        seen = list(dict.fromkeys(entity_ids))
        edges: dict[str, RelationEdge] = {}
        frontier = seen
        for _ in range(max(hops, 0)):
            new: list[str] = []
            for e in self._touching(chat_id, frontier, include_invalid):
                edges.setdefault(e.edge_id, e)
                new += [x for x in (e.subject_id, e.object_id) if x not in seen and x not in new]
            seen += new
            frontier = new
            if not frontier:
                break
        if hops <= 0:
            inside = set(seen)
            for e in self._touching(chat_id, seen, include_invalid):
                if e.subject_id in inside and e.object_id in inside:
                    edges.setdefault(e.edge_id, e)
        nodes = self._nodes(chat_id, seen)
        return Subgraph(
            nodes=[nodes[i] for i in seen if i in nodes],
            edges=sorted(edges.values(), key=lambda e: e.valid_from),
        )

    async def search_triples(
        self,
        chat_id: str,
        query_vector: np.ndarray,
        *,
        k: int = 10,
        min_score: float = 0.3,
        include_invalid: bool = False,
    ) -> list[tuple[RelationEdge, float]]:
        """Edges whose triple text is closest to the query vector (cosine ≥ ``min_score``), best first."""
        m = self._matrix(chat_id, "edges")
        if m is None or not m.ids:
            return []
        top = m.top(self._unit(query_vector), k, min_score, live_only=not include_invalid)
        by_id = {
            e.edge_id: e
            for chunk in _chunks([i for i, _ in top])
            for e in self._edges_where(chat_id, f"edge_id IN ({_marks(chunk)})", chunk, include_invalid)
        }
        return [(by_id[i], s) for i, s in top if i in by_id]

    async def neighbours(
        self, chat_id: str, entity_id: str, *, include_invalid: bool = False
    ) -> list[Neighbour]:
        """One hop from ``entity_id``: each edge touching it with the entity at its other end."""
        edges = self._touching(chat_id, [entity_id], include_invalid)
        others = [e.object_id if e.subject_id == entity_id else e.subject_id for e in edges]
        nodes = self._nodes(chat_id, others)
        return [
            Neighbour(edge=e, node=nodes[o], direction="out" if e.subject_id == entity_id else "in")
            for e, o in zip(edges, others, strict=True)
            if o in nodes
        ]

    async def edges(self, chat_id: str, *, include_invalid: bool = False) -> list[RelationEdge]:
        return self._edges_where(chat_id, "1", (), include_invalid)

    async def edges_for_messages(
        self, chat_id: str, message_ids: Sequence[str], *, include_invalid: bool = True
    ) -> list[RelationEdge]:
        """Edges derived from any of ``message_ids`` (what a retrieved item's sources say in the graph)."""
        found: dict[str, RelationEdge] = {}
        for chunk in _chunks(list(dict.fromkeys(message_ids))):
            where = f"edge_id IN (SELECT edge_id FROM edge_sources WHERE chat_id = ? AND message_id IN ({_marks(chunk)}))"
            for e in self._edges_where(chat_id, where, [chat_id, *chunk], include_invalid):
                found[e.edge_id] = e
        return sorted(found.values(), key=lambda e: e.valid_from)

    async def chats(self) -> list[str]:
        rows = self.db.execute("SELECT chat_id FROM entities UNION SELECT chat_id FROM edges").fetchall()
        return sorted(r[0] for r in rows)

    # ---- deletion (backends.graph.delete) -------------------------------------------------------------

    async def delete_chat(self, chat_id: str) -> int:
        """Remove every node and edge of a chat; returns how many nodes and edges were removed."""
        return graph_delete.forget_chat(self, chat_id).removed

    async def delete_user(self, chat_id: str | None, sender: str, names: Sequence[str] = ()) -> int:
        """Remove what a sender said and who they are (see :mod:`backends.graph.delete`); ``chat_id`` None
        means every chat. Returns how many nodes and edges were removed."""
        chats = [chat_id] if chat_id is not None else await self.chats()
        return sum(graph_delete.forget_user(self, chat, sender, names).removed for chat in chats)

    async def forget_user(
        self, chat_id: str, sender: str, names: Sequence[str] = (), message_ids: Sequence[str] = ()
    ) -> graph_delete.GraphForgotten:
        """:meth:`delete_user` in one chat, also dropping ``message_ids`` from every edge's evidence (an
        edge they were the only evidence of goes); reports the removed texts."""
        return graph_delete.forget_user(self, chat_id, sender, names, message_ids)

    async def forget_chat(self, chat_id: str) -> graph_delete.GraphForgotten:
        return graph_delete.forget_chat(self, chat_id)


@text_cache(1 << 13)
def _node(payload: str) -> EntityNode:
    """A stored node, parsed once per distinct payload (frozen; the related layer reads the same ones often)."""
    return EntityNode.model_validate_json(payload)


@text_cache(1 << 13)
def _edge(payload: str) -> RelationEdge:
    """A stored edge, parsed once per distinct payload (frozen)."""
    return RelationEdge.model_validate_json(payload)
