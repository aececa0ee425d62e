"""A correction states the new value and replaces the old one, in either language and whoever says it: it is a
change, never a retraction that leaves no successor."""

from __future__ import annotations

import pytest

from agents.consolidator import decide
from language.extract.corrections import corrected_value, denied_values, is_correction
from language.extract.event_slots import all_slots
from language.extract.slots import is_retraction
from schemas import DecisionOp
from tests.unit.agents.test_consolidator import RULES, _facts, _stored


def test_the_old_value_of_a_correction_is_found_in_both_languages():
    assert corrected_value("oops, the meetup is on Wednesday the 9th, not Tuesday.") == "Tuesday"
    assert corrected_value("She works in Lisbon, not Porto") == "Porto"
    assert corrected_value("the recital is not at 6 but at 7:30") == "6"
    assert corrected_value("口误，汇报是下午三点，不是两点") == "两点"
    assert corrected_value("不是周四，是周五交作业") == "周四"


def test_hedges_and_ordinary_negations_are_no_correction():
    for s in ("I liked the film, not sure about the ending though", "We're close, not there yet",
              "the soup was fine, not bad at all", "我不是不想帮你，是真的没空", "他是你表哥，不是吗？",
              "Nobody came to the meeting"):  # fmt: skip
        assert not corrected_value(s), s
    assert is_correction("scratch that, I meant the blue folder")
    assert is_correction("刚才说错了，我们住三楼")
    assert not is_correction("The blue folder is on the shelf")


def test_a_correction_is_a_change_not_a_retraction():
    assert not is_retraction("my mistake, the ferry leaves at 9:40, not 9:15")
    assert not is_retraction("刚才说错了，是302房间，不是203")


def test_a_corrected_time_is_the_new_value_not_the_old_one():
    (en,) = all_slots("correction: the potluck is Sunday May 3, not Saturday", "Jo", frozenset({"Jo"}), event="potluck")
    assert en.attribute == "when" and en.value == "Sunday May 3"
    zh = all_slots("纠正一下，体检是6月3号，不是6月5号", "阿梅", frozenset({"阿梅"}), event="体检")
    assert [(s.attribute, s.value) for s in zh] == [("when", "6月3号")]


def test_a_correction_replaces_the_fact_holding_the_old_value():
    old = _stored("Noor lives in Ghent", subject="Noor", attribute="lives_in")
    (cand,) = _facts([("Noor", "ugh, typo before: I live in Bruges, not Ghent")])
    assert "Bruges" in cand.text
    d = decide(cand, [(old, 0.5)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old" and "Bruges" in d.record.text


def test_a_zh_time_correction_with_no_event_named_replaces_the_plans_time_only():
    when = _stored("周六的团建定在7月12号，在植物园", subject="团建", attribute="when")
    where = _stored("周六的团建地点：植物园", subject="团建", attribute="where", memory_id="mem-where")
    facts = [f for f in _facts([("阿杰", "更正一下，团建是7月13号，不是12号")]) if "13" in f.text]
    assert facts
    d = decide(facts[0], [(when, 0.5), (where, 0.45)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old"
    assert decide(facts[0], [(where, 0.5)], RULES, "ev-1").op == DecisionOp.ADD  # the place is not changed


def test_two_changes_by_one_person_do_not_replace_each_other_through_who_said_them():
    first = _stored("阿杰说：更正一下，团建是7月13号，不是12号", subject="阿杰")
    (cand,) = [f for f in _facts([("阿杰", "地点也变了，改去江边的露营地")]) if "露营" in f.text]
    assert decide(cand, [(first, 0.5)], RULES, "ev-1").op == DecisionOp.ADD


def test_giving_up_a_task_while_asking_for_help_retracts_it():
    (took,) = [f for f in _facts([("Ines", "I'll take care of the playlist for the picnic")]) if f.attribute == "owner"]
    old = _stored(took.text, subject=took.subject, attribute="owner").model_copy(update={"value": took.value})
    (gave_up,) = [f for f in _facts([("Ines", "so I'm not doing the playlist anymore, can someone else?")])
                  if f.negated]  # fmt: skip
    d = decide(gave_up, [(old, 0.6)], RULES, "ev-1")
    assert d.op == DecisionOp.DELETE and d.target_memory_id == "mem-old"
    (other,) = [f for f in _facts([("Ines", "I'm not drinking coffee anymore, any tips?")]) if f.negated]
    assert decide(other, [(old, 0.6)], RULES, "ev-1").op != DecisionOp.DELETE  # another matter
    zh = _facts([("阿梅", "野餐的水果我不带了，谁能带一下？")])
    assert any(f.negated and "水果" in f.text for f in zh)  # the change is kept, the question is not a fact


@pytest.mark.parametrize(("sentence", "denied"), [
    ("correction, it's the 29th not the 26th, the venue needs more time", ["26th"]),
    ("we do wednesdays instead of Thursdays now", ["Thursdays"]),
    ("the dentist is no longer on Monday", ["Monday"]),
    ("不是周五了，改到下周二", ["周五"]),
    ("not sure about sundays, maybe", []),  # a hedge names no value
    ("I'm not going anymore", []),
])  # fmt: skip
def test_the_values_a_line_says_are_not_so(sentence, denied):
    assert denied_values(sentence) == denied
