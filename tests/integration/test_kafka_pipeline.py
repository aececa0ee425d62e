"""The pipeline over a real Kafka-wire broker (Tansu) and real Redis: same memory as the embedded run,
nothing lost or duplicated across a SIGKILL, deletions survive a blue/green replay."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from backends.graph.sqlite import GraphSQLiteStore
from backends.sqlite.store import SQLiteStore
from memstream.clients import open_working_memory
from memstream.kafka_admin import bootstrap_topics, committed_offsets, lag, produce, produce_file, read_topic
from memstream.kafka_admin import wait_idle as kafka_wait_idle
from memstream.kafka_replay import delete_data
from memstream.kafka_replay import replay as kafka_replay
from memstream.settings import Settings
from streams.log import Produce
from streams.topics import DEAD_LETTERS, DISTILL_RESULTS, RAW_MESSAGES
from tests.integration import kafka_fixtures
from tests.integration.kafka_fixtures import cli, spawn_worker, stop, worker_env

pytestmark = pytest.mark.integration
tansu_broker = kafka_fixtures.tansu_broker  # fixtures, by name
redis_wm_url = kafka_fixtures.redis_wm_url

LOCOMO = Path(
    os.environ.get("MEMSTREAM_LOCOMO", Path(__file__).parents[3] / "shared/data/locomo/locomo10_dev.json")
)
CHAT = "conv-26"
GROUP = "memstream"


def locomo_slice(tmp_path: Path, sessions: int | None) -> Path:
    """The first LoCoMo conversation, cut to its first ``sessions`` sessions."""
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO}")
    conv = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
    if sessions is not None:
        keep = {f"session_{i}" for i in range(1, sessions + 1)}
        c = conv["conversation"]
        conv["conversation"] = {k: v for k, v in c.items()
                                if not k.startswith("session_") or k.removesuffix("_date_time") in keep}  # fmt: skip
    path = tmp_path / "locomo-slice.json"
    path.write_text(json.dumps([conv]), encoding="utf-8")
    return path


async def store_snapshot(path: Path) -> dict:
    store = SQLiteStore(path, None)
    await store.bootstrap()
    try:
        snap: dict = {"memories": [], "messages": 0, "topics": []}
        for chat in sorted(await store.chats()):
            snap["memories"] += sorted(
                m.model_dump_json() for m in await store.list_memories(chat, live_only=False)
            )
            snap["messages"] += len(await store.list_messages(chat))
            snap["topics"] += sorted(t.model_dump_json() for t in await store.list_topics(chat))
        return snap
    finally:
        await store.close()


async def graph_snapshot(path: Path) -> dict:
    """Every entity and relation edge (invalidated ones too) of a graph memory file, by chat."""
    graph = GraphSQLiteStore(path, None)
    await graph.bootstrap()
    try:
        snap: dict = {"entities": [], "edges": []}
        for chat in sorted(await graph.chats()):
            snap["entities"] += sorted(n.model_dump_json() for n in await graph.entities(chat))
            snap["edges"] += sorted(e.model_dump_json() for e in await graph.edges(chat, include_invalid=True))
        return snap
    finally:
        await graph.close()


def embedded_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    return {**env, "PYTHONHASHSEED": "0", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


async def embedded_snapshot(src: Path, data_dir: Path, *, delete_user: str | None = None) -> dict:
    """The reference: ``memstream ingest`` (and ``delete`` + ``replay``) on the embedded log, same hash seed."""
    env, where = embedded_env(), ["--data-dir", str(data_dir)]
    cli(env, "ingest", str(src), *where, "--embedder", "none")
    if delete_user:
        cli(env, "delete", "--chat", CHAT, "--user", delete_user, *where)
        cli(env, "replay", "--yes", *where, "--embedder", "none")
    return await store_snapshot(data_dir / "memstream.db")


def wait_idle(broker, worker, timeout_s: float = 120.0) -> None:
    try:
        kafka_wait_idle(broker.hosts, GROUP, timeout_s=timeout_s, poll_s=0.3)
    finally:
        assert worker.poll() is None, "the worker died"


def kafka_settings(broker, tmp_path: Path, wm_url: str) -> Settings:
    return Settings(data_dir=tmp_path / "kdata", log_url=broker.url, store_url=f"sqlite:///{tmp_path / 'k.db'}",
                    working_memory_url=wm_url, embedder="none")  # fmt: skip


async def test_kafka_run_equals_embedded_run(tmp_path, tansu_broker, redis_wm_url):
    """Same records and the same graph memory: both runtimes run the one stage list (streams.stages)."""
    src = locomo_slice(tmp_path, 3)
    expected = await embedded_snapshot(src, tmp_path / "embedded")
    assert expected["memories"] and expected["messages"] == 58
    expected_graph = await graph_snapshot(tmp_path / "embedded" / "graph.db")
    assert expected_graph["entities"] and expected_graph["edges"]

    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, partitions=2)
    report = produce_file(hosts, src, exact_offsets=True)
    junk = Produce(RAW_MESSAGES.name, CHAT, "junk-1", '{"chat_id": 5}')
    produce(hosts, [junk], exact_offsets=True)
    assert report.new == 59 and lag(hosts, GROUP)[GROUP][RAW_MESSAGES.name] == 60

    store = tmp_path / "k.db"
    env = worker_env(tansu_broker, tmp_path / "kdata", store, redis_wm_url)
    worker = spawn_worker(env, tmp_path / "worker.log")
    try:
        wait_idle(tansu_broker, worker)
    finally:
        assert stop(worker) == 0
    assert await store_snapshot(store) == expected
    assert await graph_snapshot(tmp_path / "kdata" / "graph.db") == expected_graph

    dead = [json.loads(r.value) for r in read_topic(hosts, DEAD_LETTERS.name)]
    assert [(d["stage"], d["payload"]) for d in dead] == [("segment", junk.value)]
    wm = await open_working_memory(redis_wm_url)
    try:
        assert await wm.get_pool(CHAT)  # the segmenter's state lives in Redis between batches
    finally:
        await wm.close()


async def test_sigkilled_worker_resumes_without_loss_or_duplicates(tmp_path, tansu_broker, redis_wm_url):
    src = locomo_slice(tmp_path, None)
    expected = await embedded_snapshot(src, tmp_path / "embedded")
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, partitions=2)
    produce_file(hosts, src, exact_offsets=True)

    store = tmp_path / "k.db"
    env = worker_env(tansu_broker, tmp_path / "kdata", store, redis_wm_url)
    worker = spawn_worker(env, tmp_path / "worker.log", "--batch", "4")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and worker.poll() is None:
        done = committed_offsets(hosts, [GROUP])[GROUP]
        if any(tp.topic == DISTILL_RESULTS.name and o > 0 for tp, o in done.items()):
            break  # the consolidator has committed some results, not all
        await asyncio.sleep(0.05)
    assert stop(worker, signal.SIGKILL) == -signal.SIGKILL
    # measured after the kill: uncommitted input is what the second worker must redo without duplicating
    # effects (the store may already hold some or all of them: the kill can land between write and commit)
    remaining = sum(lag(hosts, GROUP)[GROUP].values())
    assert remaining > 0, "the worker finished before it could be killed"

    worker = spawn_worker(env, tmp_path / "worker2.log", "--batch", "4")
    try:
        wait_idle(tansu_broker, worker)
    finally:
        assert stop(worker) == 0
    assert await store_snapshot(store) == expected


async def test_a_worker_that_caught_up_commits_without_waiting_for_the_commit_interval(tmp_path, tansu_broker,
                                                                                    redis_wm_url):  # fmt: skip
    """A 60 s commit interval: the group still reads lag 0 soon after the burst, since each agent commits
    what it acked when nothing waits behind its batch (streams.faust_app, take_ahead's ``on_idle``)."""
    src = locomo_slice(tmp_path, 2)
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, partitions=2)
    report = produce_file(hosts, src, exact_offsets=True)
    assert report.new > 0
    env = worker_env(tansu_broker, tmp_path / "kdata", tmp_path / "k.db", redis_wm_url)
    worker = spawn_worker(env, tmp_path / "worker.log", "--commit-interval", "60")
    try:
        wait_idle(tansu_broker, worker, timeout_s=45.0)  # the interval's first commit would come at 60 s
    finally:
        assert stop(worker) == 0
    assert await store_snapshot(tmp_path / "k.db") == await embedded_snapshot(src, tmp_path / "embedded")


async def test_deleted_user_does_not_come_back_after_replay(tmp_path, tansu_broker, redis_wm_url):
    src = locomo_slice(tmp_path, 3)
    gone = "Melanie"
    expected = await embedded_snapshot(src, tmp_path / "embedded", delete_user=gone)
    assert expected["memories"]
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, partitions=2)
    produce_file(hosts, src, exact_offsets=True)
    store = tmp_path / "k.db"
    env = worker_env(tansu_broker, tmp_path / "kdata", store, redis_wm_url)
    settings = kafka_settings(tansu_broker, tmp_path, redis_wm_url)
    worker = spawn_worker(env, tmp_path / "worker.log")
    try:
        wait_idle(tansu_broker, worker)
        with pytest.raises(RuntimeError, match="active"):  # never under a running worker
            await kafka_replay(settings, embedder=None, inactive_wait_s=0)
    finally:
        assert stop(worker) == 0

    async def spoken_by_gone() -> tuple[int, int]:
        s = SQLiteStore(store, None)
        await s.bootstrap()
        try:
            msgs = [m for m in await s.list_messages(CHAT) if m.sender == gone]
            mems = [m for m in await s.list_memories(CHAT, live_only=False) if m.speaker == gone]
            return len(msgs), len(mems)
        finally:
            await s.close()

    assert all(await spoken_by_gone())
    assert await delete_data(settings, CHAT, gone) > 0
    assert await spoken_by_gone() == (0, 0)
    # --force: Tansu keeps a stopped member in the group, so the "no worker running" probe cannot pass there
    done = cli(env, "kafka", "replay", "--yes", "--force", "--embedder", "none", prod=True)
    said = " ".join(done.stderr.split())
    assert "replayed 59 raw records of 1 chat(s)" in said
    assert "1 ledgered deletions honoured, 0 group offsets moved" in said  # the worker had drained
    assert await spoken_by_gone() == (0, 0)
    assert await store_snapshot(store) == expected
    assert not list(tmp_path.glob("k.db.next*"))

    # live again, with the whole input delivered a second time: the deleted user still does not return
    produce_file(hosts, src, exact_offsets=True)
    worker = spawn_worker(env, tmp_path / "worker2.log")
    try:
        wait_idle(tansu_broker, worker)
    finally:
        assert stop(worker) == 0
    assert await spoken_by_gone() == (0, 0)
    assert await store_snapshot(store) == expected


async def test_kafka_log_appends_keyed_records_and_reads_the_ledger(tansu_broker):
    from memstream.kafka_admin import read_ledger, record_deletion
    from streams.kafka_log import KafkaLog

    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, partitions=2)
    record_deletion(hosts, "c1", "*")
    kafka_log = await KafkaLog(hosts, refresh_s=0, exact_offsets=True).open()
    try:
        assert await kafka_log.deletions() == {("c1", "*")}
        items = [Produce(RAW_MESSAGES.name, "c2", f"c2\x1fm{i}", json.dumps({"i": i})) for i in range(3)]
        assert await kafka_log.append(items) == 3
        await kafka_log.record_deletion("c2", "bob", "2024-01-01T00:00:00Z")
        assert await kafka_log.deletions() == {("c1", "*"), ("c2", "bob")}
    finally:
        await kafka_log.close()
    got = read_topic(hosts, RAW_MESSAGES.name)
    assert [(r.key, r.record_id, r.value) for r in got] == [(p.key, p.record_id, p.value) for p in items]
    assert read_ledger(hosts) == {("c1", "*"), ("c2", "bob")}


async def test_the_ledger_is_fetched_only_while_refreshing_and_sees_other_processes_deletions(tansu_broker):
    """The stages read the ledger before every batch. A fetch left running on it (nearly always empty) was
    held by Tansu up to its wait, and the next refresh's end-offset request waited behind it: the worker's
    stages stalled 0.4-1.4 s every two seconds. The partition is paused between refreshes."""
    from memstream.kafka_admin import record_deletion
    from streams.kafka_log import KafkaLog

    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, partitions=2)
    kafka_log = await KafkaLog(hosts, refresh_s=0).open()
    try:
        assert await kafka_log.deletions() == set()
        record_deletion(hosts, "c1", "ann")  # another process (the API, the CLI) writes the ledger
        assert await kafka_log.deletions() == {("c1", "ann")}
        assert kafka_log._tp in kafka_log._consumer.paused()
        t0 = time.monotonic()
        for _ in range(20):  # nothing new: an end-offset request each, answered at once
            assert await kafka_log.deletions() == {("c1", "ann")}
        assert time.monotonic() - t0 < 2.0  # held behind a fetch: ~0.5 s each
        record_deletion(hosts, "c2", "*")
        assert await kafka_log.deletions() == {("c1", "ann"), ("c2", "*")}
    finally:
        await kafka_log.close()


def test_lag_probe_reads_fresh_offsets_on_every_call_over_one_pair_of_clients(tansu_broker):
    """``LagProbe`` (wait_idle, the throughput bench) keeps its clients across polls; each poll still reads the
    committed and end offsets afresh, and agrees with a one-shot ``lag``."""
    from memstream.kafka_admin import LagProbe, end_offsets, move_group_offsets

    hosts, group = tansu_broker.hosts, f"probe-{os.getpid()}-{time.time_ns()}"
    bootstrap_topics(hosts, partitions=2)
    with LagProbe(hosts) as probe:
        before = probe.lag(group)[group]
        assert before == lag(hosts, group)[group]
        produce(hosts, [Produce(RAW_MESSAGES.name, CHAT, f"probe-{i}", "{}") for i in range(5)], exact_offsets=True)
        after = probe.lag(group)[group]
        assert after[RAW_MESSAGES.name] == before.get(RAW_MESSAGES.name, 0) + 5
        assert after == lag(hosts, group)[group]
        move_group_offsets(hosts, group, end_offsets(hosts, [RAW_MESSAGES.name]))
        assert probe.lag(group)[group][RAW_MESSAGES.name] == 0
