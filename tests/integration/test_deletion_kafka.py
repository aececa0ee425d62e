"""`memstream kafka delete` on a Kafka-wire broker (Tansu): the ledger entry, and a null-value tombstone per
deleted raw record on a compacted raw topic (keyed like the originals, in their partitions); nothing on
the default retention-only raw topic; after a worker processed a chat, no byte of the deleted user's texts
in any file of the data dir."""

from __future__ import annotations

import asyncio
import json

import pytest
from kafka.admin import NewTopic

from memstream.clients import open_store
from memstream.erasure_check import needles, remnant_files
from memstream.kafka_admin import _admin, bootstrap_topics, produce, produce_file, read_ledger, wait_idle
from memstream.kafka_delete import LedgerLog, _raw_by_partition, cleanup_policy, raw_tombstones
from memstream.kafka_replay import delete_data
from memstream.settings import Settings
from retrieval.deletion import to_redistil
from schemas import MemoryKind
from streams.codec import Tombstone, decode, is_tombstone
from streams.log import Produce
from streams.topics import RAW_MESSAGES
from tests.integration import kafka_fixtures
from tests.integration.kafka_fixtures import spawn_worker, stop, worker_env

pytestmark = pytest.mark.integration
tansu_broker = kafka_fixtures.tansu_broker  # fixtures, by name
redis_wm_url = kafka_fixtures.redis_wm_url


def _raw(chat: str, i: int, sender: str) -> Produce:
    msg = {"chat_id": chat, "message_id": f"m{i}", "sender": sender, "ts": "2024-01-01T00:00:00Z",
           "text": f"{sender} says secret {i}"}  # fmt: skip
    key = f"{chat}\x1fm{i}"  # the compacted layout: one key per message
    return Produce(RAW_MESSAGES.name, key, key, json.dumps(msg))


async def _plain_delete(settings: Settings, chat: str, user: str) -> None:
    """``memstream delete`` with a Kafka log URL (the API's DELETE takes the same two steps)."""
    from typer.testing import CliRunner

    from memstream.cli import app

    env = {"MEMSTREAM_LOG_URL": settings.log_url, "MEMSTREAM_STORE_URL": settings.store_url,
           "MEMSTREAM_WORKING_MEMORY_URL": settings.working_memory_url, "MEMSTREAM_EMBEDDER": "none"}  # fmt: skip
    args = ["delete", "--chat", chat, "--user", user, "--force", "--data-dir", str(settings.data_dir)]
    out = await asyncio.to_thread(CliRunner().invoke, app, args, env=env)  # the command runs its own loop
    assert out.exit_code == 0, out.output


async def _kafka_delete(settings: Settings, chat: str, user: str) -> None:
    await delete_data(settings, chat, user, embedder=None)


@pytest.mark.parametrize("delete", [_kafka_delete, _plain_delete], ids=["kafka-delete", "delete"])
async def test_kafka_delete_tombstones_the_users_raw_records_on_a_compacted_topic(
    tmp_path, tansu_broker, redis_wm_url, delete
):
    hosts = tansu_broker.hosts
    admin = _admin(hosts)
    try:
        admin.create_topics([NewTopic(RAW_MESSAGES.name, 2, 1, topic_configs={"cleanup.policy": "compact"})])
    finally:
        admin.close()
    bootstrap_topics(hosts)  # the other topics
    assert "compact" in cleanup_policy(hosts, RAW_MESSAGES.name)
    items = [_raw("c", i, "u" if i % 2 else "v") for i in range(6)] + [_raw("d", 9, "u")]
    produce(hosts, items, exact_offsets=True)
    before = {p: [r.key for r in recs] for p, recs in _raw_by_partition(hosts).items()}

    settings = Settings(data_dir=tmp_path / "d", log_url=tansu_broker.url, store_url=f"sqlite:///{tmp_path / 's.db'}",
                        working_memory_url=redis_wm_url, embedder="none")  # fmt: skip
    await delete(settings, "c", "u")
    assert ("c", "u") in read_ledger(hosts)

    after = _raw_by_partition(hosts)
    tombs = {(p, r.key) for p, recs in after.items() for r in recs if is_tombstone(r.value)}
    theirs = {(p, k) for p, keys in before.items() for k in keys if k in {"c\x1fm1", "c\x1fm3", "c\x1fm5"}}
    assert tombs == theirs  # one per deleted record, same key, same partition; other chat and users untouched
    for recs in after.values():
        for r in recs:
            if is_tombstone(r.value):
                assert r.value == "" and isinstance(decode(RAW_MESSAGES, r.value), Tombstone)
    assert raw_tombstones(hosts, "c", "u") == 0  # idempotent: nothing left to erase

    later = tmp_path / "later.jsonl"  # the deleted user's new messages are not produced at all
    later.write_text("".join(json.dumps({"chat_id": "c", "message_id": f"n{i}", "sender": s, "text": f"{s} later {i}",
                                         "ts": "2024-01-02T00:00:00Z"}) + "\n" for i, s in enumerate("uvu")))  # fmt: skip
    report = produce_file(hosts, later, exact_offsets=True)
    assert (report.read, report.withheld) == (3, 2)
    texts = [r.value for recs in _raw_by_partition(hosts).values() for r in recs if not is_tombstone(r.value)]
    assert any("v later 1" in t for t in texts) and not any("u later" in t for t in texts)


async def test_no_tombstones_on_the_default_retention_only_raw_topic(tansu_broker):
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts)
    assert "compact" not in cleanup_policy(hosts, RAW_MESSAGES.name)
    produce(hosts, [_raw("c", 1, "u")], exact_offsets=True)
    assert raw_tombstones(hosts, "c", "u") == 0


# A hiking group's chat (written for this test). Mara's messages carry words no one else writes.
HIKE = "ridge-walkers"
HIKE_LINES = [
    ("tobias", "Who wants to do the ridge trail on Sunday morning? I can drive three people in my car."),
    ("mara", "Count me in, though my knee still aches after the Quellbach relay, so I will take the lower path."),
    ("lena", "I am coming too and I will bring a big thermos of tea and oat bars for everyone."),
    ("mara", "My cousin Ottiline may join us; she came back from Hammerfest with a brand new telescope."),
    ("tobias", "Good, then we meet at the bakery by the old bridge at seven sharp."),
    ("mara", "I will carry the first aid pouch, refilled with blister plasters after the gorge weekend."),
    ("lena", "The forecast says drizzle until nine, so everybody should pack a rain shell."),
    ("tobias", "Noted. Parking at the trailhead costs four euros, bring coins for the machine."),
    ("lena", "Other thing: the heating bill for the flat arrived, the quarter comes to 412 euros."),
    ("mara", "I can transfer my part on Friday once the Brightwater invoice for my translation is paid."),
    ("tobias", "Fine by me, I will pay mine tonight and keep the receipt on the fridge."),
    ("mara", "Could we switch to the greener tariff next winter? Zephyrine at work saved quite a lot with it."),
    ("lena", "Sounds sensible, let us compare the offers when the contract comes up for renewal."),
    ("tobias", "Agreed, I will put a reminder in the shared calendar for October."),
]
MARAS_WORDS = [b"Quellbach", b"Ottiline", b"Hammerfest", b"blister plasters", b"Brightwater", b"Zephyrine"]


def _write_hike(path, *extra: dict, unit: str = "hour") -> None:
    """The hiking chat as JSON Lines, eight messages a day, an hour (or a minute) apart, ``extra`` after it."""
    at = [f"{8 + i % 8:02d}:00" if unit == "hour" else f"08:{i % 8:02d}" for i in range(len(HIKE_LINES))]
    rows = [{"chat_id": HIKE, "message_id": f"h{i}", "sender": who, "ts": f"2024-05-0{1 + i // 8}T{at[i]}:00Z",
             "text": text} for i, (who, text) in enumerate(HIKE_LINES)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, *extra]), encoding="utf-8")


def _processed(tmp_path, broker, wm_url: str, data, *extra: dict, unit: str = "hour",
               embedder: str = "none") -> dict[str, str]:  # fmt: skip
    """The hiking chat (:func:`_write_hike`) produced and processed by a worker into ``data``; returns the
    worker's environment."""
    src = tmp_path / "hike.jsonl"
    _write_hike(src, *extra, unit=unit)
    bootstrap_topics(broker.hosts, partitions=2)
    produce_file(broker.hosts, src, exact_offsets=True)
    env = worker_env(broker, data, data / "memstream.db", wm_url)
    worker = spawn_worker(env, tmp_path / "w1.log", "--embedder", embedder)
    try:
        wait_idle(broker.hosts, "memstream", timeout_s=120, poll_s=0.3)
    finally:
        assert stop(worker) == 0
    return env


async def test_kafka_delete_of_a_user_leaves_no_byte_of_her_texts_in_the_data_dir(
    tmp_path, tansu_broker, redis_wm_url
):
    """A worker processes the chat into the data dir (SQLite store, graph memory); the Kafka deletion of one
    user leaves none of her texts (as the erasure check looks for them) nor her own words in any file."""
    data, hosts = tmp_path / "data", tansu_broker.hosts
    _processed(tmp_path, tansu_broker, redis_wm_url, data)

    hers = needles(text for who, text in HIKE_LINES if who == "mara")
    others = needles(text for who, text in HIKE_LINES if who != "mara")

    def words_in() -> dict[str, int]:
        return {p.name: n for p in sorted(data.rglob("*")) if p.is_file()
                and (n := sum(w in p.read_bytes() for w in MARAS_WORDS))}  # fmt: skip

    assert remnant_files(data, hers) and "graph.db" in words_in()  # the worker stored her texts, the graph too

    settings = Settings(data_dir=data, log_url=tansu_broker.url, store_url=f"sqlite:///{data / 'memstream.db'}",
                        working_memory_url=redis_wm_url, embedder="none")  # fmt: skip
    assert await delete_data(settings, HIKE, "mara", embedder=None) > 0
    assert ("ridge-walkers", "mara") in read_ledger(hosts)
    assert remnant_files(data, hers) == {}
    assert words_in() == {}
    assert remnant_files(data, others)  # the others' messages stay


def _cached(cache, keys: list[bytes]) -> int:
    """How many of ``keys`` a worker's embedding cache file holds (passages and sentences)."""
    import sqlite3

    conn = sqlite3.connect(str(cache))
    try:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return sum(conn.execute(f"SELECT count(*) FROM {t} WHERE key IN ({','.join('?' * len(keys))})", keys).fetchone()[0]
                   for t in tables if t in ("embeddings", "sentences"))  # fmt: skip
    finally:
        conn.close()


async def test_a_deletion_run_elsewhere_empties_the_workers_embedding_cache(tmp_path, tansu_broker, redis_wm_url):
    """The deleting process (another host: a data dir of its own) cannot reach a worker's embedding cache. It
    sends the cache keys of the deleted texts through the ledger topic (keys, not texts), and the worker drops
    those vectors, also when idle; the others' stay. The earlier revision of an edited message, which only the
    raw topic still holds, goes too."""
    import time

    from backends.embed.embedder import cache_keys

    data, hosts = tmp_path / "worker", tansu_broker.hosts
    edit = {"chat_id": HIKE, "message_id": "h1", "sender": "mara", "ts": "2024-05-01T09:00:00Z",
            "text": "Count me in, I will take the lower path because of my knee.",
            "metadata": {"edited_at": "2024-05-01T09:05:00Z"}}  # fmt: skip
    env = _processed(tmp_path, tansu_broker, redis_wm_url, data, edit, embedder="minilm")
    cache = data / "embed-cache.db"
    hers = cache_keys([text for who, text in HIKE_LINES if who == "mara"] + [edit["text"]])
    others = cache_keys([text for who, text in HIKE_LINES if who != "mara"])
    first = cache_keys([HIKE_LINES[1][1]])  # the revision the edit replaced: no longer in the store
    assert _cached(cache, hers) >= 4 and _cached(cache, others) >= 8 and _cached(cache, first)

    settings = Settings(data_dir=tmp_path / "deleter", log_url=tansu_broker.url, embedder="none",
                        store_url=f"sqlite:///{data / 'memstream.db'}", working_memory_url=redis_wm_url)  # fmt: skip
    assert await delete_data(settings, HIKE, "mara", embedder=None) > 0
    assert read_ledger(hosts) == {(HIKE, "mara")}  # the keys travel in the ledger topic, not as deletions
    assert _cached(cache, hers) > 0  # out of the deleting process's reach

    worker = spawn_worker(env, tmp_path / "w2.log", "--embedder", "minilm")  # idle, it forgets them too
    try:
        deadline = time.monotonic() + 90
        while _cached(cache, hers) and time.monotonic() < deadline:  # noqa: ASYNC110 - another process's file
            await asyncio.sleep(0.5)
    finally:
        assert stop(worker) == 0
    assert _cached(cache, hers) == 0 and _cached(cache, first) == 0 and _cached(cache, others) >= 8


class Killed(BaseException):
    """Raised at a deletion's step: nothing after it runs (no handler catches a BaseException)."""


async def test_a_kafka_delete_killed_after_the_store_forgot_distils_the_shared_topics_when_run_again(
    tmp_path, tansu_broker, redis_wm_url, minilm
):
    """The store trims the topics Mara shared and forgets their summaries and titles in one step; a run
    killed right after it leaves nothing but the ledger topic's record of which topics to distil again, and
    the deletion asked again distils them."""
    data, hosts = tmp_path / "data", tansu_broker.hosts
    later = {"chat_id": HIKE, "message_id": "h99", "sender": "tobias", "ts": "2024-05-09T08:00:00Z",
             "text": "Photos from the ridge are in the shared album now."}  # fmt: skip
    # minutes apart: topics Mara shares with the others, closed by a later one
    _processed(tmp_path, tansu_broker, redis_wm_url, data, later, unit="minute", embedder="minilm")
    settings = Settings(data_dir=data, log_url=tansu_broker.url, store_url=f"sqlite:///{data / 'memstream.db'}",
                        working_memory_url=redis_wm_url, embedder="minilm")  # fmt: skip
    hers = {f"h{i}" for i, (who, _) in enumerate(HIKE_LINES) if who == "mara"}
    store = await open_store(settings, minilm.dim)
    try:
        shared = to_redistil(await store.list_topics(HIKE), hers)
    finally:
        await store.close()
    assert shared  # closed topics where Mara spoke with others

    def kill(step: str) -> None:
        if step == "store_forgotten":
            raise Killed(step)

    with pytest.raises(Killed):
        await delete_data(settings, HIKE, "mara", embedder=minilm, on_step=kill)
    assert await LedgerLog(hosts).plan_redistil(HIKE, "mara", []) == set(shared)
    await delete_data(settings, HIKE, "mara", embedder=minilm)  # asked again
    store = await open_store(settings, minilm.dim)
    try:
        live = await store.list_memories(HIKE)
        assert not [m for m in live if set(m.source_message_ids) & hers or m.speaker == "mara"]
        distilled = {m.topic_id for m in live if m.kind in (MemoryKind.SUMMARY, MemoryKind.TITLE)}
        assert set(shared) <= distilled, (shared, distilled)
    finally:
        await store.close()
    assert await LedgerLog(hosts).plan_redistil(HIKE, "mara", []) == set()  # done: the plan is gone
    assert read_ledger(hosts) == {(HIKE, "mara")}  # a plan is no deletion


async def test_either_kafka_client_reads_and_ends_the_redistil_plan_the_other_recorded(tansu_broker):
    from streams.kafka_log import KafkaLog

    hosts = tansu_broker.hosts
    bootstrap_topics(hosts)
    ledger = LedgerLog(hosts)
    await ledger.record_deletion("c", "u", "2024-06-01T12:00:00+00:00")
    assert await ledger.plan_redistil("c", "u", ["t1", "t2"]) == {"t1", "t2"}
    kafka = await KafkaLog(hosts).open()
    try:
        assert await kafka.plan_redistil("c", "u", ["t3"]) == {"t1", "t2", "t3"}  # a run after a killed one
        assert await kafka.plan_redistil("c", "v", []) == set()  # another deletion's: none
        assert await ledger.plan_redistil("c", "u", []) == {"t1", "t2", "t3"}
        assert await kafka.deletions() == read_ledger(hosts) == {("c", "u")}
        await ledger.end_redistil("c", "u")
        assert await kafka.plan_redistil("c", "u", []) == set()
        await kafka.plan_redistil("c", "u", ["t4"])
        await kafka.end_redistil("c", "u")
        assert await ledger.plan_redistil("c", "u", []) == set()
    finally:
        await kafka.close()
