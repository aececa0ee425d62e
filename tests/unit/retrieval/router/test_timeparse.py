from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from retrieval.router.timeparse import cn_number, parse_time

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
    assert [cn_number(x) for x in ("12", "十二", "二十一", "三", "十", "x")] == [12, 12, 21, 3, 10, None]
