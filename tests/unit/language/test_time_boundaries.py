"""Dates over week, month and year boundaries, in messages and in questions (one grounding path), in the asker's zone, and on extreme input."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from language.time.dates import find_dates
from language.time.windows import widen
from language.time.words import parse_number
from retrieval.router.query import analyse
from retrieval.router.timeparse import parse_time
from tests.helpers import EXTREME_INSTANTS

CST = timezone(timedelta(hours=8))
EST = timezone(timedelta(hours=-5))
MON_0030 = datetime(2024, 3, 11, 0, 30, tzinfo=CST)  # Monday local, still Sunday in UTC
SUN = datetime(2024, 3, 10, 12, 0, tzinfo=CST)
NEW_YEAR = datetime(2024, 1, 1, 9, 0, tzinfo=CST)
MAR1 = datetime(2024, 3, 1, 9, 0, tzinfo=CST)
MAR31 = datetime(2024, 3, 31, 9, 0, tzinfo=CST)
AUG15 = datetime(2024, 8, 15, 12, 0, tzinfo=CST)


def span(query: str, now: datetime, tz=None) -> tuple[date, date]:
    w = parse_time(query, now, tz).window
    assert w is not None, query
    return w.since.date(), w.until.date()


@pytest.mark.parametrize(
    ("now", "query", "since", "until"),
    [
        (MON_0030, "昨天谁来了？", date(2024, 3, 10), date(2024, 3, 10)),
        (MON_0030, "What did we say yesterday?", date(2024, 3, 10), date(2024, 3, 10)),
        (MON_0030, "今天的会议说了什么", date(2024, 3, 11), date(2024, 3, 11)),
        (MON_0030, "上周我们聊了什么", date(2024, 3, 4), date(2024, 3, 10)),
        (SUN, "上周我们聊了什么", date(2024, 2, 26), date(2024, 3, 3)),
        (SUN, "What happened this week?", date(2024, 3, 4), date(2024, 3, 10)),
        (SUN, "What happened last week?", date(2024, 2, 26), date(2024, 3, 3)),
        (NEW_YEAR, "What did we talk about last month?", date(2023, 12, 1), date(2023, 12, 31)),
        (NEW_YEAR, "上个月我们聊了什么？", date(2023, 12, 1), date(2023, 12, 31)),
        (NEW_YEAR, "Where did we go last year?", date(2023, 1, 1), date(2023, 12, 31)),
        (NEW_YEAR, "去年我们去了哪里", date(2023, 1, 1), date(2023, 12, 31)),
        (NEW_YEAR, "What did I say yesterday?", date(2023, 12, 31), date(2023, 12, 31)),
        (MAR1, "What did I say yesterday?", date(2024, 2, 29), date(2024, 2, 29)),
        (MAR1, "上个月我们聊了什么？", date(2024, 2, 1), date(2024, 2, 29)),
        (MAR31, "What did we talk about last month?", date(2024, 2, 1), date(2024, 2, 29)),
        (MAR31, "一个月前我们聊了什么", date(2024, 2, 1), date(2024, 2, 29)),
        (AUG15, "Which team did John sign with on 31 May, 2023?", date(2023, 5, 31), date(2023, 5, 31)),
        (AUG15, "What happened on 29 February 2024?", date(2024, 2, 29), date(2024, 2, 29)),
        (AUG15, "5月31日的会议说了什么", date(2024, 5, 31), date(2024, 5, 31)),
        (AUG15, "2023年2月29日发生了什么", date(2023, 2, 28), date(2023, 2, 28)),
    ],
)
def test_windows_over_boundaries(now, query, since, until):
    assert span(query, now) == (since, until)


def test_windows_are_local_to_the_askers_zone():
    utc = MON_0030.astimezone(UTC)  # 2024-03-10T16:30Z
    assert span("昨天谁来了？", utc) == (date(2024, 3, 9), date(2024, 3, 9))
    assert span("昨天谁来了？", utc, CST) == (date(2024, 3, 10), date(2024, 3, 10))
    assert span("What happened today?", utc, CST) == (date(2024, 3, 11), date(2024, 3, 11))
    assert parse_time("today", utc, CST).windows[0].since.utcoffset() == timedelta(hours=8)
    assert span("What happened today?", datetime(2024, 3, 9, 4, 30, tzinfo=UTC), EST) == (
        date(2024, 3, 8),
        date(2024, 3, 8),
    )


EXTREME_NOW = EXTREME_INSTANTS
EXTREME_QUERIES = [
    "What did I do 10000 years ago?",
    "What did we say 999999999 days ago?",
    "what happened " + "9" * 5000 + " days ago",
    "九九九九九九九九九九年前发生了什么",
    "一万年前发生了什么",
    "What happened in May 0000?",
    "0000年5月发生了什么",
    "What happened in December 9999?",
    "9999年12月31日发生了什么",
    "What happened on 31 December 9999?",
    "What happened on 0 May 2023?",
    "What happened in 2024?",
    "today",
    "yesterday",
    "this week",
    "last week",
    "last month",
    "this year",
    "last year",
    "recently",
    "前年",
    "上周说了什么",
    "What did he do the week before August 3, 2023?",
    "What did he do the month after December 31, 9999?",
]


@pytest.mark.parametrize("now", EXTREME_NOW)
@pytest.mark.parametrize("tz", [None, UTC, CST])
def test_extreme_inputs_never_raise(now, tz):
    for query in EXTREME_QUERIES:
        tq = parse_time(query, now, tz)
        for w in [*tq.windows, *([tq.window] if tq.window else [])]:
            padded = widen(w, before=timedelta(days=400), after=timedelta(days=400))
            for dt in (w.since, w.until, padded.since, padded.until):
                dt.astimezone(UTC)  # what a store does with the bounds
            assert w.since <= w.until and padded.since <= padded.until
        analyse(query, ["alice", "bob"], now)


def test_out_of_range_expressions_are_ignored():
    assert parse_time("What did I do 10000 years ago?", AUG15).windows == []
    assert parse_time("What did we say 999999999 days ago?", AUG15).windows == []
    assert parse_time("What happened in May 0000?", AUG15).windows == []
    assert span("What did I do 3 years ago?", AUG15) == (date(2021, 1, 1), date(2021, 12, 31))
    assert parse_number("9" * 5000) is None


def test_widen_saturates_instead_of_overflowing():
    w = parse_time("What happened today?", datetime(9999, 12, 30, 12, 0, tzinfo=UTC)).window
    assert w is not None
    padded = widen(w, before=timedelta(days=36500), after=timedelta(days=36500))
    assert padded.until == datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
    assert padded.since.date() == date(9999, 12, 30) - timedelta(days=36500)
    low = parse_time("What happened in 2024?", AUG15).window
    assert low is not None
    assert widen(low, before=timedelta(days=999_999_999), after=timedelta(0)).since == datetime(
        1, 1, 2, tzinfo=UTC
    ).astimezone(CST)


# One grounding path: a date said in a message and the same words in a question name the same day, and a
# date said without its year, month or week is never before its message unless the sentence says it is past.
SUN_YEAR_END = datetime(2028, 12, 31, 20, 0, tzinfo=CST)  # a Sunday, the last day of a year
WED_MONTH_END = datetime(2027, 6, 30, 9, 0, tzinfo=CST)  # a Wednesday, the last day of a month
TUE_NEW_YEAR = datetime(2029, 1, 2, 9, 0, tzinfo=CST)
LEAP_DAY = datetime(2024, 2, 29, 9, 0, tzinfo=CST)  # a Thursday


def said(text: str, at: datetime) -> date:
    mentions = find_dates(text, at)
    assert mentions, text
    return mentions[0].day


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("the kiln opening is January 4", SUN_YEAR_END, date(2029, 1, 4)),
        ("窑口开放定在1月4号", SUN_YEAR_END, date(2029, 1, 4)),
        ("8号见，别迟到", SUN_YEAR_END, date(2029, 1, 8)),
        ("see you Tuesday for the key handover", SUN_YEAR_END, date(2029, 1, 2)),
        ("周二交钥匙", SUN_YEAR_END, date(2029, 1, 2)),
        ("the vet on July 2 then", WED_MONTH_END, date(2027, 7, 2)),
        ("3号交房租", WED_MONTH_END, date(2027, 7, 3)),
        ("Friday works for the review", WED_MONTH_END, date(2027, 7, 2)),
        ("周五评审", WED_MONTH_END, date(2027, 7, 2)),
        ("the grant deadline is March 1", LEAP_DAY, date(2024, 3, 1)),
        ("the party is Feb 28, bring snacks", LEAP_DAY, date(2025, 2, 28)),
    ],
)
def test_a_date_in_a_plan_is_never_before_its_message(text, at, expected):
    assert said(text, at) == expected >= at.date()


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("last Friday the boiler gave up", SUN_YEAR_END, date(2028, 12, 29)),
        ("上周五锅炉坏了", SUN_YEAR_END, date(2028, 12, 22)),
        ("we repainted the shed on December 20", TUE_NEW_YEAR, date(2028, 12, 20)),
        ("我们12月20号刷了棚子", TUE_NEW_YEAR, date(2028, 12, 20)),
        ("3号那天我们交了房租", WED_MONTH_END, date(2027, 6, 3)),
        ("we planted the beans on Sunday", TUE_NEW_YEAR, date(2028, 12, 31)),
    ],
)
def test_a_date_goes_back_when_the_sentence_says_it_is_past(text, at, expected):
    assert said(text, at) == expected


def test_a_past_verb_of_another_act_does_not_send_a_plan_back_a_year():
    at = datetime(2024, 10, 20, 9, 0, tzinfo=CST)
    assert said("航班改签了 11月3号走", at) == date(2024, 11, 3)
    assert said("年会的场地订好了，就在12月20日那天", at) == date(2024, 12, 20)


@pytest.mark.parametrize(
    ("message", "question", "at"),
    [
        ("I lost my keys last Friday", "What did I lose last Friday?", SUN_YEAR_END),
        ("上周五我把钥匙弄丢了", "上周五我丢了什么？", SUN_YEAR_END),
        ("the printer broke yesterday", "What broke yesterday?", TUE_NEW_YEAR),
        ("昨天打印机坏了", "昨天什么坏了？", TUE_NEW_YEAR),
        ("we moved in last month", "Where did we move last month?", TUE_NEW_YEAR),
        ("我们去年搬的家", "我们去年搬去哪了？", TUE_NEW_YEAR),
        ("we painted the hall on June 3", "What did we paint on June 3?", WED_MONTH_END),
    ],
)
def test_a_question_names_the_day_its_message_named(message, question, at):
    window = parse_time(question, at).window
    assert window is not None, question
    assert window.since.date() <= said(message, at) <= window.until.date()


def test_stated_months_and_years_are_windows_and_plans_ahead_are_not():
    assert span("What happened in May 2023?", AUG15) == (date(2023, 5, 1), date(2023, 5, 31))
    assert span("2023年5月发生了什么", AUG15) == (date(2023, 5, 1), date(2023, 5, 31))
    assert span("Where did we go in 2022?", AUG15) == (date(2022, 1, 1), date(2022, 12, 31))
    assert span("2022年我们去了哪", AUG15) == (date(2022, 1, 1), date(2022, 12, 31))
    assert span("What did we do the second week of November?", AUG15) == (date(2023, 11, 1), date(2023, 11, 30))
    assert parse_time("What are we doing tomorrow?", AUG15).windows == []
    assert parse_time("下周二开会吗？", AUG15).windows == []
    # a weekday next to a stated date counts from that date, not from today
    assert span("What did she finish the Friday before 23 January, 2022?", AUG15) == (
        date(2022, 1, 23), date(2022, 1, 23))  # fmt: skip


def test_a_month_takes_the_tense_of_its_own_clause():
    """News told in the past, then a plan in a clause of its own: the plan's month is ahead."""
    at = datetime(2026, 3, 3, 18, 0, tzinfo=timezone(timedelta(hours=1)))
    (plan,) = find_dates("my cousin got a job at the theatre, he can get us cheap seats in may", at)
    assert plan.day == date(2026, 5, 1)
    (past,) = find_dates("we went to the coast in may, it rained all week", at)
    assert past.day == date(2025, 5, 1)


@pytest.mark.parametrize(
    ("text", "at", "expected"),
    [
        ("the pottery fair is on the 3rd, don't forget", WED_MONTH_END, date(2027, 7, 3)),
        ("can we push the tasting to the 4th?", SUN_YEAR_END, date(2029, 1, 4)),
        ("the 2nd works better for me", SUN_YEAR_END, date(2029, 1, 2)),
        ("we varnished the benches on the 28th", TUE_NEW_YEAR, date(2028, 12, 28)),
        ("see you the 5th at noon", WED_MONTH_END, date(2027, 7, 5)),
    ],
)
def test_an_english_day_of_the_month_said_alone_takes_the_month_its_tense_points_to(text, at, expected):
    assert said(text, at) == expected


@pytest.mark.parametrize(
    "text", ["my aunt lives on the 19th floor", "the 18th century chairs arrived", "he sank it on the 9th hole"]
)
def test_an_ordinal_with_its_own_noun_is_no_day(text):
    assert find_dates(text, WED_MONTH_END) == []


def test_a_day_said_full_or_busy_is_still_ahead():
    """A day that is full or complete ("周六满了", "人齐了") is a state, not a past event: the day stays ahead."""
    fri = datetime(2027, 7, 2, 9, 0, tzinfo=CST)
    assert said("店家说周六满了，改成周日吧", fri) == date(2027, 7, 3)
    assert said("周四人齐了就出发", fri) == date(2027, 7, 8)
    assert said("周四我们去了趟宜家", fri) == date(2027, 7, 1)  # an act: the Thursday just gone


def test_a_reported_plan_keeps_its_day_ahead():
    """"said" / "told" report what someone says, not a past act: the day reported for a plan is still ahead."""
    mon = datetime(2027, 7, 5, 9, 0, tzinfo=CST)
    assert said("the caterer said friday works for the tasting", mon) == date(2027, 7, 9)
    assert said("Nadia told me the fitting is on thursday", mon) == date(2027, 7, 8)
    assert said("the caterer said they delivered on friday", mon) == date(2027, 7, 2)  # the act is past
