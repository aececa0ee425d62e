"""Close-time repair and the audit on the embedded pipeline: a topic glued from two unrelated conversations
is split by new SPLIT events after its CLOSED event (close-time check), or by `memstream audit --apply` as a
segmentation version that `resegment --rollback` undoes; either way its parts are distilled instead of it."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from agents.config import AuditConfig, SegmenterConfig
from memstream.cli import app as cli_app
from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from schemas import TopicEventKind
from streams.codec import decode
from streams.topics import DISTILL_JOBS, TOPIC_SEGMENTS
from tests.helpers import write_jsonl

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
LINES = [
    ("alice", "my nginx reverse proxy returns 502 bad gateway for the node app"),
    ("bob", "is the upstream node process actually listening on port 3000?"),
    ("alice", "netstat shows it listening on 127.0.0.1:3000"),
    ("bob", "check proxy_pass in the server block, maybe it points at localhost:8080"),
    ("alice", "yes proxy_pass had the wrong port, fixed it and reloaded nginx"),
    ("bob", "great, the 502 errors should be gone now"),
    ("carol", "my sourdough bread came out flat and dense again"),
    ("dave", "how long did you let the dough proof before baking?"),
    ("carol", "about four hours at room temperature, the starter was bubbly"),
    ("dave", "try a longer cold fermentation in the fridge overnight"),
    ("carol", "should I bake it in a dutch oven at high heat?"),
    ("dave", "yes, 250 degrees with the lid on for the first twenty minutes"),
]
GLUE = SegmenterConfig(dyadic_shift=False, threshold=-10.0)  # every message joins the open topic: one glued topic
AUDIT = dict(split=True, break_similarity=0.3, window=3, min_part=3)


def rows() -> list[dict]:
    return [{"chat_id": "g1", "message_id": f"m{i}", "sender": s, "ts": (T0 + timedelta(seconds=30 * i)).isoformat(),
             "text": t} for i, (s, t) in enumerate(LINES)]  # fmt: skip


async def ingest_glued(tmp_path, minilm, audit: AuditConfig):
    settings = Settings(data_dir=tmp_path / "data", embedder="minilm", segmenter=GLUE, audit=audit)
    clients = await build_clients(settings, embedder=minilm)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", rows()), flush=True)
        events = [
            decode(TOPIC_SEGMENTS, r.value) for r in await clients.log.read(TOPIC_SEGMENTS.name, 0, 1000)
        ]
        jobs = [decode(DISTILL_JOBS, r.value) for r in await clients.log.read(DISTILL_JOBS.name, 0, 1000)]
        topics = {t.topic_id: t for t in await clients.store.list_topics("g1")}
        memories = await clients.store.list_memories("g1")
        return events, jobs, topics, memories
    finally:
        await clients.close()


def test_glued_topic_is_split_at_close_time(tmp_path, minilm):
    events, jobs, topics, memories = asyncio.run(ingest_glued(tmp_path, minilm, AuditConfig(**AUDIT)))
    kinds = [e.kind for e in events]
    closed = kinds.index(TopicEventKind.CLOSED)
    original = events[closed].topic_id
    assert events[closed].message_ids == [f"m{i}" for i in range(12)]  # the original stays in the log
    splits = events[closed + 1 :]
    assert [e.kind for e in splits] == [TopicEventKind.SPLIT] * 2
    assert [e.topic_id for e in splits] == [f"{original}.p0", f"{original}.p1"]
    assert splits[0].message_ids == [f"m{i}" for i in range(6)]
    assert splits[1].message_ids == [f"m{i}" for i in range(6, 12)]
    assert all(e.related_topic_ids == [original] and e.reason.startswith("close-check:") for e in splits)
    assert {e.segmentation_version for e in splits} == {events[closed].segmentation_version}
    assert sorted(j.topic_id for j in jobs) == [f"{original}.p0", f"{original}.p1"]  # not the original
    assert [m.message_id for m in jobs[0].messages] == splits[0].message_ids
    assert topics[original].state == "split"
    assert topics[f"{original}.p0"].state == topics[f"{original}.p1"].state == "closed"
    assert topics[f"{original}.p1"].participants == ["carol", "dave"]
    assert memories  # the parts were distilled


def test_without_the_close_check_the_glued_topic_is_distilled_whole(tmp_path, minilm):
    events, jobs, topics, _ = asyncio.run(
        ingest_glued(tmp_path, minilm, AuditConfig(**AUDIT, close_check=False))
    )
    assert TopicEventKind.SPLIT not in [e.kind for e in events]
    assert [j.topic_id for j in jobs] == [e.topic_id for e in events if e.kind == TopicEventKind.CLOSED]
    assert [t.state for t in topics.values()] == ["closed"]


@pytest.fixture
def audit_env(monkeypatch):
    monkeypatch.setenv("MEMSTREAM_AUDIT__BREAK_SIMILARITY", "0.3")
    monkeypatch.setenv("MEMSTREAM_AUDIT__WINDOW", "3")
    monkeypatch.setenv("MEMSTREAM_AUDIT__MIN_PART", "3")
    monkeypatch.setenv("MEMSTREAM_AUDIT__SPLIT", "true")


def test_audit_cli_reports_then_applies_the_split(tmp_path, minilm, audit_env):
    _, _, topics, _ = asyncio.run(ingest_glued(tmp_path, minilm, AuditConfig(**AUDIT, close_check=False)))
    (original,) = topics
    data = str(tmp_path / "data")
    runner = CliRunner()

    report = runner.invoke(cli_app, ["audit", "--data-dir", data, "--json"])
    assert report.exit_code == 0, report.output
    body = json.loads(report.stdout)
    (chat,) = body["reports"]
    assert chat["chat_id"] == "g1" and [s["topic_id"] for s in chat["splits"]] == [original]
    assert body["applied"] is False and body["versions"] == []

    table = runner.invoke(cli_app, ["audit", "--data-dir", data, "--chat", "g1"])
    assert table.exit_code == 0 and "split" in table.output and "g1" in table.output

    applied = runner.invoke(cli_app, ["audit", "--data-dir", data, "--apply", "--json"])
    assert applied.exit_code == 0, applied.output
    (version,) = json.loads(applied.stdout)["versions"]  # the repair is segmentation version 2 of the chat
    assert version["chat_id"] == "g1" and version["version"] == 2
    assert version["superseded"] == [original] and len(version["created"]) == 2
    parts = version["created"]

    async def state():
        clients = await build_clients(Settings(data_dir=tmp_path / "data", embedder="none"), embedder=None)
        try:
            evs = [
                decode(TOPIC_SEGMENTS, r.value) for r in await clients.log.read(TOPIC_SEGMENTS.name, 0, 99)
            ]
            topics = {t.topic_id: t for t in await clients.store.list_topics("g1")}
            live = {m.topic_id for m in await clients.store.list_memories("g1") if m.kind == "summary"}
            return evs, topics, live
        finally:
            await clients.close()

    events, topics, live = asyncio.run(state())
    repaired = [e for e in events if e.reason == "audit:v2"]  # new versioned events after the original
    assert sorted(e.topic_id for e in repaired) == sorted(parts)
    assert all(e.kind == TopicEventKind.CLOSED and e.related_topic_ids == [original] for e in repaired)
    assert sorted(len(e.message_ids) for e in repaired) == [6, 6]
    assert topics[original].state == "superseded" and topics[original].message_ids == [f"m{i}" for i in range(12)]
    assert all(topics[p].state == "closed" and topics[p].segmentation_version == 2 for p in parts)
    assert set(parts) <= live and original not in live  # the parts are distilled, the glued summary hidden

    listed = runner.invoke(cli_app, ["resegment", "--data-dir", data, "--chat", "g1", "--list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [(v["version"], v["kind"]) for v in json.loads(listed.stdout)] == [(1, "stream"), (2, "audit")]

    again = runner.invoke(cli_app, ["audit", "--data-dir", data, "--json"])
    assert json.loads(again.stdout)["reports"][0]["splits"] == []  # the parts are whole conversations

    undo = runner.invoke(cli_app, ["resegment", "--data-dir", data, "--chat", "g1", "--rollback", "--embedder", "none"])
    assert undo.exit_code == 0, undo.output
    _, topics, live = asyncio.run(state())
    assert topics[original].state == "closed" and all(topics[p].state == "rolled_back" for p in parts)
    assert original in live and not set(parts) & live


def test_audit_cli_on_an_empty_data_dir(tmp_path):
    result = CliRunner().invoke(cli_app, ["audit", "--data-dir", str(tmp_path / "empty"), "--embedder", "none",
                                          "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["reports"] == []
