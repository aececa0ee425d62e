"""The pure re-segmentation core: the diff of two segmentations, scope selection, plans and rollbacks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agents.config import SegmenterConfig
from agents.resegment import (
    hide_decisions,
    plan_repairs,
    plan_resegment,
    plan_rollback,
    restore_decisions,
    restore_id,
    select_scope,
    topic_level_records,
    version_events,
    version_summaries,
)
from agents.segmentation_diff import TopicSet, diff_segmentations, main_topics
from schemas import ChatMessage, DecisionOp, MemoryKind, MemoryRecord, TopicSummary
from schemas.segmentation import SegmentationVersion

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def ts(*groups: tuple[str, str]) -> list[TopicSet]:
    """TopicSets from ``(id, "m1 m2 ...")`` pairs."""
    return [TopicSet(tid, tuple(ids.split())) for tid, ids in groups]


def kinds(diff) -> dict[str, int]:
    return dict(diff.counts)


def test_identical_segmentations_are_unchanged_with_full_agreement():
    old = ts(("a", "1 2 3"), ("b", "4 5"))
    d = diff_segmentations(old, ts(("a", "1 2 3"), ("b", "4 5")))
    assert kinds(d) == {"unchanged": 2} and not d.changed
    assert (d.moved_messages, d.one_to_one, d.vi, d.messages) == (0, 100.0, 100.0, 5)


def test_a_split_moves_the_smaller_part():
    d = diff_segmentations(ts(("a", "1 2 3 4 5")), ts(("x", "1 2 3"), ("y", "4 5")))
    assert kinds(d) == {"split": 1}
    (change,) = d.changes
    assert change.old == ["a"] and change.new == ["x", "y"] and change.moved == 2
    assert d.moved_messages == 2 and d.one_to_one == 60.0 and d.vi < 100.0
    assert (d.topics_before, d.topics_after) == (1, 2)


def test_a_merge_and_an_unchanged_topic():
    old = ts(("a", "1 2"), ("b", "3 4 5"), ("c", "6"))
    d = diff_segmentations(old, ts(("x", "1 2 3 4 5"), ("c", "6")))
    assert kinds(d) == {"merge": 1, "unchanged": 1}
    merge = next(c for c in d.changes if c.kind == "merge")
    assert merge.old == ["a", "b"] and merge.new == ["x"] and merge.moved == 2 and merge.messages == 5


def test_reshaped_modified_new_and_dropped():
    old = ts(("a", "1 2 3"), ("b", "4 5 6"), ("c", "7 8"), ("d", "9"))
    new = ts(("x", "1 2 4"), ("y", "3 5 6"), ("z", "7 8 10"), ("w", "11"))
    d = diff_segmentations(old, new)
    assert kinds(d) == {"reshaped": 1, "modified": 1, "new": 1, "dropped": 1}
    by_kind = {c.kind: c for c in d.changes}
    assert by_kind["reshaped"].old == ["a", "b"] and sorted(by_kind["reshaped"].new) == ["x", "y"]
    assert by_kind["modified"].old == ["c"] and by_kind["modified"].new == ["z"]
    assert by_kind["new"].new == ["w"] and by_kind["dropped"].old == ["d"]
    assert d.moved_messages == 2  # 3 and 4 under the best pairing a-x, b-y


def test_soft_members_count_for_their_earliest_topic():
    topics = ts(("a", "1 2 3"), ("b", "3 4"))
    assert main_topics(topics) == {"1": "a", "2": "a", "3": "a", "4": "b"}
    d = diff_segmentations(topics, ts(("a", "1 2 3"), ("b2", "4")))
    assert kinds(d) == {"unchanged": 1, "modified": 1} and d.moved_messages == 0


def msg(mid: str, minutes: float, sender: str = "u1", text: str = "hello there", **kw) -> ChatMessage:
    return ChatMessage(chat_id="c", message_id=mid, sender=sender, ts=T0 + timedelta(minutes=minutes), text=text,
                       **kw)  # fmt: skip


def topic(tid: str, ids: list[str], state: str = "closed", version: int = 1) -> TopicSummary:
    return TopicSummary(chat_id="c", topic_id=tid, state=state, message_ids=ids, participants=["u1"],
                        started_at=T0, last_active_at=T0 + timedelta(minutes=len(ids)),
                        segmentation_version=version)  # fmt: skip


def test_scope_takes_touched_topics_whole_and_leaves_active_ones_to_the_stream():
    topics = [topic("t1", ["m1", "m2"]), topic("t2", ["m3", "m4"]), topic("t3", ["m5"], state="active"),
              topic("t0", ["m0"], state="superseded")]  # fmt: skip
    scope = select_scope(topics, [msg("m2", 2), msg("m3", 3), msg("m5", 5), msg("m6", 6)])
    assert [t.topic_id for t in scope.topics] == ["t1", "t2"]
    assert scope.message_ids == ["m2", "m3", "m6", "m1", "m4"] and scope.skipped_active == 1


def test_plan_keeps_ids_of_identical_topics_and_derives_new_ids_from_the_version():
    msgs = [msg("m1", 0), msg("m2", 1, reply_to="m1"), msg("m3", 60, sender="u2", text="other things")]
    old = [topic("t-a", ["m1", "m2", "m3"])]
    strict = SegmenterConfig(threshold=9.0, idle_close_s=300.0)
    plan = plan_resegment("c", 2, old, msgs, None, strict)
    assert [t.message_ids for t in plan.new] == [["m1", "m2"], ["m3"]]
    assert kinds(plan.diff) == {"split": 1} and [t.topic_id for t in plan.superseded] == ["t-a"]
    again = plan_resegment("c", 3, old, msgs, None, strict)
    assert {t.topic_id for t in plan.created}.isdisjoint(t.topic_id for t in again.created)
    same = plan_resegment("c", 2, [topic("x", ["m1", "m2"]), topic("y", ["m3"])], msgs, None, strict)
    assert [t.topic_id for t in same.new] == ["x", "y"] and not same.created and not same.diff.changed
    with pytest.raises(ValueError):
        plan_resegment("c", 1, old, msgs, None, strict)


def test_effects_of_a_plan_name_the_superseded_topics():
    msgs = [msg("m1", 0), msg("m2", 1, reply_to="m1"), msg("m3", 60, sender="u2", text="other things")]
    plan = plan_resegment("c", 2, [topic("t-a", ["m1", "m2", "m3"])], msgs, None,
                          SegmenterConfig(threshold=9.0, idle_close_s=300.0))  # fmt: skip
    by_id = {m.message_id: m for m in msgs}
    events = version_events(plan, by_id)
    assert [e.message_ids for e in events] == [["m1", "m2"], ["m3"]]
    assert all(e.segmentation_version == 2 and e.related_topic_ids == ["t-a"] and e.reason == "resegment:v2"
               for e in events)  # fmt: skip
    assert events[1].at == by_id["m3"].ts
    gone, made = version_summaries(plan, by_id)
    assert [(t.topic_id, t.state) for t in gone] == [("t-a", "superseded")]
    assert [t.segmentation_version for t in made] == [2, 2] and made[0].started_at == by_id["m1"].ts


def record(mid: str, topic_id: str, kind: MemoryKind, live: bool = True, valid_to: datetime | None = None):
    return MemoryRecord(memory_id=mid, chat_id="c", kind=kind, text=f"text {mid}", topic_id=topic_id,
                        valid_from=T0, valid_to=None if live else (valid_to or T0), source_message_ids=["m1"],
                        source_event_id="e")  # fmt: skip


def test_hide_and_restore_decisions_never_rewrite_history():
    recs = [record("s1", "t-a", MemoryKind.SUMMARY), record("f1", "t-a", MemoryKind.FACT),
            record("s0", "t-a", MemoryKind.TITLE, live=False)]  # fmt: skip
    level = topic_level_records(recs, ["t-a"])
    assert [r.memory_id for r in level] == ["s1"]  # facts and closed versions are left alone
    at = T0 + timedelta(days=1)
    (hide,) = hide_decisions(level, "resegment", 2, at, "why")
    assert hide.op == DecisionOp.DELETE and hide.target_memory_id == "s1" and hide.at == at
    (restore,) = restore_decisions([recs[2]], 2, at)
    assert restore.op == DecisionOp.ADD and restore.record.memory_id == restore_id("s0", 2)
    assert restore.record.live and restore.record.version == 2 and restore.record.text == "text s0"


def test_rollback_plan_restores_what_the_version_invalidated():
    created_at = T0 + timedelta(days=1)
    entry = SegmentationVersion(chat_id="c", version=2, superseded_topic_ids=["t-a"], new_topic_ids=["t-x"],
                                memories_created=["sx"], memories_invalidated=["f-old"], created_at=created_at)  # fmt: skip
    topics = [topic("t-a", ["m1"], state="superseded"), topic("t-x", ["m1"], version=2), topic("t-b", ["m2"])]
    recs = [
        record("sa", "t-a", MemoryKind.SUMMARY, live=False, valid_to=created_at),  # hidden by the version
        record("sa0", "t-a", MemoryKind.SUMMARY, live=False, valid_to=T0),  # an older version: stays closed
        record("f-old", "t-b", MemoryKind.FACT, live=False),  # updated by a fact of the new topic
        record("sx", "t-x", MemoryKind.SUMMARY),
        record("fx", "t-x", MemoryKind.FACT),
        record("fb", "t-b", MemoryKind.FACT),
    ]
    plan = plan_rollback(entry, topics, recs)
    assert [t.topic_id for t in plan.hide_topics] == ["t-x"] and [
        t.topic_id for t in plan.restore_topics
    ] == ["t-a"]
    assert sorted(r.memory_id for r in plan.hide_records) == ["fx", "sx"]
    assert sorted(r.memory_id for r in plan.restore_records) == ["f-old", "sa"]
    restored = [recs[0].model_copy(update={"memory_id": restore_id("sa", 2), "valid_to": None})]
    again = plan_rollback(entry, topics, recs + restored)
    assert [r.memory_id for r in again.restore_records] == ["f-old"]  # never restored twice


def test_audit_repairs_become_a_version_with_each_topic_repaired_once():
    from agents.topic_audit import MergeProposal, SplitProposal

    topics = {t.topic_id: t for t in [
        topic("a", ["1", "2", "3", "4"]), topic("b", ["5", "6"]), topic("c", ["7"]),
        topic("d", ["8", "9"], state="superseded"),
    ]}  # fmt: skip
    split = SplitProposal(topic_id="a", parts=[["1", "2"], ["3", "4"]], part_topic_ids=["a.p0", "a.p1"],
                          participants=[["u1"], ["u2"]], breaks=[], reason="semantic break")  # fmt: skip

    def merge(keep: str, *others: str) -> MergeProposal:
        ids = [m for t in (keep, *others) for m in topics[t].message_ids]
        return MergeProposal(keep_topic_id=keep, merged_topic_ids=list(others), message_ids=ids,
                             participants=["u1"], similarity=0.9, shared_participants=["u1"], gap_s=60,
                             reason="near duplicate")  # fmt: skip

    plan = plan_repairs("c", 3, topics, [split], [merge("b", "c"), merge("a", "b"), merge("b", "d")])
    assert [t.topic_id for t in plan.superseded] == ["a", "b", "c"]  # a merge touching a repaired or
    assert [t.message_ids for t in plan.created] == [["1", "2"], ["3", "4"], ["5", "6", "7"]]  # stale topic: skipped
    assert len({t.topic_id for t in plan.created}) == 3 and not {"a", "b", "c"} & {t.topic_id for t in plan.created}
    assert plan.diff.count("split") == 1 and plan.diff.count("merge") == 1
    again = plan_repairs("c", 4, topics, [split], [])
    assert {t.topic_id for t in again.created}.isdisjoint(t.topic_id for t in plan.created)  # ids per version
