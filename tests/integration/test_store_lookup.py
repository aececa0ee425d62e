"""The store operations that keep memory current, on every backend (SQLite, Elasticsearch server-side and
client-side RRF): filter lookups of memory records (a slot's live values, the records derived from given
messages, the invalidated facts) and message edits."""

from __future__ import annotations

import pytest

from retrieval.protocols import MemoryFilter, SearchQuery
from schemas import DecisionOp, MemoryKind

from .test_store_contract import BACKENDS, decision, make_store, msg, record, unit  # noqa: F401

pytestmark = pytest.mark.integration


@pytest.fixture(params=BACKENDS)
async def store(request, make_store):  # noqa: F811
    return await make_store(request.param)


async def test_find_memories_by_slot_source_and_state(store):
    paris = record("A", "mem1", "Alice lives in Paris")
    summary = record("A", "sum1", "Alice: I live in Paris. Bob: nice").model_copy(
        update={"kind": MemoryKind.SUMMARY, "attribute": None, "source_message_ids": ["m1", "m2"]}
    )
    other = record("B", "mem9", "Alice lives in Paris")  # another chat: never seen from A
    for i, (r, v) in enumerate([(paris, unit(0)), (summary, unit(1)), (other, unit(0))]):
        await store.apply_decision(decision(f"d{i}", DecisionOp.ADD, chat=r.chat_id, rec=r), v)
    berlin = record("A", "mem2", "Alice lives in Berlin", minutes=90).model_copy(
        update={"version": 2, "source_message_ids": ["m5"]}
    )
    await store.apply_decision(decision("d9", DecisionOp.UPDATE, rec=berlin, target="mem1", minutes=90), unit(0))

    slot = await store.find_memories("A", MemoryFilter(attribute="lives_in", kinds=["fact"]))
    assert [r.memory_id for r in slot] == ["mem2"]
    history = MemoryFilter(attribute="lives_in", kinds=["fact"], state="invalidated")
    assert [r.memory_id for r in await store.find_memories("A", history)] == ["mem1"]
    both = MemoryFilter(attribute="lives_in", kinds=["fact"], state="all")
    assert [r.memory_id for r in await store.find_memories("A", both)] == ["mem1", "mem2"]
    from_m1 = await store.find_memories("A", MemoryFilter(message_ids=["m1"]))
    assert [r.memory_id for r in from_m1] == ["sum1"]  # live only: the Paris fact is superseded
    stale = await store.find_memories("A", MemoryFilter(kinds=["fact"], state="invalidated"))
    assert [(r.memory_id, r.superseded_by) for r in stale] == [("mem1", "mem2")]
    every = await store.find_memories("A", MemoryFilter(message_ids=["m1", "m5"], state="all"))
    assert sorted(r.memory_id for r in every) == ["mem1", "mem2", "sum1"]
    assert await store.find_memories("A", MemoryFilter(message_ids=[])) == []
    assert [r.memory_id for r in await store.find_memories("B", MemoryFilter(state="all"))] == ["mem9"]


async def test_an_edited_message_is_found_by_its_new_text_only(store):
    await store.upsert_messages([msg("A", 1, "the meeting is at three"), msg("B", 1, "the meeting is at three")],
                                unit(0, 1).reshape(1, -1).repeat(2, axis=0))  # fmt: skip
    edited = msg("A", 1, "the meeting is at four").model_copy(update={"metadata": {"edit_history": ["x"]}})
    assert await store.replace_message(edited, unit(2)) is True
    assert await store.replace_message(msg("A", 7, "unknown"), None) is False
    [got] = await store.get_messages("A", ["m1"])
    assert got.text == "the meeting is at four" and got.metadata["edit_history"] == ["x"]
    assert [h.doc.text for h in await store.search(SearchQuery(chat_id="A", text="four", mode="bm25"))] == [
        "the meeting is at four"
    ]
    assert await store.search(SearchQuery(chat_id="A", text="three", mode="bm25")) == []
    knn = await store.search(SearchQuery(chat_id="A", text="", vector=unit(2).tolist(), mode="knn"))
    assert [h.doc.doc_id for h in knn][:1] == ["turn:A:m1"]
    assert len(await store.search(SearchQuery(chat_id="B", text="three", mode="bm25"))) == 1  # B untouched
    retracted = edited.model_copy(update={"text": ""})
    assert await store.replace_message(retracted, None) is True
    assert await store.search(SearchQuery(chat_id="A", text="four", mode="bm25")) == []
