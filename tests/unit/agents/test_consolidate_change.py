"""A stated change replaces the fact it changes, even with no slot to settle it ("吉他学不下去了，现在改练钢琴"
replaces "小王最近在学吉他"); the router then tells the old raw turn apart from a more detailed restatement."""

from __future__ import annotations

from datetime import timedelta

from agents.consolidator import decide
from schemas import DecisionOp
from tests.unit.agents.test_consolidator import RULES, T0, _facts, _stored


def test_a_zh_change_said_without_a_subject_updates_the_speakers_fact():
    old = _stored("小王最近在学吉他", subject="小王")
    facts = _facts([("小王", "吉他学不下去了，现在改练钢琴")])
    assert facts and facts[0].subject == "小王"  # pro-drop: the speaker's own change
    d = decide(facts[0], [(old, 0.4)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old" and "钢琴" in d.record.text


def test_an_en_change_updates_the_fact_it_names():
    old = _stored("Alice drinks green tea every morning", subject="Alice")
    (cand,) = _facts([("Alice", "I quit green tea, it's black coffee for me now.")])
    d = decide(cand, [(old, 0.5)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old"


def test_no_change_cue_or_nothing_shared_adds():
    old = _stored("Alice drinks green tea every morning", subject="Alice")
    (same_topic,) = _facts([("Alice", "I bought a new teapot for the green tea.")])
    assert decide(same_topic, [(old, 0.5)], RULES, "ev-1").op == DecisionOp.ADD
    (other,) = _facts([("Alice", "I quit the gym last week, too expensive.")])
    assert decide(other, [(old, 0.2)], RULES, "ev-1").op == DecisionOp.ADD


def test_a_word_shared_only_once_stemmed_or_as_a_name_is_no_common_thing():
    # "booked" and "book" share a stem, not a thing: the group's new novel is no new venue booking
    old = _stored("Wen and others booked the big table at Marrow for Friday", subject="Wen")
    (cand,) = _facts([("Wen", "we switched the book, everyone voted for Kindred instead")])
    assert decide(cand, [(old, 0.5)], RULES, "ev-1").op == DecisionOp.ADD
    (moved,) = _facts([("Wen", "we switched the big table to the library instead of Marrow")])
    assert decide(moved, [(old, 0.5)], RULES, "ev-1").op == DecisionOp.UPDATE  # "table", as written


def test_a_change_never_rewrites_what_was_said_after_it():
    old = _stored("Alice drinks green tea every morning", subject="Alice", at=T0 + timedelta(days=3))
    (cand,) = _facts([("Alice", "I quit green tea, it's black coffee for me now.")])
    assert decide(cand, [(old, 0.5)], RULES, "ev-1").op != DecisionOp.UPDATE


def test_a_plan_change_naming_the_event_by_another_word_updates_it():
    old = _stored("Kim's dentist appointment is on June 12 at 3pm", subject="appointment", attribute="when")
    (cand,) = [f for f in _facts([("Kim", "The dentist called, they pushed it to June 14, same time")])
               if f.attribute == "when"]  # fmt: skip
    assert cand.subject == "dentist" and cand.value == "June 14"
    d = decide(cand, [(old, 0.5)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old"
    other = _stored("The team lunch is on June 12", subject="lunch", attribute="when")
    assert decide(cand, [(other, 0.5)], RULES, "ev-1").op == DecisionOp.ADD  # no word of the event in it


def test_what_the_user_says_to_have_it_kept_is_not_part_of_the_fact():
    (fact,) = [f for f in _facts([("Kim", "Hey bot, remember that my dentist appointment is on June 12 at 3pm"),
                                  ("Bot", "Got it.")]) if f.speaker == "Kim"]  # fmt: skip
    assert fact.text.startswith("Kim's dentist appointment is on June 12")
    facts = _facts([("小王", "帮我记一下，小李的生日是5月3号")])
    assert facts and not any(f.text.startswith("帮我记") for f in facts)


def test_a_near_duplicate_needs_shared_words_not_only_a_high_cosine():
    """4-bit multilingual-e5 puts unrelated facts of one person at cosine ~0.95: the new one was dropped."""
    old = _stored("小美在减肥，晚饭不吃主食", subject="小美")
    (coffee,) = _facts([("小美", "我现在每天早上喝黑咖啡")])
    assert decide(coffee, [(old, 0.953)], RULES, "ev-1").op == DecisionOp.ADD
    (again,) = _facts([("小美", "我在减肥，晚饭不吃主食哦")])
    assert decide(again, [(old, 0.99)], RULES, "ev-1").op == DecisionOp.NOOP


def test_instead_of_replaces_the_fact_holding_what_it_names():
    old = _stored("Marco picks The Remains of the Day for next month", subject="Marco")
    (cand,) = _facts([("Marco", "Change of plan: I'd rather do Klara and the Sun instead of The Remains of the Day.")])
    d = decide(cand, [(old, 0.4)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old"
    other = _stored("Marco picks Piranesi for the reading list", subject="Marco")
    assert decide(cand, [(other, 0.4)], RULES, "ev-1").op == DecisionOp.ADD  # it names another book


def test_a_plan_change_naming_no_event_takes_the_latest_planned_one():
    old = _stored("The club is this Thursday at 7pm", subject="club", attribute="when", at=T0 - timedelta(days=1))
    old = old.model_copy(update={"value": "this Thursday at 7pm"})
    (moved,) = _facts([("Marco", "Thursday moved to Friday 8pm btw.")])
    d = decide(moved, [(old, 0.0)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old" and d.record.value == "Friday"
    (job,) = _facts([("Priya", "I left Stripe, I'm at Figma now.")])
    assert decide(job, [(old, 0.0)], RULES, "ev-1").record.subject != "club"  # "now" moves no plan
    stale = _stored("The club is this Thursday at 7pm", subject="club", attribute="when", at=T0 - timedelta(days=30))
    assert decide(moved, [(stale, 0.0)], RULES, "ev-1").op == DecisionOp.ADD  # a plan of a month ago


def test_values_are_found_on_word_boundaries():
    from agents.consolidate.records import value_in

    assert value_in("Sure, Marco's place works", "Marco's")
    assert not value_in("Olive said next month Marco picks", "Olive's")
    assert not value_in("Joanna adopted a cat", "Ann")
    assert value_in("小王搬到杭州了", "杭州")



def test_a_change_naming_something_else_takes_no_planned_event():
    from language.extract.event_slots import all_slots

    people = frozenset({"Victor", "Ivan"})
    assert all_slots("Farewell drinks time changed to 6pm.", "Victor", people, event="interview") == []
    moved = all_slots("Victor said Thursday moved to Friday 8pm.", "Victor", people, event="interview")
    assert [(f.attribute, f.subject, f.value) for f in moved] == [("when", "interview", "Friday 8pm")]


def test_a_one_off_instead_replaces_no_habit():
    old = _stored("Alice drinks coffee every morning", subject="Alice")
    (once,) = _facts([("Alice", "I had green tea instead of coffee this morning, the machine broke.")])
    assert decide(once, [(old, 0.5)], RULES, "ev-1").op != DecisionOp.UPDATE
    (habit,) = _facts([("Alice", "I drink green tea instead of coffee now, doctor's orders.")])
    d = decide(habit, [(old, 0.5)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old"
