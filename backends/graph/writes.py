"""The embedded graph store's tables (DDL) and its writes inside the caller's transaction: entity nodes
(aliases merged), relation edges (inserted once, with their evidence) and edge closings."""

from __future__ import annotations

import sqlite3

from schemas.graph import EdgeInvalidation, EntityNode, RelationEdge

__all__ = ["SCHEMA", "close_edge", "insert_edge", "merge_node", "upsert_node"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    chat_id TEXT NOT NULL, entity_id TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
    sender TEXT, payload TEXT NOT NULL, vec BLOB, PRIMARY KEY (chat_id, entity_id));
CREATE TABLE IF NOT EXISTS entity_keys (
    chat_id TEXT NOT NULL, key TEXT NOT NULL, entity_id TEXT NOT NULL, PRIMARY KEY (chat_id, key));
CREATE TABLE IF NOT EXISTS edges (
    chat_id TEXT NOT NULL, edge_id TEXT NOT NULL, subject_id TEXT NOT NULL, predicate TEXT NOT NULL,
    object_id TEXT NOT NULL, valid_from REAL NOT NULL, valid_to REAL, sender TEXT, speaker TEXT,
    payload TEXT NOT NULL, vec BLOB, PRIMARY KEY (chat_id, edge_id));
CREATE INDEX IF NOT EXISTS edges_by_subject ON edges (chat_id, subject_id);
CREATE INDEX IF NOT EXISTS edges_by_object ON edges (chat_id, object_id);
CREATE TABLE IF NOT EXISTS edge_sources (
    chat_id TEXT NOT NULL, message_id TEXT NOT NULL, edge_id TEXT NOT NULL,
    PRIMARY KEY (chat_id, message_id, edge_id));
"""


def upsert_node(db: sqlite3.Connection, node: EntityNode, vec: bytes | None) -> str:
    """Insert the node or merge it into the stored one (its name vector kept if it has one): ``added``,
    ``updated`` or ``same``."""
    row = db.execute(
        "SELECT payload, vec FROM entities WHERE chat_id = ? AND entity_id = ?",
        (node.chat_id, node.entity_id),
    ).fetchone()
    status = "added"
    if row is None:
        db.execute(
            "INSERT INTO entities (chat_id, entity_id, key, name, type, sender, payload, vec) VALUES (?,?,?,?,?,?,?,?)",
            (node.chat_id, node.entity_id, node.key, node.name, node.type, node.sender, node.model_dump_json(), vec),
        )  # fmt: skip
    else:
        stored = EntityNode.model_validate_json(row[0])
        merged = merge_node(stored, node)
        status = "updated" if merged != stored or (row[1] is None and vec is not None) else "same"
        if status == "updated":
            db.execute(
                "UPDATE entities SET type = ?, sender = ?, payload = ?, vec = COALESCE(vec, ?)"
                " WHERE chat_id = ? AND entity_id = ?",
                (merged.type, merged.sender, merged.model_dump_json(), vec, node.chat_id, node.entity_id),
            )
        node = merged
    db.executemany(
        "INSERT OR IGNORE INTO entity_keys (chat_id, key, entity_id) VALUES (?,?,?)",
        [(node.chat_id, key, node.entity_id) for key in dict.fromkeys([node.key, *node.aliases])],
    )
    return status


def insert_edge(db: sqlite3.Connection, e: RelationEdge, vec: bytes | None) -> bool:
    """Insert a new edge and its evidence (message ids); False if it was stored before."""
    cur = db.execute(
        "INSERT OR IGNORE INTO edges (chat_id, edge_id, subject_id, predicate, object_id, valid_from, valid_to,"
        " sender, speaker, payload, vec) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (e.chat_id, e.edge_id, e.subject_id, e.predicate, e.object_id, e.valid_from.timestamp(),
         e.valid_to.timestamp() if e.valid_to else None, e.sender, e.speaker, e.model_dump_json(), vec),
    )  # fmt: skip
    if cur.rowcount != 1:
        return False
    db.executemany(
        "INSERT OR IGNORE INTO edge_sources (chat_id, message_id, edge_id) VALUES (?,?,?)",
        [(e.chat_id, mid, e.edge_id) for mid in e.source_message_ids],
    )
    return True


def close_edge(db: sqlite3.Connection, chat_id: str, inv: EdgeInvalidation) -> bool:
    """Close a live edge (never before it began); False if it is unknown or closed already."""
    row = db.execute(
        "SELECT payload FROM edges WHERE chat_id = ? AND edge_id = ? AND valid_to IS NULL",
        (chat_id, inv.edge_id),
    ).fetchone()
    if row is None:
        return False
    edge = RelationEdge.model_validate_json(row[0])
    at = max(inv.at, edge.valid_from)  # never close an edge before it began
    closed = edge.model_copy(update={"valid_to": at, "invalidated_by": inv.by_edge_id})
    db.execute(
        "UPDATE edges SET valid_to = ?, payload = ? WHERE chat_id = ? AND edge_id = ?",
        (at.timestamp(), closed.model_dump_json(), chat_id, inv.edge_id),
    )
    return True


def merge_node(stored: EntityNode, new: EntityNode) -> EntityNode:
    """The stored node with what ``new`` adds: aliases, a sharper type than ``concept``, subtype, sender."""
    aliases = [
        *stored.aliases,
        *(a for a in [new.key, *new.aliases] if a != stored.key and a not in stored.aliases),
    ]
    return stored.model_copy(
        update={
            "aliases": list(dict.fromkeys(aliases)),
            "type": new.type if stored.type == "concept" else stored.type,
            "subtype": stored.subtype or new.subtype,
            "sender": stored.sender or new.sender,
            "first_seen": min(stored.first_seen, new.first_seen),
        }
    )
