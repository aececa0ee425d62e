"""Plan slots (when/where of an event, owner of a task) in English and Chinese."""

from __future__ import annotations

import pytest

from agents.extract.event_slots import all_slots, find_plan_slots

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
    ],
)
def test_narration_and_questions_fill_no_plan_slot(text):
    assert [m for m in find_plan_slots(text, "Bob", NAMES) if m.attribute == "when"] == []


def test_an_event_is_never_a_person_who_moved():
    slots = all_slots("Dinner moved to Casa Nova.", "Bob", NAMES)
    assert all(s.attribute != "lives_in" for s in slots)
