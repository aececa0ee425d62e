"""Derived records that state a superseded value are rewritten or invalidated (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents.consolidate.derived import (
    Staleness,
    derived_invalidations,
    edited_away,
    edited_noops_to_updates,
    stale_statements,
)
from schemas import CandidateFact, DecisionOp, MemoryDecision, MemoryKind, MemoryRecord

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def rec(mid, text, kind=MemoryKind.FACT, sources=("m1",), attribute=None, value=None, days=0, topic="t1"):
    return MemoryRecord(memory_id=mid, chat_id="c", kind=kind, text=text, subject="小王" if attribute else None,
                        attribute=attribute, value=value, topic_id=topic, valid_from=T0 + timedelta(days=days),
                        source_message_ids=list(sources), source_event_id="ev")  # fmt: skip


def update(old: MemoryRecord, new: MemoryRecord, days=10) -> MemoryDecision:
    return MemoryDecision(decision_id=f"d-{new.memory_id}", op=DecisionOp.UPDATE, chat_id="c",
                          target_memory_id=old.memory_id, record=new, reason="changed", source_event_id="ev2",
                          at=T0 + timedelta(days=days))  # fmt: skip


OLD = rec("f1", "小王住在北京朝阳区", attribute="lives_in", value="北京朝阳区")
NEW = rec("f2", "小王刚搬到杭州西湖区了", sources=("m9",), attribute="lives_in", value="杭州西湖区", days=10, topic="t2")


def test_a_value_change_is_stale_but_more_detail_is_not():
    assert [s.old.memory_id for s in stale_statements([update(OLD, NEW)], {"f1": OLD})] == ["f1"]
    detail = rec("f3", "小王住在北京朝阳区望京", sources=("m5",), attribute="lives_in", value="北京朝阳区望京", days=3)
    assert stale_statements([update(OLD, detail)], {"f1": OLD}) == []


def test_summaries_lose_the_stale_sentence_and_titles_and_qa_go():
    [st] = stale_statements([update(OLD, NEW)], {"f1": OLD})
    summary = rec("s1", "小王: 我住在北京朝阳区，太远了。 李雷: 周末一起吃饭吧。", MemoryKind.SUMMARY, ("m1", "m2"))
    only = rec("s2", "小王: 我住在北京朝阳区。", MemoryKind.SUMMARY, ("m1",))
    title = rec("t1", "北京、朝阳区", MemoryKind.TITLE, ("m1",))
    qa = rec("q1", "Q: 你住哪？ A: 小王: 北京朝阳区", MemoryKind.QA, ("m0", "m1"))
    unrelated = rec("s3", "李雷: 北京朝阳区的烤鸭不错", MemoryKind.SUMMARY, ("m7",), topic="t7")
    out = {d.target_memory_id: d for d in derived_invalidations([st], [summary, only, title, qa, unrelated])}
    assert out["s1"].op == DecisionOp.UPDATE and "北京" not in out["s1"].record.text
    assert "吃饭" in out["s1"].record.text and out["s1"].record.version == 2
    assert out["s1"].record.source_message_ids == ["m2"]
    assert out["s2"].op == out["t1"].op == out["q1"].op == DecisionOp.DELETE
    assert "s3" not in out  # another topic's text that merely names the place is not about this statement


def test_a_record_written_later_that_repeats_an_old_statement_is_rewritten():
    closed = OLD.model_copy(update={"valid_to": T0 + timedelta(days=10), "superseded_by": "f2"})
    st = Staleness.of_record(closed, NEW)
    later = rec("s9", "小王: 我住在北京朝阳区。 小王: 周末去西湖。", MemoryKind.SUMMARY, ("m1", "m4"), days=12)
    [d] = derived_invalidations([st], [later])
    assert d.op == DecisionOp.UPDATE and d.record.text == "小王: 周末去西湖。"
    assert Staleness.of_record(closed, rec("f4", "小王住在北京朝阳区望京", attribute="lives_in")) is None


def _cand(fid, text, sources):
    return CandidateFact(fact_id=fid, chat_id="c", topic_id="t1", text=text, event_time=T0,
                         source_message_ids=list(sources))  # fmt: skip


def test_an_edit_supersedes_what_the_old_text_said():
    lunch = rec("f5", "The team lunch is at 12:00", sources=("m5",))
    other = rec("f6", "Bob likes ramen", sources=("m6",))
    cand = _cand("x", "The team lunch is at 13:00", ["m5"])
    noop = MemoryDecision(decision_id="d", op=DecisionOp.NOOP, chat_id="c", target_memory_id="f5", reason="near",
                          source_event_id="r", candidate_fact_id="x", at=T0)  # fmt: skip
    [upd] = edited_noops_to_updates([cand], [noop], {"f5": lunch}, ["m5"])
    assert upd.op == DecisionOp.UPDATE and upd.target_memory_id == "f5" and "13:00" in upd.record.text
    gone = edited_away(["m5"], [lunch, other, rec("f7", "Lunch is at the canteen", sources=("m5",))], [upd],
                       [cand.text], "r", T0)  # fmt: skip
    assert [d.target_memory_id for d in gone] == ["f7"] and gone[0].op == DecisionOp.DELETE


def test_a_change_no_slot_names_rewrites_the_summary_sentence_that_restates_the_old_fact():
    """"吉他学不下去了，现在改练钢琴" replaces "小王最近在学吉他" with no slot (no value): the topic summary's
    sentence restating it goes, the one stating the change (or anything else) stays."""
    old = rec("f1", "小王最近在学吉他", sources=("m2",)).model_copy(update={"subject": "小王", "speaker": "小王"})
    new = rec("f2", "小王说：吉他学不下去了，现在改练钢琴", sources=("m6",), days=14, topic="t2")
    new = new.model_copy(update={"subject": "小王", "speaker": "小王"})
    [st] = stale_statements([update(old, new)], {"f1": old})
    summary = rec("s1", "小王: 我最近在学吉他。 小李: 项目周报周五前交给张经理。", MemoryKind.SUMMARY, ("m2", "m3"))
    later = rec("s2", "小王: 吉他学不下去了，现在改练钢琴。", MemoryKind.SUMMARY, ("m6",), days=14, topic="t2")
    title = rec("t1", "吉他、周报", MemoryKind.TITLE, ("m2", "m3"))
    out = {d.target_memory_id: d for d in derived_invalidations([st], [summary, later, title])}
    assert out["s1"].op == DecisionOp.UPDATE and out["s1"].record.text == "小李: 项目周报周五前交给张经理。"
    assert "s2" not in out and "t1" not in out  # the new claim, and a title that only names the thing
    assert st.states_old("Caroline: I have been learning the guitar.") is False  # other words entirely


def test_restating_needs_the_same_person_and_enough_of_the_fact():
    """Another person saying the same of themselves, or a two-word fact, is not the superseded statement."""
    from agents.consolidate.derived import restates

    def fact(text, who, mid="m1"):
        return rec(mid, text, sources=(mid,)).model_copy(update={"subject": who, "speaker": who})

    old = fact("Caroline went to a LGBTQ support group yesterday", "Caroline")
    assert restates("Caroline: I went to a LGBTQ support group yesterday.", old)
    assert not restates("Melanie went to the LGBTQ support group yesterday too", old)  # someone else
    assert not restates("Melanie: I went to a LGBTQ support group yesterday.", old)
    assert not restates("Ann likes pizza", fact("Bob likes pizza", "Bob"))  # another subject
    assert not restates("Bob: I like pizza", fact("Bob likes pizza", "Bob"))  # two words: too little to tell
    wang = fact("小王最近在学吉他", "小王")
    assert restates("小王: 我最近在学吉他。", wang)
    assert not restates("小李最近也在学吉他", wang)
    assert not restates("小王: 吉他学不下去了，现在改练钢琴。", wang, "小王说：吉他学不下去了，现在改练钢琴")


def test_a_rewritten_summary_keeps_an_abbreviation_inside_its_sentence():
    old = rec("f5", "Wiebke lives in Leeds", attribute="lives_in", value="Leeds")
    new = rec("f6", "Wiebke moved to York", sources=("m9",), attribute="lives_in", value="York", days=10, topic="t2")
    [st] = stale_statements([update(old, new)], {"f5": old})
    summary = rec("s5", "Wiebke: my flat is on St. Aidan's Road in Leeds. Jonas: the quiz is on friday.",
                  MemoryKind.SUMMARY, ("m1", "m2"))  # fmt: skip
    [d] = derived_invalidations([st], [summary])
    assert d.record.text == "Jonas: the quiz is on friday."  # no "…on St." left of the stale sentence
