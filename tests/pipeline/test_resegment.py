"""Batch re-segmentation and rollback end to end on the embedded default (design doc 001, 6.4)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agents.config import SegmenterConfig
from memstream import resegment as rs
from memstream.cli import app
from memstream.clients import build_clients
from memstream.ops import ingest, replay
from memstream.settings import Settings
from retrieval.protocols import SearchQuery
from streams.segmentation_ledger import open_ledger
from streams.topics import DISTILL_JOBS, MEMORY_DECISIONS, TOPIC_SEGMENTS

DEMO = Path(str(resources.files("memstream") / "data" / "demo_chat.jsonl"))
CHAT, OTHER = "team-alpha", "dm-alice"
SINCE = datetime(2024, 1, 1, tzinfo=UTC)
FINER = SegmenterConfig(threshold=5.0, idle_close_s=45.0)  # much stricter: topics split


def settings(data_dir: Path, segmenter: SegmenterConfig | None = None) -> Settings:
    return Settings(data_dir=data_dir, embedder="none", **({"segmenter": segmenter} if segmenter else {}))


async def view(clients, chat: str) -> dict:
    """What readers see of a chat: its current topics and its live memory records."""
    topics = await rs.topics_view(clients, chat)
    live = await clients.store.list_memories(chat)
    return {
        "topics": sorted((t.topic_id, t.state, tuple(t.message_ids)) for t in topics),
        "topic_level": sorted(
            (r.kind.value, r.topic_id, r.text) for r in live if r.kind in ("summary", "title")
        ),
        "facts": sorted(
            (r.kind.value, r.topic_id, r.text) for r in live if r.kind not in ("summary", "title")
        ),
    }


async def found(clients, chat: str, text: str, kinds: list[str]) -> set[str | None]:
    hits = await clients.store.search(SearchQuery(chat_id=chat, text=text, mode="bm25", k=50, kinds=kinds))
    return {h.doc.topic_id for h in hits}


@pytest.fixture
async def ingested(tmp_path):
    clients = await build_clients(settings(tmp_path), embedder=None)
    await ingest(clients, DEMO)
    await clients.close()
    return tmp_path


async def test_resegment_then_rollback_restores_the_previous_view(ingested):
    base = await build_clients(settings(ingested), embedder=None)
    before, other_before = await view(base, CHAT), await view(base, OTHER)
    old_summaries = {r.topic_id: r.text for r in await base.store.list_memories(CHAT) if r.kind == "summary"}
    live_before = {r.memory_id for r in await base.store.list_memories(CHAT)}
    await base.close()

    clients = await build_clients(settings(ingested, FINER), embedder=None)  # the settings changed
    ledger = await open_ledger(ingested)
    try:
        dry = await rs.resegment(clients, ledger, CHAT, SINCE, dry_run=True)
        assert not dry.applied and await view(clients, CHAT) == before and await ledger.versions(CHAT) == []

        report = await rs.resegment(clients, ledger, CHAT, SINCE, reason="finer topics")
        assert report.applied and report.version == 2 and report.diff == dry.diff
        d = report.diff
        assert d.count("split") > 0 and d.topics_after > d.topics_before and d.moved_messages > 0
        assert d.one_to_one < 100.0 and d.vi < 100.0
        assert d.topics_before == len(before["topics"])  # every closed topic of the chat was in range
        after = await view(clients, CHAT)
        kept = {c.old[0] for c in d.changes if c.kind == "unchanged"}
        assert {t[0] for t in after["topics"]} == kept | set(report.created)
        assert len(after["topics"]) == d.topics_after
        assert set(report.superseded) == {t[0] for t in before["topics"]} - kept
        stored = {t.topic_id: t for t in await clients.store.list_topics(CHAT)}
        assert all(stored[t].state == "superseded" for t in report.superseded)  # kept, never deleted
        assert all(stored[t].segmentation_version == 2 for t in report.created)

        # summaries of superseded topics are no longer served; the new topics have theirs; facts stay
        gone = [t for t in report.superseded if t in old_summaries]
        assert gone and report.summaries_invalidated == sum(
            1 for r in await clients.store.list_memories(CHAT, live_only=False)
            if r.topic_id in gone and r.kind in ("summary", "title") and not r.live and r.memory_id in live_before
        )  # fmt: skip
        for topic_id in gone:
            assert topic_id not in await found(clients, CHAT, old_summaries[topic_id], ["summary", "title"])
        assert {t for _, t, _ in after["topic_level"]} <= {t[0] for t in after["topics"]}
        assert set(before["facts"]) <= set(after["facts"])  # no fact lost
        fact = next(text for kind, _, text in before["facts"] if kind == "fact")
        assert await found(clients, CHAT, fact, ["fact"])
        assert report.memories_invalidated == report.summaries_invalidated  # only topic-level records

        # consumers can follow: versioned events, jobs and decisions are in the log
        events = [json.loads(r.value) for r in await clients.log.read(TOPIC_SEGMENTS.name, 0, 10_000)]
        versioned = [e for e in events if e["segmentation_version"] == 2]
        assert {e["topic_id"] for e in versioned} == set(report.created)
        assert all(e["kind"] == "closed" and e["reason"] == "resegment:v2" for e in versioned)
        assert set().union(*(e["related_topic_ids"] for e in versioned)) == set(report.superseded)
        jobs = [json.loads(r.value) for r in await clients.log.read(DISTILL_JOBS.name, 0, 10_000)]
        assert set(report.created) <= {j["topic_id"] for j in jobs}

        assert await view(clients, OTHER) == other_before  # isolation

        versions = await rs.list_versions(clients, ledger, CHAT)
        assert [(v.version, v.kind, v.status) for v in versions] == [
            (1, "stream", "active"),
            (2, "resegment", "active"),
        ]
        assert versions[1].reason == "finer topics" and versions[1].settings["threshold"] == 5.0

        back = await rs.rollback(clients, ledger, CHAT, reason="too fine")
        assert back.rolled_back == [2] and back.current_version == 1
        assert back.topics_restored == len(report.superseded) and back.topics_hidden == len(report.created)
        assert await view(clients, CHAT) == before
        for topic_id in gone:
            assert topic_id in await found(clients, CHAT, old_summaries[topic_id], ["summary", "title"])
        assert await view(clients, OTHER) == other_before
        decisions = [json.loads(r.value) for r in await clients.log.read(MEMORY_DECISIONS.name, 0, 100_000)]
        assert (
            Counter(d["op"] for d in decisions if "rollback" in d["reason"])["ADD"] == back.records_restored
        )
        statuses = [(v.version, v.status) for v in await rs.list_versions(clients, ledger, CHAT)]
        assert statuses == [(1, "active"), (2, "rolled_back")]
        actions = [a for _, a, _, _ in await ledger.actions(CHAT)]
        assert actions == ["recorded", "applying", "applied", "rolled_back"]

        with pytest.raises(rs.SegmentationError, match="no active re-segmentation"):
            await rs.rollback(clients, ledger, CHAT)
        with pytest.raises(rs.SegmentationError, match="no stored messages"):
            await rs.resegment(clients, ledger, CHAT, datetime(2030, 1, 1, tzinfo=UTC))
        with pytest.raises(rs.SegmentationError, match="later than"):
            await rs.resegment(clients, ledger, CHAT, SINCE, SINCE)
        with pytest.raises(rs.SegmentationError, match="no segmentation version 7"):
            await rs.rollback(clients, ledger, CHAT, to=7)

        again = await rs.resegment(clients, ledger, CHAT, SINCE)
        assert again.version == 3 and not set(again.created) & set(report.created)  # numbers never reused
    finally:
        await ledger.close()
        await clients.close()


async def test_rollback_to_a_version_undoes_every_later_one(ingested):
    clients = await build_clients(settings(ingested), embedder=None)
    ledger = await open_ledger(ingested)
    try:
        before = await view(clients, CHAT)
        unchanged = await rs.resegment(clients, ledger, CHAT, SINCE)  # same settings: nothing to write
        assert not unchanged.applied and not unchanged.diff.changed and await ledger.versions(CHAT) == []
        first = await rs.resegment(clients, ledger, CHAT, SINCE, cfg=FINER)
        second = await rs.resegment(clients, ledger, CHAT, SINCE, cfg=SegmenterConfig(threshold=0.3))
        assert (first.version, second.version) == (2, 3) and second.applied
        assert set(second.superseded) & set(first.created)  # version 3 replaced topics of version 2
        back = await rs.rollback(clients, ledger, CHAT, to=1)
        assert back.rolled_back == [3, 2] and back.current_version == 1
        assert await view(clients, CHAT) == before
    finally:
        await ledger.close()
        await clients.close()


async def test_replay_rebuilds_version_one_and_discards_later_versions(ingested):
    clients = await build_clients(settings(ingested), embedder=None)
    ledger = await open_ledger(ingested)
    try:
        before = await view(clients, CHAT)
        await rs.resegment(clients, ledger, CHAT, SINCE, cfg=FINER)
        await replay(clients)
        assert await view(clients, CHAT) == before
        versions = await rs.list_versions(clients, ledger, CHAT)
        assert [(v.version, v.status) for v in versions] == [(1, "active"), (2, "discarded")]
        with pytest.raises(rs.SegmentationError):
            await rs.rollback(clients, ledger, CHAT)
    finally:
        await ledger.close()
        await clients.close()


def test_cli_resegment_list_rollback_and_topics(ingested):
    runner = CliRunner()
    common = ["--chat", CHAT, "--data-dir", str(ingested), "--embedder", "none"]
    r = runner.invoke(app, ["resegment", *common, "--since", "2024-01-01", "--set", "threshold=5",
                            "--set", "idle_close_s=45"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "version 2 applied" in r.output and "split" in r.output
    r = runner.invoke(app, ["resegment", *common, "--list", "--json"])
    assert r.exit_code == 0 and [v["status"] for v in json.loads(r.output)] == ["active", "active"]
    r = runner.invoke(app, ["topics", "--chat", CHAT, "--data-dir", str(ingested), "--version", "2"])
    assert r.exit_code == 0 and "closed" in r.output
    r = runner.invoke(app, ["resegment", *common, "--rollback"])
    assert r.exit_code == 0 and "rolled back version(s) 2" in r.output
    r = runner.invoke(app, ["resegment", *common, "--rollback"])
    assert r.exit_code == 2 and "no active re-segmentation" in r.output
    r = runner.invoke(app, ["resegment", *common, "--since", "2024-01-01", "--set", "nope=1"])
    assert r.exit_code == 2 and "KEY=VALUE" in r.output
    r = runner.invoke(app, ["resegment", *common])
    assert r.exit_code == 2 and "exactly one of" in r.output


async def test_api_lists_versions_and_the_current_topics(ingested):
    from fastapi.testclient import TestClient

    from memstream.api import create_app

    clients = await build_clients(settings(ingested), embedder=None)
    ledger = await open_ledger(ingested)
    try:
        report = await rs.resegment(clients, ledger, CHAT, SINCE, cfg=FINER)
    finally:
        await ledger.close()
        await clients.close()
    with TestClient(create_app(settings(ingested), embedder=None)) as api:
        versions = api.get(f"/v1/chats/{CHAT}/segmentation").json()
        assert [(v["version"], v["status"]) for v in versions] == [(1, "active"), (2, "active")]
        current = {t["topic_id"] for t in api.get(f"/v1/chats/{CHAT}/topics").json()}
        assert set(report.created) <= current and not current & set(report.superseded)
        superseded = api.get(f"/v1/chats/{CHAT}/topics", params={"state": "superseded"}).json()
        assert {t["topic_id"] for t in superseded} == set(report.superseded)


async def test_resegment_and_rollback_with_the_default_embedder(tmp_path, minilm):
    s = Settings(data_dir=tmp_path)
    clients = await build_clients(s, embedder=minilm)
    ledger = await open_ledger(tmp_path)
    try:
        await ingest(clients, DEMO)
        before = await view(clients, CHAT)
        same = await rs.resegment(clients, ledger, CHAT, SINCE)  # unchanged settings reproduce the stream
        assert not same.applied and not same.diff.changed and same.diff.vi == 100.0
        report = await rs.resegment(clients, ledger, CHAT, SINCE, cfg=FINER)
        assert report.applied and report.diff.count("split")
        after = await view(clients, CHAT)
        assert {t for _, t, _ in after["topic_level"]} <= {t[0] for t in after["topics"]}
        facts = {text for kind, _, text in after["facts"]}
        assert {text for kind, _, text in before["facts"]} <= facts  # no fact lost
        await rs.rollback(clients, ledger, CHAT)
        assert await view(clients, CHAT) == before
    finally:
        await ledger.close()
        await clients.close()
