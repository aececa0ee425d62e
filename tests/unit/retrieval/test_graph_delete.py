"""Deletion in the embedded graph: a user's person, statements and evidence go; others' edges keep theirs."""

from __future__ import annotations

from datetime import UTC, datetime

from backends.graph.sqlite import GraphSQLiteStore
from schemas.graph import EntityNode, RelationEdge

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def node(eid: str, etype: str = "concept", sender: str | None = None) -> EntityNode:
    return EntityNode(entity_id=eid, chat_id="A", name=eid.title(), key=eid, type=etype, sender=sender, first_seen=T0)


def edge(eid: str, s: str, o: str, mids: tuple[str, ...], sender: str) -> RelationEdge:
    return RelationEdge(edge_id=eid, chat_id="A", subject_id=s, predicate="likes", object_id=o, subject_name=s,
                        object_name=o, text=f"{s} likes {o}", fact=f"{s} said {o}", valid_from=T0, sender=sender,
                        speaker=sender.title(), source_message_ids=list(mids), source_event_id=eid)  # fmt: skip


async def test_their_evidence_goes_and_edges_only_they_supported_go_too(tmp_path):
    g = GraphSQLiteStore(tmp_path / "graph.db")
    await g.bootstrap()
    try:
        nodes = [node("bob", "person", "bob"), node("carol", "person", "carol"), node("quokka"), node("tea")]
        edges = [
            edge("only-theirs", "bob", "quokka", ("u1",), sender="bob"),  # stated by bob, evidence all theirs
            edge("mixed", "carol", "tea", ("u1", "c1"), sender="carol"),
            edge("others", "bob", "tea", ("b1",), sender="bob"),
        ]
        await g.apply("A", nodes, edges, [])
        gone = await g.forget_user("A", "mallory", ["Mallory"], ["u1"])
        assert {e.edge_id: e.source_message_ids for e in await g.edges("A", include_invalid=True)} == {
            "mixed": ["c1"], "others": ["b1"]
        }  # fmt: skip
        assert gone.evidence_trimmed == 1 and "bob likes quokka" in gone.texts and "Quokka" in gone.texts
        assert {n.entity_id for n in await g.entities("A")} == {"bob", "carol", "tea"}  # quokka left alone: gone
        assert await g.edges_for_messages("A", ["u1"]) == []
    finally:
        await g.close()
    assert b"quokka" not in (tmp_path / "graph.db").read_bytes()
