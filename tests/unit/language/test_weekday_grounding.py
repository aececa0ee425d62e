"""A weekday said in a message never lands before the message unless its own clause says so, and a weekday
given with its day of the month is that day — across week, month and year boundaries, in both languages."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from language.time.dates import find_dates


def _days(text: str, at: datetime) -> list[date | None]:
    return [d.day for d in find_dates(text, at)]


SUN_END_OF_YEAR = datetime(2028, 12, 31, 9, 0, tzinfo=UTC)  # a Sunday, the last day of a year
WED_END_OF_MONTH = datetime(2027, 6, 30, 20, 0, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("ok the pottery class got moved, it's Tuesday now", SUN_END_OF_YEAR, date(2029, 1, 2)),
        ("did we say Friday for the pottery class?", WED_END_OF_MONTH, date(2027, 7, 2)),
        ("we settled on Monday for the handover", WED_END_OF_MONTH, date(2027, 7, 5)),
        ("陶艺课说好的是周二", SUN_END_OF_YEAR, date(2029, 1, 2)),
        ("交接我们定了周一", WED_END_OF_MONTH, date(2027, 7, 5)),
        ("the handover is Monday the 5th, not Friday", WED_END_OF_MONTH, date(2027, 7, 5)),
        ("交接是周一5号", WED_END_OF_MONTH, date(2027, 7, 5)),
        ("Tuesday the 2nd works for me", SUN_END_OF_YEAR, date(2029, 1, 2)),
    ],
)
def test_a_plans_weekday_is_never_before_the_message(text, at, expected):
    assert _days(text, at)[0] == expected


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("we hiked the ridge on Saturday, legs still sore", SUN_END_OF_YEAR, date(2028, 12, 30)),
        ("last Monday the printer broke again", WED_END_OF_MONTH, date(2027, 6, 28)),
        ("周六我们去爬了山", SUN_END_OF_YEAR, date(2028, 12, 30)),
        ("Thanks for hosting on Friday, it was lovely", WED_END_OF_MONTH, date(2027, 6, 25)),
    ],
)
def test_a_weekday_goes_back_when_the_sentence_says_it_is_past(text, at, expected):
    assert _days(text, at)[0] == expected


@pytest.mark.parametrize("text", [
    "the swap shop is on the first saturday of each month",
    "bins go out every other monday",
    "choir meets every second tuesday",
    "pay day is the last friday of every month",
    "换物会改成每个月第一个周六",
    "隔周三开例会",
    "读书会定在每月最后一个周五",
])  # fmt: skip
def test_a_weekday_that_recurs_is_a_habit_not_a_date(text):
    assert _days(text, WED_END_OF_MONTH) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("see you saturday then", date(2027, 7, 3)),
    ("下个月第一个周末回家，周六到", date(2027, 7, 3)),
])  # fmt: skip
def test_a_weekday_beside_such_words_still_is_a_date(text, expected):
    assert expected in _days(text, WED_END_OF_MONTH)


SUN_EVENING_END_OF_YEAR = datetime(2028, 12, 31, 20, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("能不能挪到周日上午十点？", date(2029, 1, 7)),  # ten this morning is gone: next Sunday
    ("can we push it to sunday 10am?", date(2029, 1, 7)),
    ("周日晚上九点见", date(2028, 12, 31)),  # nine tonight is still ahead
    ("sunday 9pm works", date(2028, 12, 31)),
])  # fmt: skip
def test_todays_weekday_at_an_hour_already_gone_is_next_week(text, expected):
    assert _days(text, SUN_EVENING_END_OF_YEAR)[0] == expected
