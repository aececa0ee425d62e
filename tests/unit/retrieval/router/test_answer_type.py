"""The kind of value a question asks for, and whether a line states one (retrieval.router.answer_type)."""

from __future__ import annotations

import pytest

from retrieval.router.answer_type import asked_kind, states_kind


@pytest.mark.parametrize(("question", "kind"), [
    ("How much is the rent?", "quantity"),
    ("How many people are coming?", "quantity"),
    ("房租现在每月多少？", "quantity"),
    ("朵朵钢琴考到几级了？", "quantity"),
    ("When is the boiler being fixed?", "time"),
    ("What time do we leave?", "clock"),
    ("Which evening is choir practice?", "time"),
    ("What's the deadline for the grant report?", "time"),
    ("报名截止到哪天？", "time"),
    ("合唱排练几点开始？", "clock"),
    ("读书会是哪天？", "time"),
    ("瑜伽课现在改到星期几了？", "weekday"),
    ("Which day of the week is bin collection now?", "weekday"),
    ("Where does Kemal work now?", "place"),
    ("Which café are we meeting at?", "place"),
    ("周末聚餐去哪家？", "place"),
    ("她现在住在哪里？", "place"),
    ("Who brings the tent?", None),
    ("谁在教物理？", None),
])  # fmt: skip
def test_the_asked_kind(question, kind):
    assert asked_kind(question) == kind


def test_a_line_states_a_value_of_the_kind_or_not():
    assert states_kind("landlord is raising rent to 650 each from July", "quantity")
    assert states_kind("房租涨到四千五", "quantity") and states_kind("it's €12 a head", "quantity")
    assert not states_kind("new account for rent btw, I switched banks", "quantity")
    assert states_kind("boiler guy rescheduled, now next Tuesday morning", "time")
    assert states_kind("leaving 5pm instead", "time") and states_kind("改到周六下午", "time")
    assert not states_kind("the curry got cancelled, I'll do pasta instead", "time")


def test_a_new_day_of_the_month_is_no_new_day_of_the_week():
    asked = "瑜伽课现在改到星期几了？"
    assert states_kind("瑜伽课挪到周五晚上了", "weekday", asked) and states_kind("choir got shifted to a Wednesday", "weekday")
    bill = "好的，物业费的提醒我挪到每个月13号了"
    assert not states_kind(bill, "weekday", asked) and states_kind(bill, "time")  # a time all the same


def test_a_line_naming_only_the_asked_time_states_no_new_time_of_it():
    asked = "When is the June recital?"
    assert not states_kind("june recital programme is printed, looks great", "time", asked)
    assert states_kind("recital moved from june 14 to june 21", "time", asked)
    assert states_kind("june recital programme is printed, looks great", "time")  # without the question
    assert states_kind("学费涨到四千五", "quantity", "学费现在多少？") and states_kind("改到明天", "time", "几号考试？")


def test_an_ordinal_is_a_day_only_where_the_date_reader_reads_one():
    # "the 3rd floor" made a room reminder a newer time of the demo it was asked about
    assert not states_kind("reminder the room is C4 on the 3rd floor", "time")
    assert not states_kind("that's her 2nd try at the exam", "time")
    assert states_kind("can we push it to the 9th?", "time") and states_kind("June 3rd suits me", "time")
    assert states_kind("see you on the 21st", "time", "When is the tasting?")


def test_a_new_day_states_no_clock_time():
    # "What time does quiz night start?": the night moved to another day, its hour did not
    assert not states_kind("heads up, quiz night moves to thursdays from next week", "clock")
    assert states_kind("quiz night moves to thursdays, 8pm start", "clock") and states_kind("改到周四晚上八点", "clock")
    assert not states_kind("改到周四晚上", "clock") and states_kind("改到周四晚上", "time")


def test_a_time_is_no_amount_unless_the_question_asks_how_long():
    # a lesson slot "19:30-20:30" replaced the new hourly fee; a bill's new due date the new rent
    assert not states_kind("chemistry goes straight after biology, 19:30-20:30", "quantity", "What's the fee per hour now?")
    assert not states_kind("水费缴费日挪到每月5号了", "quantity", "房租现在每月多少？")
    assert states_kind("fee goes up to 45 an hour from may", "quantity", "What's the fee per hour now?")
    assert states_kind("房东讲从七月起要加到3800", "quantity", "房租现在每月多少？")
    # a question about how long counts the days and weeks a line names
    assert states_kind("vet says 10 days of rest", "quantity", "How long does the dog need to rest?")
    assert states_kind("要住院3天", "quantity", "要住院几天？")


def test_a_place_is_a_named_place_or_organisation_the_question_does_not_name():
    asked = "Where is the reunion dinner now?"
    assert states_kind("change of plan, we booked the back room at Osteria Marco in Leith", "place", asked)
    assert not states_kind("change of plan, dinner is an hour later, same place", "place", asked)
    assert states_kind("聚餐改到万达广场那家火锅店了", "place", "聚餐现在去哪里？")
    assert not states_kind("聚餐推迟一个小时，地方不变", "place", "聚餐现在去哪里？")
    # the city the question names is where, not what, it asks
    assert not states_kind("see you all in Glasgow", "place", "Which pub in Glasgow are we meeting at?")
    assert states_kind("see you all in Glasgow", "place", "Where are we meeting?")
