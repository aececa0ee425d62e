"""Graph memory: typed entities, merging, relation conflicts, speaker attribution (English and Chinese).

The pure core is tested directly; the stage runs the real distiller output through the real SQLite graph
and message stores (in memory).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from agents import graph
from agents.config import DistillerConfig, GraphMemoryConfig
from agents.distiller import distill_extractive
from backends.graph.sqlite import GraphSQLiteStore
from backends.sqlite.store import SQLiteStore
from schemas import ChatMessage, DistillJob, DistillResult
from schemas.graph import RelationEdge
from streams.clients import Clients
from streams.codec import encode
from streams.log import FileLog, Record
from streams.stages.graph import GraphStage
from streams.topics import DISTILL_RESULTS

T0 = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)
CST = timezone(timedelta(hours=8))
CHAT = "chat-1"


def _job(rows: list[tuple[str, str]], start: datetime, topic: str, chat: str = CHAT) -> DistillJob:
    msgs = [
        ChatMessage(
            chat_id=chat,
            message_id=f"{topic}-m{i}",
            sender=name.lower(),
            sender_name=name,
            ts=start + timedelta(minutes=i),
            text=text,
        )
        for i, (name, text) in enumerate(rows)
    ]
    return DistillJob(job_id=f"job-{topic}", chat_id=chat, topic_id=topic, messages=msgs, at=msgs[-1].ts)


class _Graph:
    """The real stage over in-memory SQLite stores (no embedder: merging by name only)."""

    def __init__(self, clients: Clients, stage: GraphStage) -> None:
        self.clients, self.stage = clients, stage
        self.store = stage.store

    async def say(self, rows: list[tuple[str, str]], start: datetime, topic: str) -> DistillResult:
        job = _job(rows, start, topic)
        await self.clients.store.upsert_messages(job.messages, None)
        result = distill_extractive(job, DistillerConfig())
        await self.stage.apply_result(result)
        return result

    async def edges(self, predicate: str | None = None) -> list[RelationEdge]:
        edges = await self.store.edges(CHAT, include_invalid=True)
        return [e for e in edges if predicate is None or e.predicate == predicate]


@pytest.fixture
async def g(tmp_path):
    store = SQLiteStore(":memory:")
    await store.bootstrap()
    graph_store = GraphSQLiteStore(":memory:")
    await graph_store.bootstrap()
    log = await FileLog(tmp_path / "log.db").open()
    clients = Clients(log=log, store=store, embedder=None, graph=graph_store)
    yield _Graph(clients, GraphStage(clients, graph_store, GraphMemoryConfig()))
    await graph_store.close()
    await store.close()
    await log.close()


# ------------------------------------------------------------------------------------------- conflicts


async def test_english_move_invalidates_the_old_home_with_a_time_and_keeps_it(g):
    await g.say([("Alice", "I live in Beijing."), ("Bob", "Nice, how is it?")], T0, "t1")
    later = T0 + timedelta(days=40)
    await g.say([("Alice", "I moved to Hangzhou last week."), ("Bob", "Wow congrats!")], later, "t2")
    homes = {e.object_name: e for e in await g.edges("lives_in")}
    assert set(homes) == {"Beijing", "Hangzhou"}
    old, new = homes["Beijing"], homes["Hangzhou"]
    assert old.valid_to == later and old.invalidated_by == new.edge_id  # closed at the new statement's time
    assert new.live and new.valid_from == later and new.source_message_ids == ["t2-m0"]
    assert old.subject_id == new.subject_id  # both about Alice's one node
    live = await g.store.edges(CHAT)
    assert [e.object_name for e in live if e.predicate == "lives_in"] == ["Hangzhou"]


async def test_chinese_move_invalidates_the_old_home(g):
    await g.say([("小王", "我住在北京。"), ("李雷", "北京冬天很冷吧。")], T0.astimezone(CST), "z1")
    later = (T0 + timedelta(days=30)).astimezone(CST)
    await g.say([("小王", "我搬到杭州了，新家在西湖边。"), ("李雷", "欢迎来杭州！")], later, "z2")
    homes = {e.object_name: e for e in await g.edges("lives_in")}
    assert homes["北京"].valid_to == later and homes["北京"].invalidated_by == homes["杭州"].edge_id
    assert homes["杭州"].live and homes["杭州"].subject_name == "小王"
    places = {n.name: n.type for n in await g.store.entities(CHAT)}
    assert places["北京"] == places["杭州"] == "place" and places["小王"] == places["李雷"] == "person"


async def test_multi_valued_relations_do_not_conflict(g):
    await g.say([("Alice", "I like hiking."), ("Bob", "I visited Paris last year.")], T0, "t1")
    later = T0 + timedelta(days=3)
    await g.say([("Alice", "I also like painting."), ("Bob", "And I visited Rome in March.")], later, "t2")
    likes = await g.edges("likes")
    assert sorted(e.object_name for e in likes if e.subject_name == "Alice") == ["hiking", "painting"]
    assert all(e.live for e in likes)
    visits = await g.edges("visited")
    assert sorted(e.object_name for e in visits) == ["Paris", "Rome"] and all(e.live for e in visits)


async def test_a_retraction_closes_the_edge_without_adding_one(g):
    await g.say([("Alice", "I live in Beijing.")], T0, "t1")
    later = T0 + timedelta(days=5)
    await g.say([("Alice", "I don't live in Beijing anymore.")], later, "t2")
    (home,) = await g.edges("lives_in")
    assert home.object_name == "Beijing" and home.valid_to == later and home.invalidated_by is None


async def test_an_older_statement_arriving_late_is_stored_as_history(g):
    later = T0 + timedelta(days=10)
    await g.say([("Alice", "I moved to Hangzhou.")], later, "t2")
    await g.say([("Alice", "I live in Beijing.")], T0, "t1")  # distilled after, said before
    homes = {e.object_name: e for e in await g.edges("lives_in")}
    assert homes["Hangzhou"].live
    assert homes["Beijing"].valid_to == later and homes["Beijing"].invalidated_by == homes["Hangzhou"].edge_id


def _edge(edge_id: str, predicate: str, obj: str, day: int, subject: str = "alice") -> RelationEdge:
    return RelationEdge(edge_id=edge_id, chat_id=CHAT, subject_id=subject, predicate=predicate, object_id=obj,
                        subject_name=subject, object_name=obj, text=f"{subject} {predicate} {obj}",
                        valid_from=T0 + timedelta(days=day), source_message_ids=["m1"], source_event_id="ev")  # fmt: skip


def test_detect_conflicts_exclusive_multi_valued_and_opposite_predicates():
    existing = [
        _edge("e1", "lives_in", "beijing", 0),
        _edge("e2", "likes", "hiking", 0),
        _edge("e3", "pet_name:cat", "mochi", 0),
        _edge("e4", "lives_in", "paris", 0, subject="bob"),
        _edge("e5", "job", "teacher", 0).model_copy(update={"valid_to": T0 + timedelta(days=1)}),
    ]
    assert graph.detect_conflicts(_edge("n1", "lives_in", "hangzhou", 5), existing) == ["e1"]
    assert graph.detect_conflicts(_edge("n2", "lives_in", "beijing", 5), existing) == []  # same object
    assert graph.detect_conflicts(_edge("n3", "likes", "painting", 5), existing) == []  # multi-valued
    assert graph.detect_conflicts(_edge("n4", "dislikes", "hiking", 5), existing) == ["e2"]  # opposite
    assert graph.detect_conflicts(_edge("n5", "pet_name:cat", "luna", 5), existing) == ["e3"]
    assert graph.detect_conflicts(_edge("n6", "job", "nurse", 5), existing) == []  # e5 is already closed
    assert graph.detect_conflicts(_edge("n7", "lives_in", "rome", -1), existing) == []  # older than e1
    assert graph.is_exclusive("relationship_status") and not graph.is_exclusive("visited")


# --------------------------------------------------------------------------------------- entity merging


def _mention(name: str, etype="object", subtype=None, day: int = 0) -> graph.Mention:
    return graph.Mention(name, graph.normalise_name(name), etype, subtype, T0 + timedelta(days=day))


def test_entity_names_normalise_to_one_key():
    keys = {graph.normalise_name(n) for n in ("Mochi", "mochi", "Mochi the cat", "the Mochi", "Mochi's")}
    assert keys == {"mochi"}
    assert graph.normalise_name("我家的小白") == "小白"
    merged = graph.merge_entities(
        CHAT, [_mention("Mochi"), _mention("mochi", day=1), _mention("Mochi the cat", subtype="cat")], []
    )
    (node,) = merged.nodes
    assert node.name == "Mochi" and node.type == "object" and node.subtype == "cat"
    assert set(merged.ids.values()) == {node.entity_id}


def test_merge_by_embedding_similarity_respects_threshold_and_type():
    nyc = graph.merge_entities(CHAT, [_mention("New York City", "place")], []).nodes[0]
    v = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    close = np.array([[0.96, 0.28, 0.0]], dtype=np.float32)  # cosine 0.96 with v
    merged = graph.merge_entities(
        CHAT, [_mention("NYC", "place")], [], vectors=close, similar=[[(nyc, 0.96)]]
    )
    assert merged.ids["nyc"] == nyc.entity_id and merged.nodes[0].aliases == ["nyc"]
    below = graph.merge_entities(CHAT, [_mention("NYC", "place")], [], vectors=close, similar=[[(nyc, 0.80)]])
    assert below.ids["nyc"] != nyc.entity_id
    person = graph.merge_entities(
        CHAT, [_mention("NYC", "person")], [], vectors=close, similar=[[(nyc, 0.99)]]
    )
    assert person.ids["nyc"] != nyc.entity_id  # a person is never merged into a place
    # within one batch, the second name is compared with the node the first one created
    both = graph.merge_entities(
        CHAT, [_mention("Boston", "place"), _mention("Boston MA", "place")], [], vectors=np.stack([v, v])
    )
    assert len(both.nodes) == 1 and both.nodes[0].aliases == ["boston ma"]
    numbers = graph.merge_entities(
        CHAT, [_mention("Route 66", "place"), _mention("Route 67", "place")], [], vectors=np.stack([v, v])
    )
    assert len(numbers.nodes) == 2  # numbers must agree even when vectors do


def test_a_nickname_or_first_name_merges_into_the_one_person():
    known = graph.merge_entities(
        CHAT, [_mention("Melanie", "person"), _mention("Caroline Smith", "person")], []
    )
    merged = graph.merge_entities(
        CHAT, [_mention("Mel", "person"), _mention("Caroline", "person")], known.nodes
    )
    by_key = {n.key: n for n in known.nodes}
    assert merged.ids == {"mel": by_key["melanie"].entity_id, "caroline": by_key["caroline smith"].entity_id}


# -------------------------------------------------------------------------------- typing and attribution


async def test_my_cat_said_by_alice_is_alices_cat(g):
    await g.say(
        [
            ("Alice", "My cat Mochi knocked over my plant again."),
            ("Bob", "Haha, my dog Rex would do the same."),
        ],
        T0,
        "t1",
    )
    pets = {e.object_name: e for e in await g.edges() if e.predicate.startswith("pet_name:")}
    assert pets["Mochi"].subject_name == "Alice" and pets["Mochi"].predicate == "pet_name:cat"
    assert pets["Rex"].subject_name == "Bob" and pets["Rex"].predicate == "pet_name:dog"
    assert pets["Mochi"].sender == "alice" and pets["Rex"].sender == "bob"
    nodes = {n.name: n for n in await g.store.entities(CHAT)}
    assert (nodes["Mochi"].type, nodes["Mochi"].subtype) == ("object", "cat")
    assert nodes["Alice"].type == "person" and nodes["Alice"].sender == "alice"
    # a later "Mochi the cat" is the same node
    await g.say([("Alice", "My cat is named Mochi the cat, officially.")], T0 + timedelta(days=1), "t2")
    assert [n.name for n in await g.store.entities(CHAT) if n.key == "mochi"] == ["Mochi"]


async def test_chinese_pet_and_workplace_are_typed_and_attributed(g):
    await g.say(
        [("小王", "我家的猫叫小白。"), ("李雷", "我在阿里巴巴工作，上周去了上海出差。")],
        T0.astimezone(CST),
        "z1",
    )
    edges = {(e.subject_name, e.predicate, e.object_name) for e in await g.edges()}
    assert ("小王", "pet_name:猫", "小白") in edges
    assert ("李雷", "works_at", "阿里巴巴") in edges and ("李雷", "visited", "上海") in edges
    types = {n.name: (n.type, n.subtype) for n in await g.store.entities(CHAT)}
    assert types["小白"] == ("object", "猫") and types["阿里巴巴"][0] == "organisation"
    assert types["上海"][0] == "place"


@pytest.mark.parametrize(
    ("name", "kwargs", "expected"),
    [
        ("Alice", {"participants": frozenset({"Alice", "Bob"})}, "person"),
        ("Mel", {"participants": frozenset({"Melanie"})}, "person"),
        ("Hangzhou", {"context": "Alice moved to Hangzhou last week."}, "place"),
        ("Google", {"role": "organisation"}, "organisation"),
        ("Stanford University", {}, "organisation"),
        ("jazz festival", {}, "event"),
        ("cat", {}, "object"),
        ("hiking in the mountains", {}, "concept"),
        ("杭州", {"context": "小王住在杭州。"}, "place"),
        ("阿里巴巴", {"context": "李雷在阿里巴巴工作。"}, "organisation"),
        ("腾讯公司", {}, "organisation"),
        ("LGBTQ", {}, "concept"),
    ],
)
def test_entity_types_are_gazetteer_free(name, kwargs, expected):
    assert graph.entity_type(name, **kwargs)[0] == expected


def test_triples_keep_sources_times_and_facts():
    result = distill_extractive(
        _job([("Bob", "I went to a jazz festival in Berlin yesterday.")], T0, "t1"), DistillerConfig()
    )
    triples = {(t.subject, t.predicate, t.object): t for t in graph.triples_from_result(result)}
    festival = triples[("Bob", "attended", "jazz festival")]
    assert festival.source_message_ids == ("t1-m0",) and festival.at == T0
    assert festival.fact and "2023-05-07" in festival.fact  # the resolved date travels with the evidence
    assert ("Bob", "mentions", "Berlin") in triples
    assert not graph.triples_from_result(result, mention_edges=False)[1:]


# -------------------------------------------------------------------------------------------- the stage


async def test_stage_is_idempotent_and_dead_letters_bad_records(g):
    job = _job([("Alice", "I live in Beijing."), ("Bob", "My cat Mochi loves Beijing too.")], T0, "t1")
    await g.clients.store.upsert_messages(job.messages, None)
    result = distill_extractive(job, DistillerConfig())
    records = [
        Record(DISTILL_RESULTS.name, 0, CHAT, result.result_id, encode(result)),
        Record(DISTILL_RESULTS.name, 1, CHAT, "bad", "{not json"),
    ]
    out = await g.stage.process(records)
    assert out.processed == 1 and out.dead == 1 and out.metrics["graph_edges_added"] >= 2
    before = (await g.store.entities(CHAT), await g.edges())
    again = await g.stage.process(records[:1])
    assert again.metrics["graph_edges_added"] == 0 and again.metrics["graph_nodes_added"] == 0
    assert (await g.store.entities(CHAT), await g.edges()) == before


async def test_stage_leaves_out_deleted_senders_and_chats(g):
    await g.clients.log.record_deletion(CHAT, "bob", T0.isoformat())
    job = _job([("Alice", "I live in Beijing."), ("Bob", "My cat Mochi lives in Paris.")], T0, "t1")
    await g.clients.store.upsert_messages(job.messages, None)
    result = distill_extractive(job, DistillerConfig())
    out = await g.stage.process([Record(DISTILL_RESULTS.name, 0, CHAT, result.result_id, encode(result))])
    assert out.processed == 1
    assert {e.subject_name for e in await g.edges()} == {"Alice"}
    assert "Bob" not in {n.name for n in await g.store.entities(CHAT)}
    await g.clients.log.record_deletion(CHAT, "*", T0.isoformat())
    other = distill_extractive(_job([("Alice", "I moved to Rome.")], T0, "t2"), DistillerConfig())
    await g.stage.process([Record(DISTILL_RESULTS.name, 1, CHAT, other.result_id, encode(other))])
    assert "Rome" not in {e.object_name for e in await g.edges()}
