from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from backends.sqlite.store import SQLiteStore
from retrieval.protocols import MemoryStore, SearchQuery
from schemas import ChatMessage, DecisionOp, MemoryDecision, MemoryKind, MemoryRecord, TopicSummary

T0 = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)
DIM = 8


def msg(
    chat: str, i: int, text: str, sender: str = "u1", name: str | None = None, minutes: int | None = None
):
    return ChatMessage(
        chat_id=chat,
        message_id=f"m{i}",
        sender=sender,
        sender_name=name,
        ts=T0 + timedelta(minutes=i if minutes is None else minutes),
        text=text,
    )


def unit(*hot: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for h in hot:
        v[h] = 1.0
    return v / np.linalg.norm(v)


def record(
    chat: str, mid: str, text: str, *, subject: str = "alice", speaker: str = "Alice", minutes: int = 0
):
    return MemoryRecord(
        memory_id=mid,
        chat_id=chat,
        kind=MemoryKind.FACT,
        text=text,
        speaker=speaker,
        subject=subject,
        attribute="lives_in",
        valid_from=T0 + timedelta(minutes=minutes),
        source_message_ids=["m1"],
        source_event_id="ev1",
    )


def decision(did: str, op: DecisionOp, chat: str = "A", rec=None, target=None, minutes: int = 60):
    return MemoryDecision(
        decision_id=did,
        op=op,
        chat_id=chat,
        target_memory_id=target,
        record=rec,
        reason="test",
        source_event_id="ev1",
        at=T0 + timedelta(minutes=minutes),
    )


@pytest.fixture
async def store(tmp_path):
    s = SQLiteStore(tmp_path / "store.db", DIM)
    await s.bootstrap()
    yield s
    await s.close()


async def test_implements_protocol(store):
    assert isinstance(store, MemoryStore)


async def test_not_usable_before_bootstrap(tmp_path):
    s = SQLiteStore(tmp_path / "x.db", DIM)
    assert not (tmp_path / "x.db").exists()  # the constructor does no I/O
    with pytest.raises(RuntimeError):
        await s.chats()


async def test_upsert_messages_is_idempotent(store):
    msgs = [msg("A", i, f"message number {i}") for i in range(5)]
    assert await store.upsert_messages(msgs, None) == 5
    assert await store.upsert_messages(msgs, None) == 0
    assert await store.upsert_messages(msgs[:2] + [msg("A", 9, "new one")], None) == 1
    listed = await store.list_messages("A")
    assert [m.message_id for m in listed] == ["m0", "m1", "m2", "m3", "m4", "m9"]
    hits = await store.search(SearchQuery(chat_id="A", text="message number", mode="bm25", k=50))
    assert len(hits) == 5  # one turn doc per message, never duplicated
    got = await store.get_messages("A", ["m3", "missing", "m1"])
    assert [m.message_id for m in got] == ["m3", "m1"]
    assert got[0] == msgs[3]


async def test_turn_doc_shape(store):
    await store.upsert_messages([msg("A", 1, "hello there", sender="u7", name="Melanie")], None)
    [hit] = await store.search(SearchQuery(chat_id="A", text="melanie", mode="bm25"))  # found by speaker
    assert hit.doc.doc_id == "turn:A:m1" and hit.doc.kind == "turn"
    assert hit.doc.speaker == "Melanie" and hit.doc.source_message_ids == ["m1"]
    assert hit.doc.ts == T0 + timedelta(minutes=1)
    [by_date] = await store.search(SearchQuery(chat_id="A", text="2023-05-08", mode="bm25"))
    assert by_date.doc.doc_id == "turn:A:m1"


async def test_list_messages_time_window_and_order(store):
    await store.upsert_messages(
        [msg("A", 1, "b", minutes=5), msg("A", 2, "a", minutes=1), msg("A", 3, "c", minutes=5)], None
    )
    assert [m.message_id for m in await store.list_messages("A")] == ["m2", "m1", "m3"]
    window = await store.list_messages("A", since=T0 + timedelta(minutes=2), until=T0 + timedelta(minutes=5))
    assert [m.message_id for m in window] == ["m1", "m3"]


async def test_decisions_are_idempotent(store):
    add = decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice lives in Paris"))
    assert await store.apply_decision(add, unit(0)) is True
    assert await store.apply_decision(add, unit(0)) is False
    assert len(await store.list_memories("A", live_only=False)) == 1
    assert len(await store.search(SearchQuery(chat_id="A", text="paris", mode="bm25"))) == 1
    noop = decision("d2", DecisionOp.NOOP, target="mem1")
    assert await store.apply_decision(noop, None) is True
    assert await store.apply_decision(noop, None) is False
    assert (await store.get_memory("A", "mem1")).live


async def test_update_invalidates_old_version_and_keeps_it(store):
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice lives in Paris")), unit(0)
    )
    new = record("A", "mem2", "Alice lives in Berlin", minutes=90).model_copy(update={"version": 2})
    assert await store.apply_decision(
        decision("d2", DecisionOp.UPDATE, rec=new, target="mem1", minutes=90), unit(0, 1)
    )
    old = await store.get_memory("A", "mem1")
    assert old.valid_to == T0 + timedelta(minutes=90) and old.superseded_by == "mem2"
    assert [m.memory_id for m in await store.list_memories("A")] == ["mem2"]
    assert [m.memory_id for m in await store.list_memories("A", live_only=False)] == ["mem1", "mem2"]
    # superseded doc is hidden by default in every mode, visible on request
    for mode in ("bm25", "knn", "hybrid"):
        q = SearchQuery(chat_id="A", text="alice lives", vector=unit(0).tolist(), mode=mode)
        assert [h.doc.doc_id for h in await store.search(q)] == ["mem2"]
        all_q = q.model_copy(update={"include_superseded": True})
        hits = {h.doc.doc_id: h for h in await store.search(all_q)}
        assert set(hits) == {"mem1", "mem2"} and hits["mem1"].doc.valid_to == old.valid_to


async def test_delete_invalidates_without_removing(store):
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice likes tea")), unit(2)
    )
    assert await store.apply_decision(decision("d2", DecisionOp.DELETE, target="mem1", minutes=30), None)
    gone = await store.get_memory("A", "mem1")
    assert gone is not None and gone.valid_to == T0 + timedelta(minutes=30) and gone.superseded_by is None
    assert await store.list_memories("A") == []
    assert await store.search(SearchQuery(chat_id="A", text="tea", mode="bm25")) == []
    assert await store.similar_memories("A", unit(2)) == []
    assert (
        len(await store.search(SearchQuery(chat_id="A", text="tea", mode="bm25", include_superseded=True)))
        == 1
    )


async def test_chat_isolation_in_every_mode(store):
    await store.upsert_messages([msg("A", 1, "secret project falcon launch")], unit(3)[None, :])
    await store.apply_decision(
        decision("dA", DecisionOp.ADD, rec=record("A", "memA", "falcon is secret")), unit(3)
    )
    await store.upsert_messages([msg("B", 1, "weather is nice")], unit(4)[None, :])
    for mode in ("bm25", "knn", "hybrid"):
        q = SearchQuery(chat_id="B", text="secret falcon", vector=unit(3).tolist(), mode=mode, k=50)
        assert all(h.doc.chat_id == "B" for h in await store.search(q))
        qa = q.model_copy(update={"chat_id": "A"})
        assert {h.doc.chat_id for h in await store.search(qa)} == {"A"}
    assert await store.similar_memories("B", unit(3)) == []
    assert await store.get_memory("B", "memA") is None
    assert await store.get_messages("B", ["m1"]) == [msg("B", 1, "weather is nice")]


async def test_chinese_bm25(store):
    texts = ["我下个月要搬到杭州了", "今天天气不错，我们去公园吧", "杭州的西湖很漂亮", "晚饭吃火锅"]
    await store.upsert_messages([msg("A", i, t) for i, t in enumerate(texts)], None)
    hits = await store.search(SearchQuery(chat_id="A", text="杭州", mode="bm25"))
    assert {h.doc.text for h in hits} == {"我下个月要搬到杭州了", "杭州的西湖很漂亮"}
    [top] = await store.search(SearchQuery(chat_id="A", text="他搬到哪里了？", mode="bm25", k=1))
    assert top.doc.text == "我下个月要搬到杭州了"


async def test_kind_and_time_filters(store):
    await store.upsert_messages([msg("A", i, f"coffee talk {i}", minutes=i * 10) for i in range(4)], None)
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice loves coffee", minutes=15)), None
    )
    base = SearchQuery(chat_id="A", text="coffee", mode="bm25", k=20)
    assert {h.doc.kind for h in await store.search(base.model_copy(update={"kinds": ["fact"]}))} == {"fact"}
    assert {h.doc.kind for h in await store.search(base.model_copy(update={"kinds": ["turn"]}))} == {"turn"}
    window = base.model_copy(
        update={"since": T0 + timedelta(minutes=10), "until": T0 + timedelta(minutes=20)}
    )
    assert {h.doc.doc_id for h in await store.search(window)} == {"turn:A:m1", "turn:A:m2", "mem1"}
    assert await store.search(base.model_copy(update={"kinds": []})) == []


async def test_knn_filters_and_scores(store):
    msgs = [msg("A", i, f"t{i}", minutes=i) for i in range(4)]
    await store.upsert_messages(msgs, np.stack([unit(0), unit(0, 1), unit(1), unit(2)]))
    hits = await store.search(SearchQuery(chat_id="A", text="", vector=unit(0).tolist(), mode="knn", k=3))
    assert [h.doc.doc_id for h in hits] == ["turn:A:m0", "turn:A:m1", "turn:A:m2"]
    assert hits[0].score == pytest.approx(1.0) and hits[1].scores["cosine"] == pytest.approx(2**-0.5)
    assert [h.scores["knn_rank"] for h in hits] == [1.0, 2.0, 3.0]
    later = SearchQuery(
        chat_id="A", text="", vector=unit(0).tolist(), mode="knn", since=T0 + timedelta(minutes=1)
    )
    assert (await store.search(later))[0].doc.doc_id == "turn:A:m1"
    # the per-chat matrix cache is invalidated by writes
    await store.upsert_messages([msg("A", 9, "t9", minutes=9)], unit(0)[None, :])
    assert {h.doc.doc_id for h in (await store.search(later))[:2]} == {"turn:A:m1", "turn:A:m9"}


async def test_hybrid_fuses_both_rankings(store):
    msgs = [msg("A", 1, "pizza party tonight"), msg("A", 2, "unrelated words"), msg("A", 3, "pizza again")]
    await store.upsert_messages(msgs, np.stack([unit(5), unit(0), unit(1)]))
    q = SearchQuery(chat_id="A", text="pizza", vector=unit(0).tolist(), mode="hybrid", k=3, rrf_k=60)
    hits = await store.search(q)
    by_id = {h.doc.doc_id: h for h in hits}
    assert set(by_id) == {"turn:A:m1", "turn:A:m2", "turn:A:m3"}
    for h in hits:
        expected = sum(1 / (60 + h.scores[r]) for r in ("bm25_rank", "knn_rank") if r in h.scores)
        assert h.score == pytest.approx(expected) == pytest.approx(h.scores["rrf"])
    assert "bm25" in by_id["turn:A:m1"].scores and "cosine" in by_id["turn:A:m2"].scores
    no_vec = await store.search(q.model_copy(update={"vector": None}))
    assert {h.doc.doc_id for h in no_vec} == {"turn:A:m1", "turn:A:m3"}


async def test_similar_memories(store):
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "m1", "Alice lives in Paris")), unit(0)
    )
    await store.apply_decision(
        decision("d2", DecisionOp.ADD, rec=record("A", "m2", "Bob lives in Rome", subject="bob")), unit(0, 1)
    )
    await store.upsert_messages([msg("A", 1, "a turn is not a memory")], unit(0)[None, :])
    sims = await store.similar_memories("A", unit(0), k=5)
    assert [(r.memory_id, round(s, 3)) for r, s in sims] == [("m1", 1.0), ("m2", 0.707)]
    assert [r.memory_id for r, _ in await store.similar_memories("A", unit(0), subject="bob")] == ["m2"]


async def test_topics_tag_turns(store):
    await store.upsert_messages([msg("A", 1, "x one"), msg("A", 2, "x two")], None)
    topic = TopicSummary(
        chat_id="A", topic_id="t1", state="closed", message_ids=["m1", "m2"], participants=["u1"],
        started_at=T0, last_active_at=T0 + timedelta(minutes=2), title="x",
    )  # fmt: skip
    await store.upsert_topic(topic)
    await store.upsert_topic(topic)
    assert await store.list_topics("A") == [topic] and await store.list_topics("B") == []
    assert {h.doc.topic_id for h in await store.search(SearchQuery(chat_id="A", text="x", mode="bm25"))} == {
        "t1"
    }


async def test_delete_chat_and_user(store):
    await store.upsert_messages([msg("A", 1, "alpha talk", sender="u1", name="Alice")], unit(0)[None, :])
    await store.upsert_messages([msg("A", 2, "beta talk", sender="u2", name="Bob")], unit(1)[None, :])
    await store.upsert_messages([msg("B", 1, "gamma talk", sender="u1", name="Alice")], None)
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice likes alpha")), unit(0)
    )
    assert await store.chats() == ["A", "B"]

    removed = await store.delete_user("A", "u1")
    assert removed == 3  # message + turn doc + memory doc
    assert [m.sender for m in await store.list_messages("A")] == ["u2"]
    assert await store.list_memories("A", live_only=False) == []
    assert len(await store.list_messages("B")) == 1  # other chat untouched
    q = SearchQuery(chat_id="A", text="alpha talk", vector=unit(0).tolist(), mode="hybrid")
    assert [h.doc.doc_id for h in await store.search(q)] == ["turn:A:m2"]

    assert await store.delete_chat("A") == 2
    assert await store.chats() == ["B"]
    assert await store.search(q) == []
    assert await store.delete_user(None, "u1") == 2
    assert await store.chats() == []


async def test_export_chat(store):
    await store.upsert_messages([msg("A", 1, "hello")], None)
    await store.apply_decision(decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "v1")), None)
    await store.apply_decision(
        decision("d2", DecisionOp.UPDATE, rec=record("A", "mem2", "v2"), target="mem1"), None
    )
    out = await store.export_chat("A")
    assert [m["message_id"] for m in out["messages"]] == ["m1"]
    assert [(m["memory_id"], m["valid_to"] is None) for m in out["memories"]] == [
        ("mem1", False),
        ("mem2", True),
    ]
    assert out["topics"] == []


async def test_reopen_persists_and_checks_dim(tmp_path):
    s = SQLiteStore(tmp_path / "p.db", DIM)
    await s.bootstrap()
    await s.upsert_messages([msg("A", 1, "persisted words")], unit(0)[None, :])
    await s.close()
    again = SQLiteStore(tmp_path / "p.db", DIM)
    await again.bootstrap()
    assert len(await again.search(SearchQuery(chat_id="A", text="persisted", vector=unit(0).tolist()))) == 1
    await again.close()
    with pytest.raises(ValueError):
        await SQLiteStore(tmp_path / "p.db", DIM * 2).bootstrap()


async def test_wrong_vector_shapes_rejected(store):
    with pytest.raises(ValueError):
        await store.upsert_messages([msg("A", 1, "x")], np.zeros((2, DIM), dtype=np.float32))
    with pytest.raises(ValueError):
        await store.upsert_messages([msg("A", 1, "x")], np.zeros((1, DIM + 1), dtype=np.float32))
    assert await store.list_messages("A") == []


async def test_vector_cache_stays_equal_to_a_rebuilt_one(store, tmp_path):
    """The per-chat matrix is updated in place by writes; it must always match one rebuilt from disk."""

    async def assert_consistent():
        fresh = SQLiteStore(tmp_path / "store.db", DIM)
        await fresh.bootstrap()
        for v in (unit(0), unit(1), unit(0, 2), unit(3)):
            for superseded in (False, True):
                q = SearchQuery(
                    chat_id="A", text="", vector=v.tolist(), mode="knn", k=50, include_superseded=superseded
                )
                live = [(h.doc.doc_id, round(h.score, 5)) for h in await store.search(q)]
                assert live == [(h.doc.doc_id, round(h.score, 5)) for h in await fresh.search(q)]
            mine = [(r.memory_id, round(s, 5)) for r, s in await store.similar_memories("A", v, k=50)]
            assert mine == [(r.memory_id, round(s, 5)) for r, s in await fresh.similar_memories("A", v, k=50)]
        await fresh.close()

    await store.upsert_messages([msg("A", 1, "one"), msg("A", 2, "two")], np.stack([unit(0), unit(1)]))
    await assert_consistent()  # builds the cache
    await store.upsert_messages([msg("A", 3, "three", sender="u2"), msg("A", 4, "four")], None)
    await store.upsert_messages(
        [msg("A", 3, "three", sender="u2"), msg("A", 5, "five")], np.stack([unit(2), unit(0, 2)])
    )
    await assert_consistent()
    await store.apply_decision(decision("d1", DecisionOp.ADD, rec=record("A", "k1", "fact one")), unit(0, 1))
    await store.apply_decision(
        decision("d2", DecisionOp.ADD, rec=record("A", "k2", "fact two", subject="bob")), unit(3)
    )
    await assert_consistent()
    await store.apply_decision(
        decision("d3", DecisionOp.UPDATE, rec=record("A", "k3", "fact 1b"), target="k1"), unit(0)
    )
    await store.apply_decision(decision("d4", DecisionOp.DELETE, target="k2"), None)
    await assert_consistent()
    await store.delete_user("A", "u2")
    await assert_consistent()


