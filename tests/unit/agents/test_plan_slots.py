"""Plan slots (when/where of an event, owner of a task) in English and Chinese."""

from __future__ import annotations

import pytest

from language.extract.event_slots import all_slots, find_plan_slots

NAMES = frozenset({"Alice", "Bob", "Carol", "小王", "小李", "李雷"})


@pytest.mark.parametrize(
    ("text", "speaker", "expected"),
    [
        ("Our weekly sync is on Tuesday at 10am.", "Alice", ("sync", "when", "Tuesday at 10am")),
        ("Heads up: the sync moves to Wednesday.", "Alice", ("sync", "when", "Wednesday")),
        ("The migration is planned for May 20.", "Bob", ("migration", "when", "May 20")),
        ("The migration is postponed to June 3.", "Bob", ("migration", "when", "June 3")),
        ("Reminder: standup tomorrow at 9:30.", "Bob", ("standup", "when", "tomorrow at 9:30")),
        ("Dinner moved to Casa Nova.", "Bob", ("dinner", "where", "Casa Nova")),
        ("We're not doing brunch at Lula's anymore, it's at Home Cafe now.", "Bob", ("brunch", "where", "Home Cafe")),
        ("Dinner is at Nobu, not at Zuma.", "Bob", ("dinner", "where", "Nobu")),
        ("Don't forget brunch is at Lula's on Sunday at 11.", "Bob", ("brunch", "where", "Lula's")),
        ("Brunch moved to Home Cafe on Sunday at 11, parking at Union Square garage.", "Bob",
         ("brunch", "where", "Home Cafe")),
        ("Bob will write the release notes by Thursday.", "Alice", ("release notes", "owner", "Bob")),
        ("Actually Carol takes the release notes.", "Alice", ("release notes", "owner", "Carol")),
        ("I'll handle the budget report.", "Carol", ("budget report", "owner", "Carol")),
        ("聚餐定在周五晚上六点。", "李雷", ("聚餐", "when", "周五晚上六点")),
        ("聚餐改到五点半了。", "李雷", ("聚餐", "when", "五点半")),
        ("周会改到周三下午三点", "小王", ("周会", "when", "周三下午三点")),
        ("迁移推迟到6月3日", "小王", ("迁移", "when", "6月3日")),
        ("发布说明交给小李负责", "李雷", ("发布说明", "owner", "小李")),
        ("我来负责发布说明", "小王", ("发布说明", "owner", "小王")),
        ("下周三团队聚餐改到周四晚上七点，地点还是蜀乡情。", "李雷", ("聚餐", "where", "蜀乡情")),
        ("我现在最喜欢的饮料换成了咖啡。", "小王", ("小王", "favorite_饮料", "咖啡")),
        ("My favourite drink is now coffee.", "Bob", ("Bob", "favorite_drink", "coffee")),
        ("Our book club meets on Tuesday at 7pm.", "Bob", ("club", "when", "Tuesday at 7pm")),  # a meeting verb
        ("The book club now meets on Wednesday instead.", "Bob", ("club", "when", "Wednesday")),
        ("通知：团建改到周六中午，地点换成西贝。", "李雷", ("团建", "where", "西贝")),
        ("聚会地点改成星巴克了", "李雷", ("聚会", "where", "星巴克")),
        # the time a change starts from is no part of the event
        ("下周起乒乓球改到每周二晚上七点", "小王", ("乒乓球", "when", "每周二晚上七点")),
        ("From next week badminton moves to Wednesdays at 8pm", "Bob", ("badminton", "when", "Wednesdays at 8pm")),
        ("从下个月开始，例会改到周一上午", "李雷", ("例会", "when", "周一上午")),
    ],
)
def test_a_plan_statement_fills_its_slot(text, speaker, expected):
    found = {(m.subject, m.attribute, m.value) for m in all_slots(text, speaker, NAMES)}
    assert expected in found


@pytest.mark.parametrize(
    "text",
    [
        "We went to a concert last Friday.",  # narration, not a plan
        "I had a great dinner with Carol yesterday.",
        "昨天的聚餐很好吃。",
        "What time is the meeting?",  # no value stated
        "Nice to meet you at last!",  # "meet" with no event
        "I met Tom at work on Monday.",
    ],
)
def test_narration_and_questions_fill_no_plan_slot(text):
    assert [m for m in find_plan_slots(text, "Bob", NAMES) if m.attribute == "when"] == []


def test_an_event_is_never_a_person_who_moved():
    slots = all_slots("Dinner moved to Casa Nova.", "Bob", NAMES)
    assert all(s.attribute != "lives_in" for s in slots)


@pytest.mark.parametrize(
    ("text", "retracts"),
    [
        ("Actually Porto is off, I'm staying in Lyon after all.", True),
        ("The trip got cancelled.", True),
        ("The wedding is off!", True),
        ("They called it off last night.", True),
        ("搬家的事泡汤了。", True),
        ("成都不去了，还是留在南京。", True),
        ("说错了，我不去成都了。", True),
        ("The lights are off in the lab.", False),  # a state, not a plan called off
        ("She's off to Paris tomorrow.", False),
        ("I'm off today.", False),
        ("我们去成都玩吧。", False),
        ("The party moved to Mia's place on Saturday, since the AC at Jake's is off.", False),  # a change
        ("The party is at Jake's, my phone is off.", False),
        ("叶子黄了，周末去香山吧。", False),
    ],
)
def test_plans_called_off_are_retractions(text, retracts):
    from language.extract.slots import is_retraction

    assert is_retraction(text) is retracts


@pytest.mark.parametrize(("text", "expected"), [
    # a noun phrase's head: last in Chinese, first in English; the other event only places it
    ("比赛之后的聚餐定在七点", ("聚餐", "when", "七点")),
    ("婚礼上的演出改到下午两点", ("演出", "when", "下午两点")),
    ("The dinner after the match is at 8pm", ("dinner", "when", "8pm")),
    ("The party after the wedding moved to 10pm", ("party", "when", "10pm")),
    ("Booked the room for the office move on May 3", ("move", "when", "May 3")),  # a purpose is still the event
    # without a change cue the value is in the clause that names the event, not a later aside
    ("面试九点开始，八点半先到前台签到", ("面试", "when", "九点")),
])  # fmt: skip
def test_the_event_is_the_head_of_its_phrase_and_the_time_is_in_its_clause(text, expected):
    assert [(m.subject, m.attribute, m.value) for m in find_plan_slots(text, "小王", NAMES)][:1] == [expected]
