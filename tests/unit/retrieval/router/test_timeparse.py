from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from language.time.words import parse_number
from retrieval.router.timeparse import parse_time

NOW = datetime(2024, 8, 15, 12, 0, tzinfo=UTC)


def span(query: str) -> tuple[date, date]:
    w = parse_time(query, NOW).window
    assert w is not None, query
    return w.since.date(), w.until.date()


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("上个月我们聊了什么？", date(2024, 7, 1), date(2024, 7, 31)),
        ("What did we talk about last month?", date(2024, 7, 1), date(2024, 7, 31)),
        ("What did I do last May?", date(2024, 5, 1), date(2024, 5, 31)),
        ("What happened last September?", date(2023, 9, 1), date(2023, 9, 30)),
        ("去年五月我在哪？", date(2023, 5, 1), date(2023, 5, 31)),
        ("2023年5月我去了哪里", date(2023, 5, 1), date(2023, 5, 31)),
        ("5月21日的会议说了什么", date(2024, 5, 21), date(2024, 5, 21)),
        ("What did Joanna share in August 2022?", date(2022, 8, 1), date(2022, 8, 31)),
        ("Which team did John sign with on 21 May, 2023?", date(2023, 5, 21), date(2023, 5, 21)),
        ("What did he do the week before August 3, 2023?", date(2023, 7, 27), date(2023, 8, 3)),
        ("昨天谁来了？", date(2024, 8, 14), date(2024, 8, 14)),
        ("前天谁来了？", date(2024, 8, 13), date(2024, 8, 13)),
        ("大前天谁来了？", date(2024, 8, 12), date(2024, 8, 12)),
        ("三天前我说了什么", date(2024, 8, 12), date(2024, 8, 12)),
        ("What did I say 2 weeks ago?", date(2024, 7, 29), date(2024, 8, 4)),
        ("Where did we go in 2022?", date(2022, 1, 1), date(2022, 12, 31)),
    ],
)
def test_windows(query, since, until):
    assert span(query) == (since, until)


def test_no_time_and_the_modal_may():
    assert not parse_time("What is Nate's favorite genre of movies?", NOW)
    assert not parse_time("May I ask where you live?", NOW).windows


def test_relations_orders_and_when():
    before = parse_time("What did I eat before I moved to Hangzhou?", NOW)
    assert before.relation == "before" and before.anchor == "i moved to hangzhou"
    assert parse_time("搬家之前我住在哪里？", NOW).anchor == "搬家"
    order = parse_time("Did Alice start running before or after she moved to Hangzhou?", NOW)
    assert (
        order.asks_order
        and order.relation is None
        and order.events == ["start running", "she moved to hangzhou"]
    )
    assert parse_time("我是先开始跑步还是先搬到杭州的？", NOW).events == ["开始跑步", "搬到杭州"]
    assert parse_time("When did Caroline go to the support group?", NOW).asks_when
    assert parse_time("他什么时候去的医院？", NOW).asks_when
    assert parse_time("最近一次去医院是什么时候？", NOW).asks_latest


def test_chinese_numbers():
    assert [parse_number(x) for x in ("12", "十二", "二十一", "三", "十", "x")] == [12, 12, 21, 3, 10, None]


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("What happened on March 4?", date(2023, 3, 4), date(2023, 3, 4)),
        ("What did we plan in October?", date(2022, 10, 1), date(2022, 10, 31)),
        ("10月3号说了什么？", date(2022, 10, 3), date(2022, 10, 3)),
        ("What happened last March?", date(2024, 3, 1), date(2024, 3, 31)),  # "last": relative to now
        ("What happened yesterday?", date(2024, 8, 14), date(2024, 8, 14)),  # relative: now, not the chat
        ("What happened on March 4, 2024?", date(2024, 3, 4), date(2024, 3, 4)),
    ],
)
def test_a_yearless_date_is_the_latest_one_the_chat_can_remember(query, since, until):
    chat_ended = datetime(2023, 3, 20, 18, 0, tzinfo=UTC)
    w = parse_time(query, NOW, latest=chat_ended).window
    assert (w.since.date(), w.until.date()) == (since, until)
    assert parse_time(query, NOW, latest=datetime(2025, 1, 1, tzinfo=UTC)).window == parse_time(query, NOW).window


def test_a_yearless_day_after_the_chats_last_activity_is_the_year_before():
    ended = datetime(2023, 3, 6, 18, 0, tzinfo=UTC)
    assert parse_time("What happened on March 20?", NOW, latest=ended).window.since.date() == date(2022, 3, 20)
    assert parse_time("What happened on March 4?", NOW, latest=ended).window.since.date() == date(2023, 3, 4)
    naive = datetime(2023, 3, 6, 18, 0)  # read in now's zone, no TypeError
    assert parse_time("What happened on March 4?", NOW, latest=naive).window.since.date() == date(2023, 3, 4)
    # without a chat anchor, a day later this month stays this year's (a plan): "August 20" asked on August 15
    assert parse_time("What is planned for August 20?", NOW).window.since.date() == date(2024, 8, 20)


def test_a_chinese_weekday_of_a_named_week_and_a_bare_day_of_the_month():
    now = datetime(2024, 8, 14, 10, 0, tzinfo=UTC)  # a Wednesday

    def days(q: str, **kw) -> list[tuple[date, date]]:
        return [(w.since.date(), w.until.date()) for w in parse_time(q, now, **kw).windows]

    assert days("上周五说了什么？") == [(date(2024, 8, 9), date(2024, 8, 9))]  # the day, not the week
    assert days("这周三说了什么？") == [(date(2024, 8, 14), date(2024, 8, 14))]
    assert days("上上周一呢？") == [(date(2024, 7, 29), date(2024, 7, 29))]
    assert days("下周二开会吗？") == []  # a day still ahead: nothing was said in it
    assert days("上周谁接手了周报？") == [(date(2024, 8, 5), date(2024, 8, 11))]
    assert days("8号说了啥？") == [(date(2024, 8, 8), date(2024, 8, 8))]
    assert days("20号开会吗？") == [(date(2024, 8, 20), date(2024, 8, 20))]  # this month's, counted from now
    assert days("20号说了啥？", latest=datetime(2024, 3, 6, tzinfo=UTC)) == [(date(2024, 2, 20), date(2024, 2, 20))]
    assert days("9月8号说了啥？") == [(date(2023, 9, 8), date(2023, 9, 8))]
    assert days("3号楼在哪？") == [] and days("坐2号线去") == []
