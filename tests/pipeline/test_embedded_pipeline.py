"""The whole pipeline on the embedded default: resumable ingest, replay, dead letters, isolation."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstream.clients import build_clients
from memstream.ops import delete, ingest, replay
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import RetrieveRequest
from tests.helpers import make_messages, write_jsonl


async def snapshot(data_dir: Path, embedder=None) -> dict:
    clients = await build_clients(Settings(data_dir=data_dir, embedder="none"), embedder=embedder)
    try:
        snap = {"memories": [], "messages": 0, "topics": []}
        for chat in sorted(await clients.store.chats()):
            mems = await clients.store.list_memories(chat, live_only=False)
            snap["memories"] += sorted(m.model_dump_json() for m in mems)
            snap["messages"] += len(await clients.store.list_messages(chat))
            snap["topics"] += sorted(t.model_dump_json() for t in await clients.store.list_topics(chat))
        return snap
    finally:
        await clients.close()


def offsets(data_dir: Path) -> dict[str, int]:
    db = data_dir / "log" / "log.db"
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return {g: o for g, o in con.execute("SELECT grp, offset FROM consumer_offsets")}
    except sqlite3.OperationalError:
        return {}


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "memstream.cli", *args]


@pytest.mark.parametrize("kill_when", ["segmenting", "consolidating"])
def test_killed_ingest_resumes_without_loss_or_duplicates(tmp_path, kill_when):
    rows = make_messages(12, 400)
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    clean = tmp_path / "clean"
    assert subprocess.run(cli("ingest", str(src), "--data-dir", str(clean), "--embedder", "none"),
                          capture_output=True).returncode == 0
    expected = asyncio.run(snapshot(clean))
    assert expected["messages"] == len(rows) and expected["memories"]

    victim = tmp_path / "victim"
    proc = subprocess.Popen(cli("ingest", str(src), "--data-dir", str(victim), "--embedder", "none"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    group = "segmenter" if kill_when == "segmenting" else "consolidator"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if offsets(victim).get(group, 0) > 0:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the ingest finished before it could be killed"
    partial = asyncio.run(snapshot(victim))
    assert partial["memories"] != expected["memories"]  # it really was cut mid-way

    assert subprocess.run(cli("ingest", str(src), "--data-dir", str(victim), "--embedder", "none"),
                          capture_output=True).returncode == 0
    assert asyncio.run(snapshot(victim)) == expected


async def test_replay_into_empty_store_reproduces_memory(tmp_path, minilm):
    rows = make_messages(3, 120)
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    settings = Settings(data_dir=tmp_path / "d")
    clients = await build_clients(settings, embedder=minilm)
    try:
        await ingest(clients, src)
    finally:
        await clients.close()
    before = await snapshot(settings.data_dir)
    assert before["memories"]
    clients = await build_clients(settings, embedder=minilm)
    try:
        assert await clients.store.chats()
        await replay(clients)
    finally:
        await clients.close()
    assert await snapshot(settings.data_dir) == before


async def test_malformed_lines_go_to_dead_letters_and_the_run_goes_on(tmp_path):
    rows = make_messages(2, 30)
    bad = ["{not json", json.dumps({"chat_id": "chat-0", "message_id": "x", "sender": "a", "text": "no time"}),
           json.dumps({**rows[0], "message_id": "naive", "ts": "2024-01-01T10:00:00"}), "[1,2,3]"]
    src = write_jsonl(tmp_path / "in.jsonl", rows, bad_lines=bad)
    settings = Settings(data_dir=tmp_path / "d", embedder="none")
    clients = await build_clients(settings, embedder=None)
    try:
        report = await ingest(clients, src)
        assert report.rejected == len(bad)
        assert report.new == len(rows) == 60  # messages: not the dead letters, not the chats' flush controls
        assert (await ingest(clients, src)).new == 0  # the same file again adds nothing
        from streams.topics import DEAD_LETTERS

        dls = [json.loads(r.value) for r in await clients.log.read(DEAD_LETTERS.name, 0, 100)]
        assert len(dls) == len(bad)
        assert {d["payload"] for d in dls} == set(bad)
        assert all(d["stage"] == "ingest" and d["error"] for d in dls)
        assert any("time zone" in d["error"] for d in dls)
        assert len(await clients.store.list_messages("chat-0")) == 30
        assert await clients.store.list_memories("chat-0")
    finally:
        await clients.close()


async def test_bad_record_inside_the_stream_is_dead_lettered(tmp_path):
    from streams.log import Produce
    from streams.runner import EmbeddedRunner
    from streams.topics import DEAD_LETTERS, RAW_MESSAGES

    settings = Settings(data_dir=tmp_path / "d", embedder="none")
    clients = await build_clients(settings, embedder=None)
    try:
        runner = EmbeddedRunner(clients, clients.settings.pipeline)
        good = make_messages(1, 5)
        items = [Produce(RAW_MESSAGES.name, "chat-0", r["message_id"], json.dumps(r)) for r in good]
        items.insert(2, Produce(RAW_MESSAGES.name, "chat-0", "junk", '{"chat_id": 5}'))
        await runner.produce(items)
        stats = await runner.run_until_idle()
        assert stats.dead_letters == 1
        dl = json.loads((await clients.log.read(DEAD_LETTERS.name, 0, 10))[0].value)
        assert dl["stage"] == "segment" and dl["payload"] == '{"chat_id": 5}' and dl["offset"] == 2
        assert len(await clients.store.list_messages("chat-0")) == 5
    finally:
        await clients.close()


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "embedding"])
async def test_a_query_never_returns_another_chats_data(tmp_path, minilm, mode):
    rows = [
        {"chat_id": "secret-chat", "message_id": "s1", "sender": "eve", "ts": "2024-01-01T10:00:00Z",
         "text": "My bank PIN is 4821 and my passport number is X1234567."},
        {"chat_id": "secret-chat", "message_id": "s2", "sender": "eve", "ts": "2024-01-01T10:01:00Z",
         "text": "I live at 12 Rosewood Lane, Springfield."},
        {"chat_id": "other-chat", "message_id": "o1", "sender": "tom", "ts": "2024-01-01T10:00:00Z",
         "text": "Does anyone know a good pizza place?"},
    ]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    clients = await build_clients(Settings(data_dir=tmp_path / "d"), embedder=minilm)
    try:
        await ingest(clients, src)
        for q in ["What is Eve's bank PIN?", "passport number", "Where does Eve live? Rosewood Lane",
                  "pizza"]:
            resp = await retrieve(clients.store, clients.embedder,
                                  RetrieveRequest(chat_id="other-chat", query=q, k=10, mode=mode))
            assert all(i.source_message_ids == ["o1"] for i in resp.items), resp.items
            assert "4821" not in resp.context and "Rosewood" not in resp.context
        resp = await retrieve(clients.store, clients.embedder,
                              RetrieveRequest(chat_id="secret-chat", query="bank PIN", k=3, mode=mode))
        assert any("s1" in i.source_message_ids for i in resp.items)
        empty = await retrieve(clients.store, clients.embedder,
                               RetrieveRequest(chat_id="no-such-chat", query="bank PIN", mode=mode))
        assert empty.no_relevant_memory and empty.items == []
    finally:
        await clients.close()


async def test_deleted_user_does_not_come_back_after_replay(tmp_path):
    rows = make_messages(1, 60)
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=None)
    try:
        await ingest(clients, src)
        assert any(m.sender == "bob" for m in await clients.store.list_messages("chat-0"))
        await delete(clients, "chat-0", "bob")
        await replay(clients)
        msgs = await clients.store.list_messages("chat-0")
        assert msgs and not any(m.sender == "bob" for m in msgs)
        mems = await clients.store.list_memories("chat-0", live_only=False)
        assert mems and not any(set(m.source_message_ids) & {r["message_id"] for r in rows
                                                              if r["sender"] == "bob"} for m in mems)
    finally:
        await clients.close()


async def _ingest(data_dir: Path, rows: list[dict], *, flush: bool = True) -> None:
    clients = await build_clients(Settings(data_dir=data_dir, embedder="none"))
    try:
        await ingest(clients, write_jsonl(data_dir.parent / f"{data_dir.name}-{len(rows)}.jsonl", rows), flush=flush)
    finally:
        await clients.close()


def state_parts(data_dir: Path) -> dict[str, str]:
    with sqlite3.connect(data_dir / "log" / "log.db") as con:
        return dict(con.execute("SELECT part, state FROM consumer_state_parts WHERE grp='segmenter'"))


def _split(rows: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """Messages 0-19 of every chat; 20-29 of chat-1 only; the rest (every chat, so the last run's flush
    closes them all)."""
    n = {id(r): int(r["message_id"].split("-m")[1]) for r in rows}
    early = [r for r in rows if n[id(r)] < 20]
    later_1 = [r for r in rows if r["chat_id"] == "chat-1" and 20 <= n[id(r)] < 30]
    return early, later_1, [r for r in rows if r not in early and r not in later_1]


async def _whole_run(tmp_path: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """Ingest every message in one run into ``whole`` (the reference); returns :func:`_split`'s parts."""
    rows = make_messages(3, 40)
    await _ingest(tmp_path / "whole", rows)
    return _split(rows)


async def test_the_checkpoint_rewrites_only_the_chats_a_batch_changed(tmp_path):
    early, later_1, rest = await _whole_run(tmp_path)
    split = tmp_path / "split"
    await _ingest(split, early, flush=False)
    assert set(state_parts(split)) == {"chat-0", "chat-1", "chat-2"}  # one part per chat
    with sqlite3.connect(split / "log" / "log.db") as con:  # record every later write of a part
        con.executescript(
            "CREATE TABLE writes(part TEXT);"
            "CREATE TRIGGER w_upd AFTER UPDATE ON consumer_state_parts BEGIN INSERT INTO writes VALUES (new.part); END;"
            "CREATE TRIGGER w_ins AFTER INSERT ON consumer_state_parts BEGIN INSERT INTO writes VALUES (new.part); END;"
        )
    await _ingest(split, later_1, flush=False)
    with sqlite3.connect(split / "log" / "log.db") as con:
        assert {p for (p,) in con.execute("SELECT part FROM writes")} == {"chat-1"}
    await _ingest(split, rest)
    assert await snapshot(split) == await snapshot(tmp_path / "whole")  # resuming per chat loses nothing


async def test_a_checkpoint_written_before_state_parts_resumes_the_same(tmp_path):
    from agents.segmenter import ChatPool, dump_pools

    early, later_1, rest = await _whole_run(tmp_path)
    old = tmp_path / "old"
    await _ingest(old, early, flush=False)
    pools = {chat: ChatPool.model_validate_json(raw) for chat, raw in state_parts(old).items()}
    with sqlite3.connect(old / "log" / "log.db") as con:  # rewrite it as the older version kept it
        con.execute("DELETE FROM consumer_state_parts")
        con.execute("INSERT INTO consumer_state(grp, state) VALUES ('segmenter', ?)", (dump_pools(pools),))
    await _ingest(old, later_1 + rest)
    assert set(state_parts(old)) == {"chat-0", "chat-1", "chat-2"}  # migrated to one part per chat
    assert await snapshot(old) == await snapshot(tmp_path / "whole")
