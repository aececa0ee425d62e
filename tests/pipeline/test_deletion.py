"""Deletion that deletes, on the embedded default: after deleting a user (or a chat) nothing of theirs is
retrievable at once, stored, or left in the bytes of the data dir; replay does not bring it back; others'
information is kept (topics they shared are distilled again)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backends.embed.embedder import CachedEmbedder, cache_key, sentence_keys
from language.text import text_cache_entries
from memstream.api import create_app
from memstream.clients import build_clients
from memstream.ops import delete, delete_report, ingest, replay
from memstream.settings import Settings
from streams.codec import is_tombstone
from streams.log_erase import raw_messages
from streams.sensitive import SensitivePolicy, apply
from streams.topics import DEAD_LETTERS, RAW_MESSAGES
from tests.helpers import write_jsonl
from tests.pipeline.deletion_data import (
    CASES,
    CHINESE,
    ENGLISH,
    Case,
    canary_files,
    check_others_kept,
    check_retrieval,
    check_stored,
    contains_canary,
)


async def _clients(data_dir: Path, minilm):
    """The default clients with the real model and a cache FILE in the data dir (its bytes are checked)."""
    emb = CachedEmbedder(minilm.inner, data_dir / "embed-cache.db")
    return await build_clients(Settings(data_dir=data_dir), embedder=emb)


async def _ingest(clients, tmp_path: Path, rows: list[dict], flush: bool = True):
    return await ingest(clients, write_jsonl(tmp_path / f"in-{len(rows)}.jsonl", rows), flush=flush)


def _cached(data_dir: Path, texts: list[str], model: str) -> int:
    keys = [cache_key(model, False, t) for t in texts]
    with sqlite3.connect(data_dir / "embed-cache.db") as con:
        return sum(con.execute("SELECT COUNT(*) FROM embeddings WHERE key = ?", (k,)).fetchone()[0] for k in keys)


def _sentences_cached(data_dir: Path, texts: list[str], model: str) -> tuple[int, int]:
    """(sentence vectors of ``texts``' passages in the cache, how many sentences those passages have)."""
    keys = sentence_keys(model, texts)
    with sqlite3.connect(data_dir / "embed-cache.db") as con:
        found = sum(con.execute("SELECT COUNT(*) FROM sentences WHERE key = ?", (k,)).fetchone()[0] for k in keys)
    return found, len(keys)


async def _assert_gone(clients, case: Case, data_dir: Path) -> None:
    await check_retrieval(clients, case)
    await check_stored(clients, case)
    assert canary_files(data_dir, case) == {}


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_deleted_user_is_gone_at_once_physically_and_after_replay(tmp_path, minilm, lang):
    case = CASES[lang]
    data_dir = tmp_path / "d"
    clients = await _clients(data_dir, minilm)
    policy = Settings().sensitive  # texts are stored (and embedded) as the sensitive-information policy left them
    texts = [apply(policy, case.chat, r["text"]).text for r in case.rows if r["sender"] == case.user]
    try:
        await _ingest(clients, tmp_path, case.rows)
        derived = [m for m in await clients.store.list_memories(case.chat)
                   if set(m.source_message_ids) & case.user_ids and m.speaker not in case.names]  # fmt: skip
        assert derived, "the chat must have records of others that quote the user (summaries, Q&A...)"
        assert canary_files(data_dir, case) and _cached(data_dir, texts, minilm.cache_name) == len(texts)
        found, sentences = _sentences_cached(data_dir, texts, minilm.cache_name)
        assert found == sentences  # every sentence of the user's longer messages, pooled when they were embedded

        assert text_cache_entries() > 0  # the pipeline's text caches hold what was said
        report = await delete_report(clients, case.chat, case.user)
        assert text_cache_entries() == 0  # emptied at the end of the deletion, nothing erased stays in memory
        assert report.removed > 0 and report.memories >= len(derived) and report.log_records > 0
        assert report.topics_redistilled >= 1
        # what the shared topics state again without the user (others' lines, a title) is no remnant
        assert report.byte_remnants == 0
        for name in ("memstream.db", "graph.db", "log/log.db"):  # checkpointed and truncated, last
            assert (data_dir / f"{name}-wal").stat().st_size == 0, name
        await _assert_gone(clients, case, data_dir)
        await check_others_kept(clients, case)
        assert _cached(data_dir, texts, minilm.cache_name) == 0
        assert _sentences_cached(data_dir, texts, minilm.cache_name)[0] == 0  # their sentences' vectors too
        raw = await clients.log.keyed(RAW_MESSAGES.name, case.chat)
        assert sum(is_tombstone(r.value) for r in raw) == len(case.user_ids)  # offsets kept, payloads gone
        assert [r.offset for r in raw] == sorted(r.offset for r in raw)

        await replay(clients)
        await _assert_gone(clients, case, data_dir)
        await check_others_kept(clients, case)
        assert (await clients.log.deletions()) == {(case.chat, case.user)}
    finally:
        await clients.close()
    assert canary_files(data_dir, case) == {}


async def test_active_topics_forget_the_user_in_the_segmenter_checkpoint(tmp_path, minilm):
    """Without a flush the last topics stay active: the checkpointed pool must lose the user's messages."""
    case, data_dir = ENGLISH, tmp_path / "d"
    clients = await _clients(data_dir, minilm)
    try:
        await _ingest(clients, tmp_path, case.rows, flush=False)
        before = (await clients.log.load_state("segmenter"))[case.chat]
        assert any(m in before for m in case.user_ids)
        assert await delete(clients, case.chat, case.user) > 0
        after = (await clients.log.load_state("segmenter"))[case.chat]
        assert not any(f'"{m}"' in after for m in case.user_ids) and not contains_canary(after, case)
        assert '"mallory"' not in after  # not a participant, speaker or name any more
        await _assert_gone(clients, case, data_dir)
        rest = [{**r, "message_id": r["message_id"] + "b", "ts": r["ts"].replace("09:", "11:")}
                for r in case.rows if r["sender"] != case.user]  # fmt: skip
        await _ingest(clients, tmp_path, rest)  # the chat goes on from the cleaned pool
        await _assert_gone(clients, case, data_dir)
    finally:
        await clients.close()


async def test_a_deleted_users_later_messages_are_not_kept_nor_embedded(tmp_path, minilm):
    """A deleted user's later messages in the chat (which the segmenter would drop) are not written to the
    log (withheld at ingest: no copy of them anywhere in the data dir) and leave no vector in the cache; the
    others' messages go on as usual."""
    case, data_dir = ENGLISH, tmp_path / "d"
    clients = await _clients(data_dir, minilm)
    policy = Settings().sensitive
    try:
        await _ingest(clients, tmp_path, case.rows)
        assert await delete(clients, case.chat, case.user) > 0
        later = [{**r, "message_id": r["message_id"] + "c", "ts": r["ts"].replace("09:", "12:"),
                  "text": r["text"] + " (said again later)"} for r in case.rows]  # fmt: skip
        report = await _ingest(clients, tmp_path, later)
        assert report.withheld == sum(r["sender"] == case.user for r in later) > 0
        assert report.new == len(later) - report.withheld and report.read == len(later)
        assert await raw_messages(clients.log, case.chat, case.user) == []  # the old ones are tombstones
        assert canary_files(data_dir, case) == {}  # the later messages repeat the canaries: in no file
        theirs = {apply(policy, case.chat, r["text"]).text for r in later if r["sender"] == case.user}
        others = {apply(policy, case.chat, r["text"]).text for r in later if r["sender"] != case.user}
        assert theirs and _cached(data_dir, sorted(theirs), minilm.cache_name) == 0
        assert _cached(data_dir, sorted(others), minilm.cache_name) == len(others)  # the rest went on
        await check_retrieval(clients, case)
        await check_stored(clients, case)
    finally:
        await clients.close()


async def test_deleting_a_chat_leaves_nothing_of_it_and_other_chats_untouched(tmp_path, minilm):
    data_dir = tmp_path / "d"
    clients = await _clients(data_dir, minilm)
    gone = Case(chat="eng", user="*", names=(), canaries=(*ENGLISH.canaries, "Orion", "Mount Tai", "north gate"),
                rows=ENGLISH.rows, queries=ENGLISH.queries, kept_query="", kept_words=())  # fmt: skip
    try:
        await _ingest(clients, tmp_path, ENGLISH.rows + CHINESE.rows)
        kept = await clients.store.export_chat("zh")
        kept_edges = await clients.graph.edges("zh", include_invalid=True)
        assert await delete(clients, "eng", None) > 0
        for _ in range(2):  # right away, then after a replay
            assert "eng" not in await clients.store.chats()
            assert await clients.store.export_chat("eng") == {"chat_id": "eng", "messages": [], "memories": [],
                                                               "topics": []}  # fmt: skip
            assert "eng" not in await clients.graph.chats()
            assert await clients.store.export_chat("zh") == kept
            assert await clients.graph.edges("zh", include_invalid=True) == kept_edges
            assert canary_files(data_dir, gone) == {}
            assert canary_files(data_dir, CHINESE)  # the other chat is all there
            for record in await clients.log.keyed(RAW_MESSAGES.name, "eng"):
                assert is_tombstone(record.value)
            await replay(clients)
    finally:
        await clients.close()


def test_http_delete_of_a_user_removes_everything_derived_at_once(tmp_path, minilm):
    data_dir = tmp_path / "d"
    app = create_app(Settings(data_dir=data_dir), embedder=minilm)
    with TestClient(app) as client:
        for case in (ENGLISH, CHINESE):
            r = client.post("/v1/messages", json={"messages": case.rows, "flush": True})
            assert r.status_code == 202, r.text
        for case in (ENGLISH, CHINESE):
            mems = client.get(f"/v1/chats/{case.chat}/memories").json()
            assert any(contains_canary(m["text"], case) for m in mems)
            r = client.delete(f"/v1/chats/{case.chat}/users/{case.user}")
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["deleted"] > 0 and body["memories"] > 0 and body["topics_redistilled"] >= 1
            for mode in ("routed", "hybrid"):
                for query in (*case.queries, case.kept_query):
                    got = client.post("/v1/retrieve", json={"chat_id": case.chat, "query": query, "mode": mode})
                    for item in got.json()["items"]:
                        assert item["speaker"] not in case.names and not contains_canary(item["text"], case)
                        assert not set(item["source_message_ids"]) & case.user_ids
                    assert not contains_canary(got.json()["context"], case)
            mems = client.get(f"/v1/chats/{case.chat}/memories", params={"include_superseded": True}).json()
            assert mems and not any(contains_canary(m["text"], case) or m["speaker"] in case.names for m in mems)
            assert any(m["kind"] == "summary" for m in mems)  # the shared topics were distilled again
            topics = client.get(f"/v1/chats/{case.chat}/topics").json()
            assert not any(set(t["message_ids"]) & case.user_ids for t in topics)
            assert not contains_canary(client.get(f"/v1/chats/{case.chat}/export").text, case)
            assert canary_files(data_dir, case) == {}
            later = [{**r, "message_id": r["message_id"] + "-later"} for r in case.rows]
            r = client.post("/v1/messages", json={"messages": later, "flush": True})
            assert r.status_code == 202, r.text
            body, theirs = r.json(), [row["sender"] == case.user for row in later]
            assert [x["status"] == "withheld" for x in body["results"]] == theirs
            assert body["withheld"] == sum(theirs) > 0 and body["new"] == body["accepted"] == len(later) - sum(theirs)
            assert all("deleted" in x["reason"] for x in body["results"] if x["status"] == "withheld")
            assert canary_files(data_dir, case) == {}  # nothing of theirs was kept


def test_a_deleted_users_message_the_policy_would_drop_leaves_no_dead_letter(tmp_path):
    """Withholding comes before the sensitive-information policy: a deleted user's new message that the
    policy drops is not kept as a dead letter either (on the API and on `memstream ingest`)."""
    policy = SensitivePolicy(actions={"secret": "drop"})
    rows = [{"chat_id": "c1", "message_id": f"m{i}", "sender": s, "ts": f"2024-01-01T00:0{i}:00Z", "text": t}
            for i, (s, t) in enumerate([("bob", "I moved to Lisbon"), ("ann", "Nice!")])]  # fmt: skip
    later = [{"chat_id": "c1", "message_id": "m9", "sender": "bob", "ts": "2024-01-02T00:00:00Z",
              "text": "the wifi password: hunter22 at the Lisbon flat"}]  # fmt: skip
    settings = Settings(data_dir=tmp_path / "d", embedder="none", sensitive=policy)
    with TestClient(create_app(settings, embedder=None)) as client:
        assert client.post("/v1/messages", json={"messages": rows, "flush": True}).status_code == 202
        assert client.delete("/v1/chats/c1/users/bob").status_code == 200
        body = client.post("/v1/messages", json={"messages": later + rows[1:], "flush": True}).json()
        assert [r["status"] for r in body["results"]] == ["withheld", "duplicate"] and body["dead_lettered"] == 0
    asyncio.run(_ingest_later(settings, tmp_path, later))
    for path in (tmp_path / "d").rglob("*"):  # neither the text nor a dead letter of it anywhere
        if path.is_file():
            data = path.read_bytes()
            assert b"Lisbon flat" not in data and b"m9" not in data, path


async def _ingest_later(settings: Settings, tmp_path: Path, later: list[dict]) -> None:
    clients = await build_clients(settings, embedder=None)
    try:
        report = await _ingest(clients, tmp_path, later)
        assert (report.withheld, report.rejected, report.new) == (1, 0, 0)
        assert await clients.log.read(DEAD_LETTERS.name, 0, 100) == []
    finally:
        await clients.close()
