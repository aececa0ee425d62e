"""Chinese chat states changes without a subject ("成都出差取消了，改去重庆", "周报改成小赵写"): memory keeps
them as facts and slots, so the newest value comes first (embedded pipeline, no embedder)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from language.extract.event_slots import all_slots
from language.extract.slots import is_retraction
from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import RetrieveRequest
from tests.helpers import chat_row, write_jsonl

T0 = datetime(2026, 5, 6, 9, 0, tzinfo=timezone(timedelta(hours=8)))
NAMES = frozenset({"小李", "小王"})


@pytest.mark.parametrize(
    ("sentence", "speaker", "expected"),
    [
        ("大家好，我下个月要去成都出差", "小李", {("出差", "where", "成都"), ("出差", "when", "下个月")}),
        ("成都出差取消了，改去重庆", "小李", {("出差", "where", "重庆")}),
        ("周报改成小赵写，小王这周太忙", "小李", {("周报", "owner", "小赵")}),
        ("周报我来写吧", "小王", {("周报", "owner", "小王")}),
    ],
)
def test_zh_plan_changes_and_owners_are_slots(sentence, speaker, expected):
    got = {(s.subject, s.attribute, s.value) for s in all_slots(sentence, speaker, NAMES) if not s.negated}
    assert expected <= got


def test_a_plan_called_off_for_another_is_a_change_not_a_retraction():
    assert not is_retraction("成都出差取消了，改去重庆")
    assert is_retraction("成都出差取消了")


ROWS = [
    chat_row("z", 1, "li", "小李", T0, 0, "大家好，我下个月要去成都出差"),
    chat_row("z", 2, "wang", "小王", T0, 0.001, "成都好玩！我最近在学吉他"),
    chat_row("z", 3, "li", "小李", T0, 0.002, "项目周报周五前交给张经理"),
    chat_row("z", 4, "wang", "小王", T0, 0.003, "周报我来写吧"),
    chat_row("z", 5, "li", "小李", T0, 14, "成都出差取消了，改去重庆"),
    chat_row("z", 6, "wang", "小王", T0, 14.001, "吉他学不下去了，现在改练钢琴"),
    chat_row("z", 7, "li", "小李", T0, 14.002, "周报改成小赵写，小王这周太忙"),
    chat_row("z", 8, "wang", "小王", T0, 15, "谢谢！对了我的猫叫咪咪"),
]


async def test_zh_changes_keep_memory_current(tmp_path):
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=None)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", ROWS))
        facts = [m.text for m in await clients.store.list_memories("z") if m.kind == "fact"]
        assert any("钢琴" in t for t in facts)  # said without a subject, still a fact

        async def top(q: str) -> str:
            req = RetrieveRequest(chat_id="z", query=q, k=5, mode="routed", now=T0 + timedelta(days=16))
            return (await retrieve(clients.store, None, req)).items[0].text

        assert "重庆" in await top("小李要去哪里出差？")
        assert "小赵" in await top("谁写周报？")
        assert "咪咪" in await top("小王的猫叫什么？")
    finally:
        await clients.close()


async def test_a_change_without_a_slot_replaces_the_fact_it_changes(tmp_path, minilm):
    """No slot for what one is learning: the change replaces the guitar fact by similarity (the default
    embedder finds it), and the router puts the new statement above the old turn, marked superseded."""
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="minilm"), embedder=minilm)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", ROWS))
        req = RetrieveRequest(chat_id="z", query="小王现在在学什么乐器？", k=5, mode="routed",
                              now=T0 + timedelta(days=16))  # fmt: skip
        got = await retrieve(clients.store, minilm, req)
        assert "钢琴" in got.items[0].text
        old = [it for it in got.items if "吉他" in it.text and "钢琴" not in it.text and it.kind == "turn"]
        assert all(it.note and "superseded" in it.note for it in old)
    finally:
        await clients.close()


def test_a_plan_moved_to_a_bare_weekday_is_ahead():
    """Said on a Sunday, "复查改到周四…了" is the coming Thursday: 了 marks the change, not a past visit."""
    from language.time.dates import find_dates

    sunday = datetime(2026, 7, 12, 10, 0, tzinfo=timezone(timedelta(hours=8)))
    (moved,) = find_dates("复查改到周四上午十点了", sunday)
    assert str(moved.day) == "2026-07-16"
    (asked,) = find_dates("周四复查了吗", sunday)  # a question about a visit that has happened
    assert str(asked.day) == "2026-07-09"
