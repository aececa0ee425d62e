"""Deletion as a durable job: once the ledger holds it, readers refuse the chat until it is done, and a
process that starts processing finishes it (a process killed midway leaves it pending, never half done).
Also: whatever a deletion leaves in a file's bytes is found by a scan and vacuumed away."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from unittest.mock import ANY

import pytest
from fastapi.testclient import TestClient

from memstream.api import create_app
from memstream.clients import DeletionPending, build_clients, pending_in, retrieve_as_served
from memstream.deletion import STEPS, deletion_id
from memstream.erasure_check import checked_erasure, needles, remnant_files, said_by_others
from memstream.ops import delete_report, finish_deletions, ingest
from memstream.settings import Settings
from schemas import RetrieveRequest
from tests.helpers import write_jsonl
from tests.pipeline.deletion_data import (
    CASES,
    ENGLISH,
    canary_files,
    check_others_kept,
    check_retrieval,
    check_stored,
)

AT = "2024-06-01T12:00:00+00:00"


async def _ingested(data_dir: Path, tmp_path: Path, case, minilm):
    clients = await build_clients(Settings(data_dir=data_dir), embedder=minilm)
    await ingest(clients, write_jsonl(tmp_path / f"{case.chat}.jsonl", case.rows))
    return clients


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_a_ledgered_deletion_that_never_ran_is_refused_to_readers_and_finished_by_the_next_run(
    tmp_path, minilm, lang
):
    case, data_dir = CASES[lang], tmp_path / "d"
    clients = await _ingested(data_dir, tmp_path, case, minilm)
    try:
        await clients.log.record_deletion(case.chat, case.user, AT)  # what a kill right after step 1 leaves
        assert await pending_in(clients.log) == [(case.chat, case.user, AT)]
        with pytest.raises(DeletionPending):
            await retrieve_as_served(clients, RetrieveRequest(chat_id=case.chat, query=case.queries[0]))
        assert canary_files(data_dir, case)  # nothing removed yet
    finally:
        await clients.close()

    clients = await build_clients(Settings(data_dir=data_dir), embedder=minilm)  # a restarted process
    try:
        [report] = await finish_deletions(clients)
        assert (report.chat_id, report.user, report.at) == (case.chat, case.user, AT)
        assert report.job_id == deletion_id(case.chat, case.user, AT) and report.messages > 0
        assert await pending_in(clients.log) == []
        [(_, _, _, done)] = await clients.log.deletion_jobs(case.chat)
        assert done is not None
        await check_retrieval(clients, case)
        await check_stored(clients, case)
        await check_others_kept(clients, case)
        assert canary_files(data_dir, case) == {}
        resp = await retrieve_as_served(clients, RetrieveRequest(chat_id=case.chat, query=case.kept_query))
        assert resp.items  # readers are served again
        assert await finish_deletions(clients) == []  # done once: nothing runs again
    finally:
        await clients.close()


async def test_ingest_finishes_a_pending_deletion_before_it_reads_its_file(tmp_path, minilm):
    case, data_dir = ENGLISH, tmp_path / "d"
    clients = await _ingested(data_dir, tmp_path, case, minilm)
    try:
        await clients.log.record_deletion(case.chat, case.user, AT)
        other = [{"chat_id": "other", "message_id": "o1", "sender": "zoe", "ts": "2024-06-02T09:00:00Z",
                  "text": "The bakery on Elm Street opens at seven now."}]  # fmt: skip
        await ingest(clients, write_jsonl(tmp_path / "other.jsonl", other))
        assert await pending_in(clients.log) == [] and canary_files(data_dir, case) == {}
    finally:
        await clients.close()


def _ledgered(data_dir: Path) -> bool:
    try:
        with sqlite3.connect(f"file:{data_dir / 'log' / 'log.db'}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM deletion_ledger").fetchone()[0] > 0
    except sqlite3.OperationalError:
        return False


def kill_delete(data_dir: Path, chat: str, user: str, after: float) -> int:
    """Run `memstream delete` in a process of its own and SIGKILL it ``after`` seconds past the moment its
    deletion is in the ledger (what a crash midway leaves). Returns its exit status."""
    env = {**os.environ, "MEMSTREAM_DATA_DIR": str(data_dir)}
    proc = subprocess.Popen([str(Path(sys.executable).with_name("memstream")), "delete", "--chat", chat, "--user", user],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    while proc.poll() is None and not _ledgered(data_dir):
        time.sleep(0.002)
    time.sleep(after)
    proc.send_signal(signal.SIGKILL)
    return proc.wait()


@pytest.mark.parametrize("after", [0.0, 0.05, 0.15])
async def test_a_delete_killed_midway_leaves_nothing_after_the_next_start(tmp_path, minilm, after):
    case, data_dir = ENGLISH, tmp_path / "d"
    clients = await _ingested(data_dir, tmp_path, case, minilm)
    await clients.close()
    kill_delete(data_dir, case.chat, case.user, after)
    clients = await build_clients(Settings(data_dir=data_dir), embedder=minilm)
    try:
        assert (case.chat, case.user) in await clients.log.deletions()
        await finish_deletions(clients)  # what `serve`, `ingest`, `replay` and `delete` do first
        assert await pending_in(clients.log) == []
        await check_retrieval(clients, case)
        await check_stored(clients, case)
        await check_others_kept(clients, case)
        assert canary_files(data_dir, case) == {}
    finally:
        await clients.close()


KILLED_AFTER = """
import asyncio, os, signal, sys
from memstream.clients import EMBEDDER_RECORD, build_clients, open_embedder
from memstream.deletion import delete_data
from memstream.settings import Settings

async def main(data_dir, chat, user, step):
    settings = Settings(data_dir=data_dir)
    emb = open_embedder(settings) if (settings.data_dir / EMBEDDER_RECORD).exists() else None
    clients = await build_clients(settings, embedder=emb)
    def kill(name):
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)
    await delete_data(clients, chat, user, on_step=kill)

asyncio.run(main(*sys.argv[1:]))
"""


def killed_after(data_dir: Path, chat: str, user: str, step: str) -> subprocess.CompletedProcess:
    """Run a deletion in a process of its own that SIGKILLs itself once ``step`` (of
    :data:`memstream.deletion.STEPS`) is done."""
    env = {**os.environ, "MEMSTREAM_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-c", KILLED_AFTER, str(data_dir), chat, user, step], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.parametrize("step", STEPS)
async def test_a_delete_killed_after_any_step_is_finished_by_the_next_start(tmp_path, minilm, step):
    """The kill lands at a chosen point: after the store has trimmed the shared topics, nothing but the
    deletion's own record says which of them to distil again."""
    case, data_dir = ENGLISH, tmp_path / "d"
    clients = await _ingested(data_dir, tmp_path, case, minilm)
    await clients.close()
    done = killed_after(data_dir, case.chat, case.user, step)
    assert done.returncode == -signal.SIGKILL, done.stderr
    clients = await build_clients(Settings(data_dir=data_dir), embedder=minilm)
    try:
        assert await pending_in(clients.log) == [(case.chat, case.user, ANY)]
        assert [r.user for r in await finish_deletions(clients)] == [case.user]
        assert await pending_in(clients.log) == []
        assert await clients.log.plan_redistil(case.chat, case.user, []) == set()  # its plan went with it
        await check_retrieval(clients, case)
        await check_stored(clients, case)
        await check_others_kept(clients, case)
        assert canary_files(data_dir, case) == {}
    finally:
        await clients.close()


def test_the_api_gives_a_deletion_job_id_and_its_state(tmp_path, minilm):
    case = ENGLISH
    with TestClient(create_app(Settings(data_dir=tmp_path / "d"), embedder=minilm)) as client:
        assert client.post("/v1/messages", json={"messages": case.rows, "flush": True}).status_code == 202
        body = client.delete(f"/v1/chats/{case.chat}/users/{case.user}").json()
        assert body["state"] == "done" and body["job_id"]
        [job] = client.get(f"/v1/chats/{case.chat}/deletions").json()
        assert (job["job_id"], job["state"], job["user"]) == (body["job_id"], "done", case.user)
        assert client.get("/v1/chats/another/deletions").json() == []


def test_a_server_started_on_a_pending_deletion_finishes_it_before_answering(tmp_path, minilm):
    import asyncio

    case, data_dir = ENGLISH, tmp_path / "d"

    async def prepare():
        clients = await _ingested(data_dir, tmp_path, case, minilm)
        await clients.log.record_deletion(case.chat, case.user, AT)
        await clients.close()

    asyncio.run(prepare())
    with TestClient(create_app(Settings(data_dir=data_dir), embedder=minilm)) as client:
        got = client.post("/v1/retrieve", json={"chat_id": case.chat, "query": case.queries[0]})
        assert got.status_code == 200, got.text
        assert all(not set(i["source_message_ids"]) & case.user_ids for i in got.json()["items"])
        [job] = client.get(f"/v1/chats/{case.chat}/deletions").json()
        assert job["job_id"] == deletion_id(case.chat, case.user, AT) and job["state"] == "done"
    assert canary_files(data_dir, case) == {}


def test_needles_find_a_stored_copy_in_utf8_and_json_escapes(tmp_path):
    text = "My spare key hides under the blue heron statue — 蓝色苍鹭雕像下面"
    [found] = needles([text, "ok"])  # "ok" is too short to be evidence of anything
    assert [len(w) for w in found] == [1, 1, 2]  # start, middle, end: an ASCII window has one form
    (tmp_path / "a.db").write_bytes(b"\x00" * 10 + text.encode() + b"\x00")
    (tmp_path / "b.json").write_text(json.dumps({"t": text}), encoding="ascii")
    (tmp_path / "c.txt").write_text("nothing to see", encoding="utf-8")
    (tmp_path / "d.txt").write_text("she said: My spare key hides under the blue heron statue, not the sofa",
                                    encoding="utf-8")  # two windows of three: a similar line, not a copy
    assert set(remnant_files(tmp_path, [found])) == {tmp_path / "a.db", tmp_path / "b.json"}


async def test_a_copy_left_in_a_files_free_space_is_vacuumed_away(tmp_path):
    """A file whose freed pages were written without secure_delete still holds a deleted row's bytes: the
    check finds it and rewrites the file."""
    data_dir = tmp_path / "d"
    settings = Settings(data_dir=data_dir, embedder="none")
    clients = await build_clients(settings, embedder=None)
    secret = "Gerald's locker code is 48-17-93, behind the squash courts"
    try:
        path = data_dir / "stale.db"
        con = sqlite3.connect(path)
        con.execute("PRAGMA secure_delete=OFF")
        con.execute("CREATE TABLE t (x TEXT)")
        con.executemany("INSERT INTO t VALUES (?)", [(secret,), *[(f"filler row {i} " * 20,) for i in range(50)]])
        con.commit()
        con.execute("DELETE FROM t WHERE x = ?", (secret,))
        con.commit()
        con.close()
        assert secret.encode() in path.read_bytes()  # freed but not zeroed
        assert await checked_erasure(clients, [secret]) == []
        assert secret.encode() not in path.read_bytes()
        with sqlite3.connect(path) as con:
            assert con.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 50  # the rest is kept
    finally:
        await clients.close()


async def test_others_replies_to_deleted_messages_name_a_tombstone_in_the_store_and_the_log(tmp_path, minilm):
    from streams.log_erase import raw_messages

    case, data_dir = ENGLISH, tmp_path / "d"
    clients = await _ingested(data_dir, tmp_path, case, minilm)
    try:
        replies = [r["message_id"] for r in case.rows if r.get("reply_to") in case.user_ids]
        assert replies  # others answered the user
        await delete_report(clients, case.chat, case.user)
        stored = {m.message_id: m for m in await clients.store.list_messages(case.chat)}
        logged = {m.message_id: m for m in await raw_messages(clients.log, case.chat, None)}
        for kept in (stored, logged):
            assert all(kept[r].reply_to == "deleted" for r in replies)
            assert not {m.parent_id for m in kept.values()} & case.user_ids
        export = await clients.store.export_chat(case.chat)
        assert not any(f'"{i}"' in json.dumps(export, default=str) for i in case.user_ids)
    finally:
        await clients.close()


def test_the_cli_says_a_chat_with_an_unfinished_deletion_cannot_be_read_yet(tmp_path, monkeypatch, capsys):
    from memstream.cli import app
    from memstream.cli_common import run_cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMSTREAM_EMBEDDER", "none")
    rows = [{"chat_id": "porch", "message_id": f"p{i}", "sender": s, "ts": f"2024-05-02T10:0{i}:00Z", "text": t}
            for i, (s, t) in enumerate([("rosa", "The spare porch key is under the blue flowerpot."),
                                        ("tam", "Thanks, I will water the ferns on Sunday.")])]  # fmt: skip
    write_jsonl(tmp_path / "in.jsonl", rows)
    assert run_cli(app, ["ingest", "in.jsonl", "--data-dir", "d"]) == 0
    with sqlite3.connect(tmp_path / "d" / "log" / "log.db") as con:  # what a kill right after step 1 leaves
        con.execute("INSERT INTO deletion_ledger(chat_id, sender, at) VALUES ('porch', 'rosa', ?)", (AT,))
    capsys.readouterr()
    assert run_cli(app, ["query", "--chat", "porch", "where is the key?", "--data-dir", "d"]) == 3
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("error: a deletion of data in chat 'porch' is in progress"), err
    assert run_cli(app, ["ingest", "in.jsonl", "--data-dir", "d"]) == 0  # finishes it first
    capsys.readouterr()
    assert run_cli(app, ["query", "--chat", "porch", "where is the key?", "--data-dir", "d"]) == 0
    assert "flowerpot" not in capsys.readouterr().out


def test_the_api_answers_503_with_retry_after_while_a_deletion_is_pending(tmp_path):
    """A deletion ledgered by another process (a CLI delete still running) is pending to this server."""
    rows = [{"chat_id": "attic", "message_id": f"a{i}", "sender": s, "ts": f"2024-05-02T10:0{i}:00Z", "text": t}
            for i, (s, t) in enumerate([("ivo", "The attic ladder code is 5521, do not share it."),
                                        ("lea", "Noted, I'll fetch the camping chairs from the attic.")])]  # fmt: skip
    settings = Settings(data_dir=tmp_path / "d", embedder="none")
    with TestClient(create_app(settings, embedder=None)) as client:
        assert client.post("/v1/messages", json={"messages": rows, "flush": True}).status_code == 202
        with sqlite3.connect(tmp_path / "d" / "log" / "log.db") as con:
            con.execute("INSERT INTO deletion_ledger(chat_id, sender, at) VALUES ('attic', 'ivo', ?)", (AT,))
        got = client.post("/v1/retrieve", json={"chat_id": "attic", "query": "what is the ladder code?"})
        assert got.status_code == 503 and int(got.headers["retry-after"]) >= 1 and "deletion" in got.text
        assert client.get("/v1/chats/attic/export").status_code == 503
        assert "memstream_deletion_pending_total 2\n" in client.get("/metrics").text
        assert client.get("/v1/chats/attic/deletions").json()[0]["state"] == "pending"
        body = client.delete("/v1/chats/attic/users/ivo").json()  # asked again: finished, and done
        assert body["state"] == "done"
        got = client.post("/v1/retrieve", json={"chat_id": "attic", "query": "what is the ladder code?"})
        assert got.status_code == 200 and "5521" not in got.text


async def test_a_deleted_texts_words_spread_over_other_rows_are_no_remnant_but_a_whole_copy_is(tmp_path, caplog):
    """After VACUUM a copy can only be a live row. Other lines of one chat that share a deleted Q&A pair's
    question and its answer, each a window of it, are no copy of it (no warning that would bury a real one);
    one row holding it whole is."""
    data_dir = tmp_path / "d"
    clients = await build_clients(Settings(data_dir=data_dir, embedder="none"), embedder=None)
    gone = "Q: Hal: who took the last of the oat milk? A: Rui: not me, I drink it black"
    try:
        path = data_dir / "other.db"
        with sqlite3.connect(path) as con:
            con.execute("CREATE TABLE t (x TEXT)")
            con.executemany("INSERT INTO t VALUES (?)", [("Q: Hal: who took the last of the bread? A: Jo: me, sorry",),
                                                         ("Q: Sam: who took the last of the oat milk? A: Rui: not me, "
                                                          "I drink it black",)])  # fmt: skip
        assert remnant_files(data_dir, needles([gone]))  # every window is in the file, in two rows
        with caplog.at_level("WARNING", logger="memstream.deletion"):
            assert await checked_erasure(clients, [gone]) == []
        assert not [r for r in caplog.records if "still in the bytes" in r.message]
        with sqlite3.connect(path) as con:
            con.execute("INSERT INTO t VALUES (?)", (f"kept by mistake: {gone}",))
        assert await checked_erasure(clients, [gone]) == [path]
    finally:
        await clients.close()


async def test_a_line_someone_who_stays_also_said_is_no_remnant_but_a_kept_copy_of_the_deleted_one_is(
    tmp_path, caplog
):
    """Two members post the same announcement; one is deleted. The other's copy stays in the files: it is
    hers, not a remnant, and no warning buries real remnants under it. A deleted row left behind in the store
    still counts."""
    same = "The bike shed code changes to 5521 on Monday, pass it on please"
    rows = [{"chat_id": "club", "message_id": f"c{i}", "sender": s, "sender_name": s.title(),
             "ts": f"2024-05-0{i + 1}T10:00:00+00:00", "text": t, "chat_type": "group"}
            for i, (s, t) in enumerate([("ana", same), ("bo", "thanks, noted"), ("cy", same),
                                        ("ana", "Ana's own note: my locker is number 212 by the stairs")])]  # fmt: skip
    data_dir = tmp_path / "d"
    clients = await build_clients(Settings(data_dir=data_dir, embedder="none"), embedder=None)
    try:
        await ingest(clients, write_jsonl(tmp_path / "club.jsonl", rows))
        with caplog.at_level("INFO", logger="memstream.deletion"):
            report = await delete_report(clients, "club", "ana")
        assert report.byte_remnants == 0
        assert not [r for r in caplog.records if r.levelname == "WARNING" and "still in the bytes" in r.message]
        assert remnant_files(data_dir, needles([same]))  # cy's copy stays
        assert not remnant_files(data_dir, needles(["Ana's own note: my locker is number 212 by the stairs"]))
        store = clients.store.db
        [found] = needles([same])
        assert said_by_others([store], [found], ("club", "ana", {"c0"})) == [True]  # cy says it
        assert said_by_others([store], [found], ("club", "cy", {"c2"})) == [False]  # only the deleted row says it
    finally:
        await clients.close()


def test_a_record_another_chat_or_member_keeps_explains_a_copy_and_one_drawn_from_the_deleted_does_not():
    from backends.sqlite.schema import SCHEMA

    fact = "Noor's bike got a flat tyre on the canal path this morning"
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    rows = [("m-1", "chat-a", ["a3"]), ("m-2", "chat-b", ["b7"])]  # chat-a's from the deleted message, chat-b's not
    db.executemany("INSERT INTO memories (memory_id, chat_id, valid_from, version, record) VALUES (?, ?, ?, 1, ?)",
                   [(mid, chat, AT, json.dumps({"text": fact, "source_message_ids": src})) for mid, chat, src in rows])  # fmt: skip
    [found] = needles([fact])
    assert said_by_others([db], [found], ("chat-a", "noor", {"a3"})) == [True]  # chat-b's record stays
    db.execute("DELETE FROM memories WHERE chat_id = 'chat-b'")
    assert said_by_others([db], [found], ("chat-a", "noor", {"a3"})) == [False]  # a remnant of the deleted one
    assert said_by_others([db], [found], ("chat-a", None, set())) == [False]  # the whole chat went
