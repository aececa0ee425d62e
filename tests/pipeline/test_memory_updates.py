"""Memory that stays current, end to end on the embedded default, in English and Chinese: a changed value
supersedes the old one (and the summaries that state it), an edited message supersedes what it said, a
retraction withdraws it, and a "now" question gets the current value first with its history noted."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstream.clients import build_clients
from memstream.ops import ingest, replay
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import RetrieveRequest

NOW = datetime(2024, 4, 1, tzinfo=UTC)


def _msg(chat: str, mid: str, who: str, day: int, minute: int, text: str, **extra) -> dict:
    zone = "+08:00" if chat.startswith("zh") else "+00:00"
    ts = f"2024-03-{day:02d}T09:{minute:02d}:00{zone}"
    return {"chat_id": chat, "message_id": mid, "sender": who.lower(), "sender_name": who, "ts": ts,
            "text": text, **extra}  # fmt: skip


EN = [
    _msg("en", "a1", "Alice", 4, 0, "Our weekly sync is on Tuesday at 10am."),
    _msg("en", "a2", "Bob", 4, 1, "Bob will write the release notes by Thursday."),
    _msg("en", "a3", "Carol", 4, 2, "The migration is planned for May 20."),
    _msg("en", "a4", "Bob", 4, 3, "I live in Berlin."),
    _msg("en", "a5", "Alice", 4, 4, "The team lunch is at 12:00 at Pasta Place."),
    _msg("en", "a6", "Carol", 4, 5, "My favourite drink is green tea."),
    _msg("en", "b1", "Alice", 9, 0, "Heads up: the sync moves to Wednesday."),
    _msg("en", "b2", "Alice", 9, 1, "Actually Carol takes the release notes."),
    _msg("en", "b3", "Carol", 9, 2, "The migration is postponed to June 3."),
    _msg("en", "b4", "Bob", 9, 3, "I moved to Lisbon last week!"),
    _msg("en", "a5", "Alice", 4, 4, "The team lunch is at 13:00 at Pasta Place.",
         metadata={"edited_at": "2024-03-09T10:00:00+00:00"}),
    _msg("en", "a6", "Carol", 4, 5, "", metadata={"retracted": True, "edited_at": "2024-03-09T10:05:00+00:00"}),
    _msg("en", "a7", "Bob", 4, 6, "My sister Ana works at Siemens as an engineer."),  # a relative, by name
    _msg("en", "a8", "Carol", 4, 7, "Our book club meets on Thursday at 7pm."),
    _msg("en", "b5", "Bob", 9, 4, "Ana quit her job, she works at Bosch now."),  # "she": the first clause's subject
    _msg("en", "b6", "Carol", 9, 5, "The book club now meets on Friday instead."),
]
ZH = [
    _msg("zh", "z1", "小王", 4, 0, "我住在北京朝阳区，每天通勤一个半小时。"),
    _msg("zh", "z2", "李雷", 4, 1, "周会定在周二上午十点。"),
    _msg("zh", "z3", "李雷", 4, 2, "聚餐定在周五晚上六点，地点是蜀乡情。"),
    _msg("zh", "z4", "小王", 4, 3, "发布说明我来负责。"),
    _msg("zh", "z5", "小王", 4, 4, "我妹妹在阿里上班。"),
    _msg("zh", "y1", "小王", 12, 0, "我刚搬到杭州西湖区了！"),
    _msg("zh", "y2", "李雷", 12, 1, "通知：周会改到周三下午三点。"),
    _msg("zh", "y3", "李雷", 12, 2, "发布说明交给小李负责。"),
    _msg("zh", "y4", "小王", 12, 3, "我妹妹跳槽到腾讯了。"),
    _msg("zh", "z3", "李雷", 4, 2, "聚餐定在周五晚上五点半，地点是蜀乡情。",
         metadata={"edited_at": "2024-03-12T10:00:00+08:00"}),
]

CASES = [
    ("en", "Where does Bob live now?", "Lisbon", "Berlin"),
    ("en", "When is the weekly sync now?", "Wednesday", "Tuesday"),
    ("en", "Who is writing the release notes?", "Carol", "Bob will"),
    ("en", "When is the migration?", "June 3", "May 20"),
    ("en", "When is the team lunch?", "13:00", "12:00"),  # an edit
    ("zh", "小王现在住在哪里？", "杭州", "北京"),
    ("zh", "周会现在是什么时候？", "周三", "周二"),
    ("zh", "发布说明现在谁负责？", "小李", "我来负责"),
    ("zh", "聚餐几点？", "五点半", "六点"),  # an edit
    ("en", "Where does Ana work now?", "Bosch", "Siemens"),  # about a relative, not the speaker
    ("en", "When does the book club meet now?", "Friday", "Thursday"),
    ("zh", "小王的妹妹现在在哪里上班？", "腾讯", "阿里"),
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("updates")
    (root / "chat.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in EN + ZH) + "\n")
    return root


def _settings(root: Path) -> Settings:
    return Settings(data_dir=root / "data", embedder="none")


async def _ask(clients, chat: str, query: str):
    return await retrieve(clients.store, clients.embedder, RetrieveRequest(chat_id=chat, query=query, k=5,
                          mode="routed", now=NOW), graph=clients.graph)  # fmt: skip


def _marked(item) -> bool:
    return item.valid_to is not None or "superseded" in (item.note or "") or "retracted" in (item.note or "")


async def _check_current(clients) -> None:
    for chat, query, new, old in CASES:
        resp = await _ask(clients, chat, query)
        assert resp.items, query
        top = resp.items[0]
        assert new in top.text and old not in top.text, (query, [(i.kind, i.text, i.note) for i in resp.items])
        stale = [i for i in resp.items if old in i.text and not _marked(i)]
        assert not stale, (query, [(i.kind, i.text, i.note) for i in stale])


async def test_current_values_come_first_and_stale_ones_are_marked(data_dir):
    clients = await build_clients(_settings(data_dir), embedder=None)
    try:
        await ingest(clients, data_dir / "chat.jsonl")
        await _check_current(clients)
        # the context says what the current value replaced
        resp = await _ask(clients, "en", "Where does Bob live now?")
        assert "previously" in resp.context and "Berlin" in resp.context and "until 2024-03-09" in resp.context
        # derived records never state a superseded value while live
        live = await clients.store.list_memories("zh")
        assert not [r.text for r in live if "北京" in r.text and r.kind in ("summary", "title", "qa")]
        # history is kept: the old address is a superseded version, not lost
        every = await clients.store.list_memories("zh", live_only=False)
        old = [r for r in every if r.kind == "fact" and "北京" in r.text]
        assert old and all(r.valid_to is not None and r.superseded_by for r in old)
    finally:
        await clients.close()


async def test_an_edit_keeps_history_and_a_retraction_withdraws(data_dir):
    clients = await build_clients(_settings(data_dir), embedder=None)
    try:
        [lunch] = await clients.store.get_messages("en", ["a5"])
        assert "13:00" in lunch.text and lunch.metadata["edit_history"][0]["text"].count("12:00") == 1
        live = await clients.store.list_memories("en")
        assert not [r for r in live if "green tea" in r.text]  # retracted: nothing it said is current
        [drink] = await clients.store.get_messages("en", ["a6"])  # ... but kept as history: the message's own,
        assert drink.text == "" and "green tea" in drink.metadata["edit_history"][0]["text"]
        every = await clients.store.list_memories("en", live_only=False)  # and any fact made before it came
        assert all(r.valid_to is not None for r in every if "green tea" in r.text)
        resp = await _ask(clients, "en", "What is Carol's favourite drink?")
        assert not [i for i in resp.items if "green tea" in i.text and not _marked(i)]
    finally:
        await clients.close()


async def test_resending_an_unchanged_message_is_a_no_op_and_replay_agrees(data_dir):
    clients = await build_clients(_settings(data_dir), embedder=None)
    try:
        before = sorted((r.memory_id, r.valid_to) for r in await clients.store.list_memories("en", live_only=False))
        report = await ingest(clients, data_dir / "chat.jsonl")
        assert report.new == 0
        after = sorted((r.memory_id, r.valid_to) for r in await clients.store.list_memories("en", live_only=False))
        assert after == before
        await replay(clients)
        await _check_current(clients)
    finally:
        await clients.close()
