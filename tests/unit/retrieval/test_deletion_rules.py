"""retrieval.deletion: what a user's deletion removes from a store, decided once for every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retrieval.deletion import affected_topics, doomed_memories, reopened, to_redistil, trim_topic
from schemas import MemoryKind, MemoryRecord, TopicSummary

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def rec(mid: str, sources: list[str], *, kind=MemoryKind.FACT, speaker=None, topic="t1", closed_by=None,
        closed: bool = False) -> MemoryRecord:  # fmt: skip
    return MemoryRecord(
        memory_id=mid, chat_id="c", kind=kind, text=mid, speaker=speaker, topic_id=topic, valid_from=T0,
        valid_to=T0 + timedelta(hours=1) if closed or closed_by else None, superseded_by=closed_by,
        source_message_ids=sources, source_event_id="e",
    )  # fmt: skip


def test_derived_spoken_and_topic_wide_records_are_doomed():
    records = [
        rec("own", ["u1"], speaker="Mallory"),
        rec("qa", ["b1", "u1"], kind=MemoryKind.QA),  # mixes their message with others'
        rec("spoken", ["b2"], speaker="mallory"),  # attributed to them
        rec("summary", ["b1"], kind=MemoryKind.SUMMARY),  # sources others only, drawn from their topic
        rec("title", ["b1"], kind=MemoryKind.TITLE),
        rec("bobs", ["b1"], speaker="Bob"),  # others' fact in the same topic stays
        rec("elsewhere", ["b3"], kind=MemoryKind.SUMMARY, topic="t2"),
    ]
    topics = affected_topics(records, [], {"u1"})
    assert topics == {"t1"}
    assert set(doomed_memories(records, {"u1"}, {"mallory", "Mallory"}, topics)) == {
        "own", "qa", "spoken", "summary", "title"
    }  # fmt: skip


def test_a_version_only_their_update_replaced_is_live_again():
    records = [
        rec("v1", ["b1"], closed_by="v2"),  # Bob's, replaced by their update
        rec("v2", ["u1"]),  # theirs, live
        rec("w1", ["b2"], closed_by="w2"),  # replaced by theirs, which Carol's replaced in turn
        rec("w2", ["u2"], closed_by="w3"),
        rec("w3", ["c1"]),
        rec("x1", ["b3"], closed_by="x2"),  # replaced by theirs, which a retraction closed
        rec("x2", ["u3"], closed=True),
    ]
    doomed = doomed_memories(records, {"u1", "u2", "u3"}, set())
    assert set(doomed) == {"v2", "w2", "x2"}
    back = reopened(records, doomed)
    assert [(r.memory_id, r.valid_to, r.superseded_by) for r in back] == [("v1", None, None)]


def test_topics_lose_their_messages_and_name_or_go():
    topic = TopicSummary(chat_id="c", topic_id="t1", state="closed", message_ids=["b1", "u1", "b2"],
                         participants=["Bob", "Mallory"], started_at=T0, last_active_at=T0, title="x")  # fmt: skip
    trimmed = trim_topic(topic, {"u1"}, {"mallory", "Mallory"})
    assert trimmed.message_ids == ["b1", "b2"] and trimmed.participants == ["Bob"] and trimmed.title is None
    assert trim_topic(topic, {"b1", "u1", "b2"}, set()) is None
    assert trim_topic(topic, {"zz"}, {"Carol"}) is topic


def test_closed_topics_that_lose_messages_and_keep_others_are_distilled_again():
    def topic(tid: str, ids: list[str], state: str = "closed") -> TopicSummary:
        return TopicSummary(chat_id="c", topic_id=tid, state=state, message_ids=ids, participants=[],
                            started_at=T0, last_active_at=T0)  # fmt: skip

    topics = [topic("shared", ["b1", "u1"]), topic("theirs", ["u2"]), topic("others", ["b2"]),
              topic("open", ["b3", "u3"], state="active"), topic("merged", ["b4", "u4"], state="merged")]  # fmt: skip
    assert to_redistil(topics, {"u1", "u2", "u3", "u4"}) == ["shared"]
