"""Deletion in the embedded graph store (:class:`backends.graph.sqlite._Store`).

A user's deletion removes who they are and what they said: edges they stated (by sender id or display
name), their person node with every edge touching it, edges whose only evidence is their messages, their
message ids from the evidence of edges others also support, then nodes left without edges. Afterwards the
file's freed pages are zeroed and its WAL truncated (:mod:`backends.sqlite.scrub`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from backends.sqlite.scrub import erase_freed
from backends.sqlite.util import chunks
from backends.sqlite.util import marks as _marks
from schemas.graph import EntityNode, RelationEdge

__all__ = ["GraphForgotten", "forget_chat", "forget_user"]


class _Store(Protocol):
    """What the deletion needs of :class:`backends.graph.sqlite.GraphSQLiteStore` (typed, not imported)."""

    @property
    def db(self) -> sqlite3.Connection: ...

    def transaction(self, chat_id: str | None) -> AbstractContextManager[sqlite3.Connection]: ...


_CHUNK = 400


@dataclass
class GraphForgotten:
    """How many nodes and edges went, and their texts (names, triples, facts: embedding-cache keys)."""

    removed: int = 0
    evidence_trimmed: int = 0
    texts: list[str] = field(default_factory=list)


def forget_chat(store: _Store, chat_id: str) -> GraphForgotten:
    out = GraphForgotten()
    with store.transaction(chat_id) as db:
        out.texts = _texts(db, chat_id, "entities", "1", ()) + _texts(db, chat_id, "edges", "1", ())
        out.removed = sum(
            db.execute(f"DELETE FROM {t} WHERE chat_id = ?", (chat_id,)).rowcount
            for t in ("entities", "edges")
        )
        db.execute("DELETE FROM entity_keys WHERE chat_id = ?", (chat_id,))
        db.execute("DELETE FROM edge_sources WHERE chat_id = ?", (chat_id,))
    erase_freed(store.db, "meta")
    return out


def forget_user(
    store: _Store, chat_id: str, sender: str, names: Collection[str] = (), message_ids: Collection[str] = ()
) -> GraphForgotten:
    out = GraphForgotten()
    with store.transaction(chat_id) as db:
        _forget_in(db, chat_id, sender, list(dict.fromkeys([sender, *names])), sorted(set(message_ids)), out)
    erase_freed(store.db, "meta")
    return out


def _forget_in(
    db: sqlite3.Connection, chat: str, sender: str, who: list[str], ids: list[str], out: GraphForgotten
) -> None:
    persons = [r[0] for r in db.execute(
        "SELECT entity_id FROM entities WHERE chat_id = ? AND type = 'person'"
        f" AND (sender = ? OR name IN ({_marks(who)}))", (chat, sender, *who)).fetchall()]  # fmt: skip
    where, args = f"sender = ? OR speaker IN ({_marks(who)})", [sender, *who]
    if persons:
        where += f" OR subject_id IN ({_marks(persons)}) OR object_id IN ({_marks(persons)})"
        args += [*persons, *persons]
    edge_ids = [
        r[0] for r in db.execute(f"SELECT edge_id FROM edges WHERE chat_id = ? AND ({where})", (chat, *args))
    ]
    touched: set[str] = set()  # edges with evidence among the deleted messages
    for chunk in chunks(ids, _CHUNK):
        touched.update(r[0] for r in db.execute(
            f"SELECT edge_id FROM edge_sources WHERE chat_id = ? AND message_id IN ({_marks(chunk)})", (chat, *chunk)))  # fmt: skip
    gone_ids = set(ids)
    for edge_id in sorted(touched - set(edge_ids)):
        row = db.execute(
            "SELECT payload FROM edges WHERE chat_id = ? AND edge_id = ?", (chat, edge_id)
        ).fetchone()
        if row is None:
            continue
        edge = RelationEdge.model_validate_json(row[0])
        kept = [m for m in edge.source_message_ids if m not in gone_ids]
        if not kept:  # their messages were its only evidence
            edge_ids.append(edge_id)
            continue
        db.execute("UPDATE edges SET payload = ? WHERE chat_id = ? AND edge_id = ?",
                   (edge.model_copy(update={"source_message_ids": kept}).model_dump_json(), chat, edge_id))  # fmt: skip
        out.evidence_trimmed += 1
    for chunk in chunks(ids, _CHUNK):
        db.execute(
            f"DELETE FROM edge_sources WHERE chat_id = ? AND message_id IN ({_marks(chunk)})", (chat, *chunk)
        )
    edge_ids = list(dict.fromkeys(edge_ids))
    for chunk in chunks(edge_ids, _CHUNK):
        out.texts += _texts(db, chat, "edges", f"edge_id IN ({_marks(chunk)})", chunk)
    _delete_ids(db, chat, "edge_id", ("edges", "edge_sources"), edge_ids)
    orphans = [r[0] for r in db.execute(
        "SELECT entity_id FROM entities e WHERE chat_id = ?"
        " AND NOT EXISTS (SELECT 1 FROM edges WHERE chat_id = e.chat_id AND subject_id = e.entity_id)"
        " AND NOT EXISTS (SELECT 1 FROM edges WHERE chat_id = e.chat_id AND object_id = e.entity_id)"
        " AND (type != 'person' OR sender IS NULL OR sender = ?)", (chat, sender)).fetchall()]  # fmt: skip
    doomed = list(dict.fromkeys([*persons, *orphans]))
    for chunk in chunks(doomed, _CHUNK):
        out.texts += _texts(db, chat, "entities", f"entity_id IN ({_marks(chunk)})", chunk)
    _delete_ids(db, chat, "entity_id", ("entities", "entity_keys"), doomed)
    out.removed += len(edge_ids) + len(doomed)


def _texts(db: sqlite3.Connection, chat: str, table: str, where: str, args: Sequence[Any]) -> list[str]:
    """The embedded texts of the rows about to go: entity names and aliases, triple sentences and facts."""
    rows = db.execute(
        f"SELECT payload FROM {table} WHERE chat_id = ? AND ({where})", (chat, *args)
    ).fetchall()
    if table == "entities":
        return [n.name for n in (EntityNode.model_validate_json(r[0]) for r in rows)]
    edges = [RelationEdge.model_validate_json(r[0]) for r in rows]
    return [t for e in edges for t in (e.text, e.fact) if t]


def _delete_ids(
    db: sqlite3.Connection, chat: str, column: str, tables: tuple[str, ...], ids: list[str]
) -> None:
    for chunk in chunks(ids, _CHUNK):
        for table in tables:
            db.execute(
                f"DELETE FROM {table} WHERE chat_id = ? AND {column} IN ({_marks(chunk)})", (chat, *chunk)
            )
