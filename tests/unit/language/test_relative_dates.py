"""Relative dates resolved against the message's own timestamp, in the message's own zone (issue 11, point 5).

Reference days (2024): Wed 03-06, Fri 03-08, Sat 03-09, Sun 03-10; Mon 12-30; Wed 01-31; Thu 02-29 (leap).
Weeks run Monday..Sunday. Conventions under test are documented in ``language/time/rules.py``.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest

from agents.config import DistillerConfig
from agents.distiller import distill_extractive
from language.time.dates import (
    ZH_DATE_WORD,
    DateMention,
    annotate_dates,
    find_dates,
    find_time,
    resolve_when,
)
from schemas import ChatMessage, DistillJob
from tests.helpers import EXTREME_INSTANTS

CST = timezone(timedelta(hours=8))
EST = timezone(timedelta(hours=-5))
WED = datetime(2024, 3, 6, 10, 0, tzinfo=CST)
FRI = datetime(2024, 3, 8, 10, 0, tzinfo=CST)
SAT = datetime(2024, 3, 9, 10, 0, tzinfo=CST)
SUN = datetime(2024, 3, 10, 10, 0, tzinfo=CST)
DEC30 = datetime(2024, 12, 30, 10, 0, tzinfo=CST)  # a Monday
JAN31 = datetime(2024, 1, 31, 10, 0, tzinfo=CST)
FEB29 = datetime(2024, 2, 29, 10, 0, tzinfo=CST)


def when(text: str, ts: datetime, tz=None) -> str | None:
    """``resolve_when`` as 'YYYY-MM-DD' (midnight) or 'YYYY-MM-DD HH:MM', in the message's zone."""
    at = resolve_when(text, ts, tz)
    if at is None:
        return None
    assert at.utcoffset() == (ts.astimezone(tz) if tz else ts).utcoffset()
    return at.date().isoformat() if at.time() == time(0, 0) else at.strftime("%Y-%m-%d %H:%M")


ZH_CASES = [
    # a past act that books a day to come: the day is ahead ("报了" is past, the class is not)
    (WED, "我报了周六的陶艺课", "2024-03-09"),
    (WED, "我订了周五的机票", "2024-03-08"),
    (WED, "我周六去爬山了", "2024-03-02"),  # ... but a day something was done is behind
    # a day an event is set for is ahead, whatever another clause did ("我订了" is the booking, not the dinner)
    (WED, "外公生日宴定在周六，我订了江南春的包间", "2024-03-09"),
    (WED, "读书会约在周日下午，书我已经买了", "2024-03-10"),
    # bare weekdays: a plan (or no cue) -> the coming one; past tense -> the previous one
    (FRI, "周六去爬山吧", "2024-03-09"),
    (FRI, "好了，周六去爬山", "2024-03-09"),  # 好了 is no past tense
    (FRI, "星期六我们要去看电影", "2024-03-09"),
    (FRI, "礼拜六见", "2024-03-09"),
    (FRI, "周六我们去爬山了", "2024-03-02"),
    (FRI, "刚才周六那件事说完了", "2024-03-02"),
    (FRI, "上周六去了趟杭州", "2024-03-02"),
    (FRI, "周五下午开会", "2024-03-08"),  # today's weekday in a plan is today
    (SUN, "周一见", "2024-03-11"),
    # day words
    (FRI, "今天", "2024-03-08"),
    (FRI, "明天", "2024-03-09"),
    (FRI, "后天", "2024-03-10"),
    (FRI, "大后天", "2024-03-11"),
    (FRI, "昨天", "2024-03-07"),
    (FRI, "前天", "2024-03-06"),
    (FRI, "三天后出发", "2024-03-11"),
    (FRI, "两天前说过", "2024-03-06"),
    # weeks: Monday..Sunday
    (FRI, "这周三", "2024-03-06"),
    (FRI, "本周三", "2024-03-06"),
    (FRI, "下周三", "2024-03-13"),
    (FRI, "下个星期三", "2024-03-13"),
    (FRI, "上周五", "2024-03-01"),
    (FRI, "下周我们周三见", "2024-03-13"),  # the weekday belongs to the week named before it
    (SUN, "下周一", "2024-03-11"),  # Sunday is the last day of the week
    (SUN, "这周六", "2024-03-09"),
    (SUN, "上周日", "2024-03-03"),
    (DEC30, "下周三", "2025-01-08"),
    (DEC30, "后天", "2025-01-01"),
    # months and years
    (FRI, "这个月底交报告", "2024-03-31"),
    (FRI, "月底", "2024-03-31"),
    (FRI, "下个月5号", "2024-04-05"),
    (FRI, "年底", "2024-12-31"),
    (JAN31, "下个月5号", "2024-02-05"),
    (JAN31, "下个月底", "2024-02-29"),
    (DEC30, "年底", "2024-12-31"),
    (FRI, "明年5月底交付", "2025-05-31"),
    (FRI, "去年12月初", "2023-12-01"),
    # times of day
    (FRI, "明天下午三点开会", "2024-03-09 15:00"),
    (FRI, "下周二晚上七点聚餐", "2024-03-12 19:00"),
    (FRI, "后天三点半见", "2024-03-10 15:30"),
    (FRI, "明天十点一刻出发", "2024-03-09 10:15"),
    (FRI, "明早8点出发", "2024-03-09 08:00"),
    # the message's own zone
    (datetime(2024, 3, 11, 0, 30, tzinfo=CST), "今天", "2024-03-11"),  # Monday local, Sunday in UTC
    (datetime(2024, 3, 11, 0, 30, tzinfo=CST), "昨天", "2024-03-10"),
    # habits are no dates
    (FRI, "每周五开会", None),
]

EN_CASES = [
    (WED, "I booked a pottery class for Saturday", "2024-03-09"),
    (WED, "We scheduled the review for Monday", "2024-03-11"),
    (WED, "Thanks for Saturday, it was fun", "2024-03-02"),  # no booking: the past one
    (WED, "I booked a table for Saturday last week and it was great", "2024-03-02"),  # said to be past
    (FRI, "tomorrow", "2024-03-09"),
    (FRI, "tonight at 7", "2024-03-08 19:00"),
    (FRI, "the day after tomorrow", "2024-03-10"),
    (FRI, "two days ago", "2024-03-06"),
    (FRI, "in 3 days", "2024-03-11"),
    (FRI, "in two weeks", "2024-03-22"),
    (FRI, "next Friday", "2024-03-15"),
    (FRI, "this Friday", "2024-03-08"),
    (FRI, "last Friday", "2024-03-01"),
    (FRI, "On Saturday we went hiking.", "2024-03-02"),
    (FRI, "I went to the gym on Saturday.", "2024-03-02"),
    (FRI, "We will meet on Saturday.", "2024-03-09"),
    (FRI, "See you Saturday!", "2024-03-09"),
    (FRI, "From next week on, the standup is on Wednesday.", "2024-03-13"),
    (FRI, "Wednesday next week works for me.", "2024-03-13"),
    (FRI, "I'll send it by the end of the month.", "2024-03-31"),
    (FRI, "tomorrow at 3 pm", "2024-03-09 15:00"),
    (FRI, "Let's meet Monday at 5:30pm", "2024-03-11 17:30"),
    (FRI, "Lunch tomorrow at noon?", "2024-03-09 12:00"),
    (FRI, "We could meet next month on the 5th.", "2024-04-05"),
    (FRI, "We meet every Friday.", None),
    # the "next Friday" convention, said on a Wednesday / a Saturday
    (WED, "next Friday", "2024-03-15"),
    (WED, "this Friday", "2024-03-08"),
    (WED, "the coming Friday", "2024-03-08"),
    (WED, "I'll call you Friday.", "2024-03-08"),
    (WED, "last Monday", "2024-03-04"),
    (SAT, "I'll do it this Friday.", "2024-03-15"),
    (SAT, "next Friday", "2024-03-15"),
    (SUN, "next Monday", "2024-03-11"),
    # year and month boundaries
    (DEC30, "next week Wednesday", "2025-01-08"),
    (DEC30, "in 3 days", "2025-01-02"),
    (JAN31, "next month 5号", "2024-02-05"),
    (JAN31, "end of next month", "2024-02-29"),
    (FEB29, "tomorrow", "2024-03-01"),
    (FEB29, "in a week", "2024-03-07"),
    # the message's own zone: Friday 23:30 in New York is Saturday in UTC
    (datetime(2024, 3, 8, 23, 30, tzinfo=EST), "tomorrow", "2024-03-09"),
    (datetime(2024, 3, 8, 23, 30, tzinfo=EST), "tonight", "2024-03-08"),
    (datetime(2024, 3, 8, 23, 30, tzinfo=EST), "yesterday", "2024-03-07"),
]


@pytest.mark.parametrize(("ts", "text", "expected"), ZH_CASES)
def test_chinese_relative_dates(ts, text, expected):
    assert when(text, ts) == expected


@pytest.mark.parametrize(("ts", "text", "expected"), EN_CASES)
def test_english_relative_dates(ts, text, expected):
    assert when(text, ts) == expected


THU = datetime(2024, 3, 7, 11, 40, tzinfo=CST)


@pytest.mark.parametrize(
    ("ts", "text", "days"),
    [  # a bare weekday after a weekday that names its week, in the same sentence, is of that week
        (THU, "下周三团队聚餐改到周四晚上七点", ["2024-03-13", "2024-03-14"]),
        (THU, "下周一出发，周日回来", ["2024-03-11", "2024-03-17"]),
        (THU, "上周五我们吃了火锅，周六去爬山了", ["2024-03-01", "2024-03-02"]),
        (THU, "Next Wednesday's call moves to Thursday.", ["2024-03-13", "2024-03-14"]),
        (THU, "Last Friday we hiked and on Sunday we rested.", ["2024-03-01", "2024-03-03"]),
        (DEC30, "下周三的会改到周五", ["2025-01-08", "2025-01-10"]),  # across the year
        (THU, "下周三的会取消了。周四再说。", ["2024-03-13", "2024-03-07"]),  # another sentence: not anchored
        (THU, "周一开会，周五交报告", ["2024-03-11", "2024-03-08"]),  # bare weekdays anchor nothing
        (THU, "This Friday is fine, and Monday too", ["2024-03-08", "2024-03-11"]),  # that week's Monday passed
    ],
)
def test_weekday_after_a_week_named_weekday(ts, text, days):
    assert [d.day.isoformat() for d in find_dates(text, ts)] == days


@pytest.mark.parametrize(
    ("ts", "text", "grain", "day"),
    [
        (FEB29, "next year", "year", date(2025, 1, 1)),
        (FEB29, "明年", "year", date(2025, 1, 1)),
        (FEB29, "a year ago", "year", date(2023, 1, 1)),
        (FEB29, "一年前", "year", date(2023, 1, 1)),
        (FEB29, "12 months ago", "month", date(2023, 2, 1)),
        (DEC30, "next year", "year", date(2025, 1, 1)),
        (FRI, "next month", "month", date(2024, 4, 1)),
        (FRI, "下个月", "month", date(2024, 4, 1)),
        (FRI, "明年三月", "month", date(2025, 3, 1)),
        (FRI, "We will go in March next year.", "month", date(2025, 3, 1)),
        (FRI, "I went there in May.", "month", date(2023, 5, 1)),
        (FRI, "去年", "year", date(2023, 1, 1)),
        (FRI, "下下周", "week", date(2024, 3, 18)),
        (FRI, "上周", "week", date(2024, 2, 26)),
        (FRI, "the week after next", "week", date(2024, 3, 18)),
        (FRI, "the week before last", "week", date(2024, 2, 19)),
        (FRI, "next week", "week", date(2024, 3, 11)),
        (FRI, "the week before March 8", "week", date(2024, 3, 1)),
    ],
)
def test_coarser_grains(ts, text, grain, day):
    first = find_dates(text, ts)[0]
    assert (first.grain, first.day) == (grain, day)


def test_zone_argument_reads_the_local_day():
    utc = datetime(2024, 3, 10, 16, 30, tzinfo=UTC)  # Monday 00:30 in +08:00
    assert find_dates("今天", utc)[0].day == date(2024, 3, 10)
    assert find_dates("今天", utc, CST)[0].day == date(2024, 3, 11)
    assert when("tomorrow", datetime(2024, 3, 9, 4, 30, tzinfo=UTC), EST) == "2024-03-09"


def test_annotation_of_anchored_weekday_drops_the_week_label():
    text = "From next week on, the standup is on Wednesday."
    assert annotate_dates(text, find_dates(text, FRI)) == (
        "From next week on, the standup is on Wednesday (on 2024-03-13)."
    )
    assert (
        annotate_dates("好了，周六去爬山", find_dates("好了，周六去爬山", FRI))
        == "好了，周六(2024-03-09)去爬山"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("下午三点", time(15, 0)),
        ("三点半", time(15, 30)),
        ("晚上七点", time(19, 0)),
        ("十点一刻", time(10, 15)),
        ("凌晨两点", time(2, 0)),
        ("中午12点", time(12, 0)),
        ("5:30pm", time(17, 30)),
        ("3 pm", time(15, 0)),
        ("at noon", time(12, 0)),
        ("at 14:30", time(14, 30)),
        ("tonight at 8", time(20, 0)),
        ("快一点", None),
        ("我有三点建议", None),
    ],
)
def test_clock_times(text, expected):
    assert find_time(text) == expected


EXTREME_TS = EXTREME_INSTANTS
EXTREME_TEXT = [
    "tomorrow at 3pm",
    "yesterday",
    "明天下午三点",
    "大后天",
    "大前天",
    "next year",
    "明年三月",
    "last year",
    "next week Wednesday",
    "下周三",
    "上周五",
    "下个月5号",
    "年底",
    "end of next month",
    "10000 years ago",
    "一万年前",
    "九九九九九九九九九九年前",
    "999999999 days ago",
    "in 999999999 days",
    "in 99999999999999 weeks",
    "9" * 5000 + " days ago",
    "We will meet on Saturday.",
    "I went there in December.",
    "2023年5月",
]


@pytest.mark.parametrize("ts", EXTREME_TS)
@pytest.mark.parametrize("tz", [None, UTC, CST])
def test_extreme_inputs_never_raise(ts, tz):
    for text in EXTREME_TEXT:
        mentions = find_dates(text, ts, tz)
        annotate_dates(text, mentions)
        resolve_when(text, ts, tz)
        find_time(text)
        assert all(1 <= m.day.year <= 9999 for m in mentions)


def test_extreme_inputs_are_dropped_or_kept_in_range():
    end = datetime(9999, 12, 31, 12, 0, tzinfo=CST)
    assert find_dates("tomorrow", end) == []
    assert find_dates("明天", end) == []
    assert [m.day for m in find_dates("yesterday", end)] == [date(9999, 12, 30)]
    assert find_dates("999999999 days ago", FRI) == []
    assert find_dates("10000 years ago", FRI) == []
    # there is no February 31st: only "next month" is resolved
    assert [(m.grain, m.day) for m in find_dates("下个月31号", JAN31)] == [("month", date(2024, 2, 1))]


def test_a_topic_with_an_extreme_timestamp_still_distils():
    """One message at 9999-12-31 used to raise OverflowError and lose the whole topic."""
    texts = ["I will book the restaurant for tomorrow at 7pm.", "我明天下午三点把方案发给大家",
             "We went hiking 10000 years ago, and next year again.", "I moved to Hangzhou last month."]  # fmt: skip
    for start in (datetime(9999, 12, 31, 23, 50, tzinfo=CST), datetime(1, 1, 1, 0, 0, tzinfo=EST)):
        msgs = [
            ChatMessage(
                chat_id="c",
                message_id=f"m{i}",
                sender="alice",
                sender_name="Alice",
                ts=start + timedelta(seconds=i),
                text=text,
            )
            for i, text in enumerate(texts)
        ]
        job = DistillJob(job_id="j", chat_id="c", topic_id="t", messages=msgs, at=msgs[-1].ts)
        result = distill_extractive(job, DistillerConfig())
        assert any("Hangzhou" in f.text for f in result.facts)


def _topic(*said: tuple[str, str, int, str | None]) -> list:
    """Facts of one topic: (message id, text, minutes after THU 11:40, replied-to id)."""
    msgs = [ChatMessage(chat_id="c", message_id=mid, sender=mid, sender_name=f"P{mid}", text=text,
                        ts=THU + timedelta(minutes=minutes), reply_to=reply)
            for mid, text, minutes, reply in said]  # fmt: skip
    job = DistillJob(job_id="j", chat_id="c", topic_id="t", messages=msgs, at=msgs[-1].ts)
    return [f.text for f in distill_extractive(job, DistillerConfig()).facts]


@pytest.mark.parametrize(
    ("said", "fact", "day"),
    [  # a bare weekday with no week of its own is of the week the conversation just named
        ((("a", "下周三团队聚餐改到周四晚上七点。", 0, None), ("b", "收到，我周四可以参加聚餐。", 1, None)), "可以", "2024-03-14"),
        ((("a", "Next Wednesday's planning call moves to Thursday.", 0, None),
          ("b", "Thursday works for me, I will join the call.", 2, "a")), "works", "2024-03-14"),
        ((("a", "下周三的评审取消了。评审改到周五上午十点。", 0, None),), "周五", "2024-03-15"),  # one message
        ((("a", "下周有空吗？", 0, None), ("b", "我周二晚上有空。", 5, None)), "周二", "2024-03-12"),
        # ... but not an hour later, and not against the tense (a weekday of that week already past)
        ((("a", "下周三团队聚餐改到周四晚上七点。", 0, None), ("b", "我周五去看牙医。", 90, None)), "牙医", "2024-03-08"),
    ],
)
def test_a_reply_inherits_the_week_the_conversation_named(said, fact, day):
    facts = [f for f in _topic(*said) if fact in f]
    assert facts and all(day in f for f in facts), _topic(*said)


def test_public_names_still_importable():
    assert DateMention(0, 5, date(2024, 3, 9), "day").label(cjk=True) == "(2024-03-09)"
    assert find_dates("Friday", FRI)[0].clock is None
    assert ZH_DATE_WORD.search("下周三")


@pytest.mark.parametrize(("text", "expected"), [
    # a plan being moved is ahead, in any form of the verb; "sat" for Saturday is no past tense
    ("rain all sat, pushing it to sunday same time", date(2024, 3, 10)),
    ("postponing the call to thursday", date(2024, 3, 7)),
    ("we sat by the canal on sunday", date(2024, 3, 3)),  # a past "sat" still is one
])  # fmt: skip
def test_a_weekday_a_plan_moves_to_is_never_before_the_message(text, expected):
    assert [d.day for d in find_dates(text, WED)] == [expected]


@pytest.mark.parametrize(("text", "expected"), [
    # chat short forms of weekdays; the ones that are also words need a day cue beside them
    ("see you thurs", [date(2024, 3, 7)]),
    ("next tues then", [date(2024, 3, 12)]),
    ("weds is fine", [date(2024, 3, 6)]),
    ("sun 10am?", [date(2024, 3, 10)]),
    ("on sat we went bouldering", [date(2024, 3, 2)]),
    ("we sat down and talked for hours", []),
    ("the sun was out all day", []),
])  # fmt: skip
def test_weekday_short_forms(text, expected):
    assert [d.day for d in find_dates(text, WED)] == expected


@pytest.mark.parametrize("text", ["the friday after next", "a week from friday", "friday week suits me"])
def test_a_weekday_a_week_after_the_coming_one(text):
    assert [d.day for d in find_dates(text, WED)] == [date(2024, 3, 15)]  # the coming Friday is the 8th
    assert [d.day for d in find_dates(text, SAT)] == [date(2024, 3, 22)]  # ... the 15th
    assert find_dates("every friday week we swap", WED) == []  # a recurring day is no date
