"""The embedded graph store: idempotent writes, chat isolation, subgraphs, neighbours, triple search, deletion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from backends.graph.sqlite import GraphSQLiteStore
from retrieval.graph_expand import expand, related_facts, render_edge
from retrieval.graph_protocols import GraphStore
from schemas import RetrievedItem
from schemas.graph import EdgeInvalidation, EntityNode, RelationEdge

T0 = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)
DIM = 6


def unit(*hot: float) -> np.ndarray:
    v = np.array(list(hot) + [0.0] * (DIM - len(hot)), dtype=np.float32)
    return v / np.linalg.norm(v)


def node(chat: str, eid: str, name: str, etype="concept", sender=None, **kw) -> EntityNode:
    return EntityNode(entity_id=eid, chat_id=chat, name=name, key=name.lower(), type=etype, sender=sender,
                      first_seen=T0, **kw)  # fmt: skip


def edge(
    chat: str, eid: str, s: str, p: str, o: str, *, day: int = 0, mids=("m1",), sender="alice", fact=None
):
    return RelationEdge(edge_id=eid, chat_id=chat, subject_id=s, predicate=p, object_id=o, subject_name=s.title(),
                        object_name=o.title(), text=f"{s.title()} {p} {o.title()}", fact=fact,
                        valid_from=T0 + timedelta(days=day), speaker=sender.title() if sender else None,
                        sender=sender, source_message_ids=list(mids), source_event_id=f"ev-{eid}")  # fmt: skip


def _graph(chat: str = "A"):
    nodes = [
        node(chat, "alice", "Alice", "person", sender="alice"),
        node(chat, "bob", "Bob", "person", sender="bob"),
        node(chat, "beijing", "Beijing", "place"),
        node(chat, "hangzhou", "Hangzhou", "place"),
        node(chat, "mochi", "Mochi", "object", subtype="cat"),
        node(chat, "west lake", "West Lake", "place"),
    ]
    edges = [
        edge(chat, "e1", "alice", "lives_in", "beijing", mids=("m1",)),
        edge(chat, "e2", "alice", "pet_name:cat", "mochi", day=1, mids=("m2",)),
        edge(chat, "e3", "bob", "visited", "hangzhou", day=2, mids=("m3",), sender="bob"),
        edge(chat, "e4", "hangzhou", "mentions", "west lake", day=2, mids=("m3",), sender="bob"),
    ]
    node_vecs = {"alice": unit(1, 0.1), "bob": unit(0.1, 1), "beijing": unit(0, 0, 1), "hangzhou": unit(0, 0, 1, 1),
                 "mochi": unit(0, 0, 0, 0, 1), "west lake": unit(0, 0, 0, 1)}  # fmt: skip
    edge_vecs = {
        "e1": unit(1, 0, 1),
        "e2": unit(0, 0, 0, 0, 1, 0.2),
        "e3": unit(0, 1, 0, 1),
        "e4": unit(0, 0, 0, 1, 0, 1),
    }
    return nodes, edges, node_vecs, edge_vecs


@pytest.fixture
async def store():
    s = GraphSQLiteStore(":memory:", DIM)
    await s.bootstrap()
    nodes, edges, nv, ev = _graph("A")
    await s.apply("A", nodes, edges, [], node_vectors=nv, edge_vectors=ev)
    nodes, edges, nv, ev = _graph("B")
    await s.apply("B", nodes, edges, [], node_vectors=nv, edge_vectors=ev)
    yield s
    await s.close()


async def test_implements_the_protocol(store):
    assert isinstance(store, GraphStore)


async def test_apply_is_idempotent(store):
    nodes, edges, nv, ev = _graph("A")
    before = (await store.entities("A"), await store.edges("A", include_invalid=True))
    stats = await store.apply("A", nodes, edges, [], node_vectors=nv, edge_vectors=ev)
    assert (stats.nodes_added, stats.nodes_updated, stats.edges_added, stats.edges_invalidated) == (
        0,
        0,
        0,
        0,
    )
    assert (await store.entities("A"), await store.edges("A", include_invalid=True)) == before
    inv = EdgeInvalidation(edge_id="e1", at=T0 + timedelta(days=5), by_edge_id="e9")
    assert (await store.apply("A", [], [], [inv])).edges_invalidated == 1
    later = EdgeInvalidation(edge_id="e1", at=T0 + timedelta(days=9))
    assert (await store.apply("A", [], [], [inv, later])).edges_invalidated == 0  # closed once, kept closed
    (closed,) = [e for e in await store.edges("A", include_invalid=True) if e.edge_id == "e1"]
    assert closed.valid_to == T0 + timedelta(days=5) and closed.invalidated_by == "e9"
    assert "e1" not in {e.edge_id for e in await store.edges("A")}
    assert "e1" in {e.edge_id for e in await store.edges("B")}  # the same id in another chat is untouched


async def test_node_upsert_merges_aliases_and_sharpens_a_concept(store):
    renamed = node("A", "mochi", "Mochi", "concept").model_copy(update={"aliases": ["mochi the cat", "mo"]})
    stats = await store.apply("A", [renamed], [], [])
    assert stats.nodes_updated == 1
    (mochi,) = await store.entities("A", ["mo"])
    assert mochi.type == "object" and mochi.subtype == "cat" and mochi.aliases == ["mochi the cat", "mo"]
    place = node("A", "new", "Newtown", "concept")
    await store.apply("A", [place], [], [])
    await store.apply("A", [place.model_copy(update={"type": "place"})], [], [])
    assert (await store.entities("A", ["newtown"]))[0].type == "place"
    with pytest.raises(ValueError):
        await store.apply("A", [node("B", "x", "X")], [], [])


async def test_reads_never_cross_chats(store):
    await store.apply(
        "B", [node("B", "zed", "Zed", "person")], [edge("B", "e9", "zed", "likes", "bob", mids=("b9",))], []
    )
    assert "zed" not in {n.entity_id for n in await store.entities("A")}
    assert await store.entities("A", ["zed"]) == []
    assert await store.neighbours("A", "zed") == []
    assert (await store.subgraph("A", ["zed"])).edges == []
    assert await store.edges_for_messages("A", ["b9"]) == []
    assert [n.entity_id for n, _ in await store.entities_for_query("A", "what does Zed like?", None)] == []
    hits = await store.search_triples("A", unit(1, 0, 1), k=20, min_score=-1.0)
    assert {e.chat_id for e, _ in hits} == {"A"}
    assert await store.delete_chat("B") == 7 + 5  # its 7 nodes and 5 edges
    assert await store.entities("B") == [] and len(await store.entities("A")) == 6


async def test_subgraph_and_neighbours(store):
    one = await store.subgraph("A", ["alice"], hops=1)
    assert {e.edge_id for e in one.edges} == {"e1", "e2"}
    assert {n.entity_id for n in one.nodes} == {"alice", "beijing", "mochi"}
    two = await store.subgraph("A", ["bob"], hops=2)
    assert {e.edge_id for e in two.edges} == {"e3", "e4"} and "west lake" in {n.entity_id for n in two.nodes}
    among = await store.subgraph("A", ["alice", "mochi", "bob"], hops=0)
    assert [e.edge_id for e in among.edges] == ["e2"]
    around = {
        (nb.node.entity_id, nb.direction, nb.edge.predicate) for nb in await store.neighbours("A", "hangzhou")
    }
    assert around == {("bob", "in", "visited"), ("west lake", "out", "mentions")}
    await store.apply("A", [], [], [EdgeInvalidation(edge_id="e1", at=T0 + timedelta(days=3))])
    assert {e.edge_id for e in (await store.subgraph("A", ["alice"])).edges} == {"e2"}
    assert {e.edge_id for e in (await store.subgraph("A", ["alice"], include_invalid=True)).edges} == {
        "e1",
        "e2",
    }
    assert [nb.edge.edge_id for nb in await store.neighbours("A", "alice", include_invalid=True)] == [
        "e1",
        "e2",
    ]


async def test_triple_search_and_entity_lookup(store):
    hits = await store.search_triples("A", unit(0, 0, 0, 0, 1), k=3, min_score=0.5)
    assert [e.edge_id for e, _ in hits] == ["e2"] and hits[0][1] > 0.9
    assert len(await store.search_triples("A", unit(0, 0, 0, 1), k=1, min_score=0.0)) == 1
    await store.apply("A", [], [], [EdgeInvalidation(edge_id="e2", at=T0 + timedelta(days=3))])
    assert await store.search_triples("A", unit(0, 0, 0, 0, 1), k=3, min_score=0.5) == []
    assert (
        len(await store.search_triples("A", unit(0, 0, 0, 0, 1), k=3, min_score=0.5, include_invalid=True))
        == 1
    )
    # by name (whole words, case-folded) and by name vector
    found = await store.entities_for_query("A", "Where did alice and Bob go in HANGZHOU?", None, k=5)
    assert {n.entity_id for n, _ in found} == {"alice", "bob", "hangzhou"}
    assert await store.entities_for_query("A", "bobsleigh alicealice", None) == []
    near = await store.entities_for_query("A", "the cat", unit(0, 0, 0, 0, 1), k=1)
    assert [n.entity_id for n, _ in near] == ["mochi"]
    similar = await store.similar_entities("A", np.stack([unit(0, 0, 1), unit(1, 0.1)]), k=1)
    assert [[n.entity_id for n, _ in row] for row in similar] == [["beijing"], ["alice"]]


async def test_chinese_entity_names_match_as_substrings():
    s = GraphSQLiteStore(":memory:")
    await s.bootstrap()
    await s.apply("Z", [node("Z", "w", "小王", "person"), node("Z", "h", "杭州", "place")],
                  [edge("Z", "z1", "w", "lives_in", "h")], [])  # fmt: skip
    found = await s.entities_for_query("Z", "小王现在住在杭州吗", None)
    assert {n.entity_id for n, _ in found} == {"w", "h"}
    await s.close()


async def test_delete_user_removes_their_statements_and_their_node(store):
    removed = await store.delete_user("A", "bob")
    assert removed == 5  # e3, e4 (bob's statements), bob's node, Hangzhou and West Lake left without edges
    assert {e.edge_id for e in await store.edges("A", include_invalid=True)} == {"e1", "e2"}
    assert {n.entity_id for n in await store.entities("A")} == {"alice", "beijing", "mochi"}
    assert len(await store.edges("B")) == 4  # other chats untouched
    assert await store.delete_user(None, "alice") == 2 * (2 + 3)  # A and B: e1, e2, alice, beijing, mochi


async def test_vectors_persist_and_dimension_is_checked(tmp_path):
    path = tmp_path / "graph.db"
    s = GraphSQLiteStore(path)
    await s.bootstrap()
    nodes, edges, nv, ev = _graph("A")
    await s.apply("A", nodes, edges, [], node_vectors=nv, edge_vectors=ev)
    await s.close()
    again = GraphSQLiteStore(path)
    await again.bootstrap()
    assert [e.edge_id for e, _ in await again.search_triples("A", unit(1, 0, 1), k=1)] == ["e1"]
    await again.close()
    with pytest.raises(ValueError):
        await GraphSQLiteStore(path, dim=DIM + 1).bootstrap()


async def test_expansion_renders_one_hop_related_facts(store):
    item = RetrievedItem(item_id="i1", kind="fact", text="Bob visited Hangzhou", timestamp=T0, score=1.0,
                         source_message_ids=["m3"])  # fmt: skip
    await store.apply("A", [], [edge("A", "e5", "alice", "visited", "hangzhou", day=4, mids=("m5",))], [])
    related = await expand(store, "A", [item], max_facts=5, token_budget=200)
    assert [r.edge_id for r in related] == ["e5"]  # e3/e4 come from the item's own message
    assert related[0].text == "[2023-05-12] Alice —visited→ Hangzhou" and related[0].source_message_ids == [
        "m5"
    ]
    assert related[0].via == "Hangzhou"
    assert await expand(store, "B", [item]) == []  # chat B has no edge e5, nor any item sources beyond m3's
    assert await expand(store, "A", []) == []
    # the pure ranking: budget and count caps
    seeds = await store.edges_for_messages("A", ["m1"])
    hood = await store.subgraph("A", ["alice", "beijing"], hops=1)
    items = [item.model_copy(update={"source_message_ids": ["m1"]})]
    assert len(related_facts(items, seeds, hood, max_facts=1)) == 1
    assert related_facts(items, seeds, hood, token_budget=5) == []


def test_render_edge_shows_validity_and_evidence():
    live = edge("A", "e1", "caroline", "lives_in", "boston", day=0)
    assert render_edge(live) == "[2023-05-08] Caroline —lives_in→ Boston (since 2023-05-08)"
    closed = live.model_copy(update={"valid_to": T0 + timedelta(days=30)})
    assert render_edge(closed).endswith("(2023-05-08 until 2023-06-07)")
    mention = edge("A", "e2", "bob", "mentions", "berlin", fact="Bob went to a jazz festival in Berlin.")
    assert (
        render_edge(mention) == "[2023-05-08] Bob —mentions→ Berlin: Bob went to a jazz festival in Berlin."
    )
    assert render_edge(mention, evidence=False) == "[2023-05-08] Bob —mentions→ Berlin"
