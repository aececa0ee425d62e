"""Retrieval latency for ``bench throughput``: routed / hybrid / bm25 p50-p95-p99, and the CLI's query time.

- LoCoMo size: the data dir an ingest of LoCoMo turns built, asked the LoCoMo questions of its chats.
- Large: one chat of ``n`` documents in the embedded SQLite store (half turns, half memory records, texts
  from LoCoMo turns made distinct, random unit vectors: :func:`bench.store_latency.corpus`), asked the same
  questions. Query vectors come from the real embedder in both cases (their cost is part of the latency).
- CLI: ``memstream query`` as a subprocess against the LoCoMo data dir, wall time per call; alone (it loads
  everything itself) and while a ``memstream serve`` of the data dir runs (it asks the server).

The retrieval part alone (no ingest, no Kafka), e.g. to profile it::

    python -m bench.throughput_retrieval --data-dir DIR --large-docs 100000 [--keep-db F] [--profile F]

``--data-dir``: a data dir an ingest of LoCoMo turns built (``python -m bench.throughput_ingest ingest``);
``--keep-db``: the large chat's SQLite file, filled on the first run and reused after.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("routed", "hybrid", "bm25")


def locomo_questions(locomo: Path, chats: set[str] | None = None) -> list[tuple[str, str]]:
    """(chat_id, question) of the LoCoMo file, for the chats given (all if None)."""
    data = json.loads(Path(locomo).read_text(encoding="utf-8"))
    return [(str(c["sample_id"]), str(qa["question"])) for c in data for qa in c.get("qa", [])
            if (chats is None or str(c["sample_id"]) in chats) and str(qa.get("question", "")).strip()]  # fmt: skip


def percentiles(ms: list[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    if a.size == 0:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "n": 0}
    return {"p50": round(float(np.percentile(a, 50)), 2), "p95": round(float(np.percentile(a, 95)), 2),
            "p99": round(float(np.percentile(a, 99)), 2), "n": int(a.size)}  # fmt: skip


async def latencies(store: Any, embedder: Any, questions: list[tuple[str, str]], *, llm: Any = None,
                    graph: Any = None, now: dict | None = None, warmup: int = 5,
                    router: Any = None) -> dict[str, dict]:  # fmt: skip
    """Per mode: p50/p95/p99 ms of ``retrieval.service.retrieve`` over ``questions`` (after ``warmup``), and
    the same of the process's CPU time (``cpu_ms``: every thread, the embedder's included), which other jobs
    on the machine disturb less than the wall clock. The router is warmed first as ``memstream serve`` warms
    it when it starts (``retrieval.service.warm``)."""
    from retrieval.service import retrieve, warm
    from schemas import RetrieveRequest

    await warm(store, embedder, graph=graph)
    out = {}
    for mode in MODES:
        took: list[float] = []
        cpu: list[float] = []
        for i, (chat, question) in enumerate(questions[:warmup] + questions):
            req = RetrieveRequest(chat_id=chat, query=question, k=10, mode=mode, now=(now or {}).get(chat))
            t0, c0 = time.perf_counter(), time.process_time()
            await retrieve(store, embedder, req, llm=llm, graph=graph, router=router)
            if i >= min(warmup, len(questions)):
                took.append(1000 * (time.perf_counter() - t0))
                cpu.append(1000 * (time.process_time() - c0))
        out[mode] = percentiles(took) | {"cpu_ms": percentiles(cpu)}
    return out


async def at_locomo_size(data_dir: Path, embedder: str, locomo: Path, max_questions: int) -> dict:
    from memstream.clients import build_clients, served_router
    from memstream.settings import Settings

    clients = await build_clients(Settings(data_dir=data_dir, embedder=embedder))
    try:
        chats = set(await clients.store.chats())
        questions = locomo_questions(locomo, chats)[:max_questions]
        now, docs = {}, 0
        for chat in chats:
            msgs = await clients.store.list_messages(chat)
            docs += len(msgs)
            if msgs:
                now[chat] = msgs[-1].ts + timedelta(days=1)
        result = await latencies(clients.store, clients.embedder, questions, llm=clients.llm, graph=clients.graph,
                                 now=now, router=served_router(clients.settings.retrieval))  # as served
        return {"chats": len(chats), "messages": docs, "questions": len(questions), **result}
    finally:
        await clients.close()


async def at_scale(n_docs: int, embedder: Any, texts: list[str], questions: list[str], work: Path, *,
                   db: Path | None = None) -> dict:  # fmt: skip
    """One chat of ``n_docs`` documents in a fresh SQLite store (or ``db``, filled if it has no chat yet); the
    questions asked in that chat."""
    from backends.sqlite.store import SQLiteStore
    from bench.store_latency import corpus, fill

    dim = embedder.dim if embedder is not None else 384
    store = SQLiteStore(db or work / f"scale-{n_docs}.db", dim)
    await store.bootstrap()
    try:
        _, _, msgs, mv, decisions, dv = corpus(n_docs, dim, texts=texts, chat="big")
        filled = (
            await fill(store, msgs, mv, decisions, dv) if not await store.chats() else {"reused": str(db)}
        )
        now = {"big": msgs[-1].ts + timedelta(days=1)} if msgs else {}
        result = await latencies(store, embedder, [("big", q) for q in questions], now=now)
        return {"docs": n_docs, "questions": len(questions), **filled, **result}
    finally:
        await store.close()


def cli_query_seconds(
    data_dir: Path, chat: str, question: str, *, runs: int = 3, mode: str = "routed", served: bool = False
) -> dict:
    """Wall seconds of ``memstream query --chat CHAT QUESTION`` as a fresh process (median and all runs), answered
    in that process (``--local``) unless ``served``."""
    cmd = [sys.executable, "-m", "memstream.cli", "query", "--chat", chat, question, "--mode", mode, "--data-dir",
           str(data_dir), *([] if served else ["--local"])]  # fmt: skip
    took, error = [], None
    for _ in range(max(1, runs)):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        took.append(round(time.perf_counter() - t0, 3))
        if proc.returncode != 0:
            error = proc.stderr.strip()[-400:]
            break
    out = {"median": round(statistics.median(took), 3), "runs": took, "mode": mode}
    return out | ({"error": error} if error else {})


def served_cli_query_seconds(data_dir: Path, chat: str, question: str, *, runs: int = 3) -> dict:
    """:func:`cli_query_seconds` while a ``memstream serve`` of ``data_dir`` runs: ``memstream query`` then asks
    it (:mod:`memstream.served`) instead of loading everything itself. The server starts (and its first
    question is asked) outside the clock."""
    import os
    import signal
    import urllib.request

    from memstream import served
    from memstream.devservers import free_port

    port = free_port()
    cmd = [sys.executable, "-m", "memstream.cli", "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir",
           str(data_dir)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "MEMSTREAM_LOG_LEVEL": "WARNING"})  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while served.find(data_dir) is None or not _healthy(f"http://127.0.0.1:{port}", urllib.request):
            if proc.poll() is not None or time.monotonic() > deadline:
                return {"error": f"memstream serve did not start (exit {proc.poll()})"}
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port}"
        cli_query_seconds(data_dir, chat, question, runs=1, served=True)  # the server's first: its model loads
        before = _answered(url, urllib.request)
        took = cli_query_seconds(data_dir, chat, question, runs=runs, served=True)
        answered = _answered(url, urllib.request) - before  # by the server, not in the CLI's own process
        return took | {"served": answered == len(took["runs"]), "server_answered": answered}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _answered(url: str, request: Any) -> int:
    """How many retrievals the server has answered (its /metrics)."""
    with request.urlopen(url + "/metrics", timeout=10) as resp:
        lines = resp.read().decode().splitlines()
    return int(float(next((ln.split()[-1] for ln in lines if ln.startswith("memstream_retrieve_total")), "0")))


def _healthy(url: str, request: Any) -> bool:
    try:
        with request.urlopen(url + "/healthz", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def main(argv: list[str] | None = None) -> None:
    import argparse
    import asyncio
    import cProfile
    import os
    import tempfile

    from backends.embed.embedder import CachedEmbedder
    from bench.throughput_embed import locomo_turns, raw_embedder

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", type=Path, default=Path("../shared/data/locomo/locomo10_dev.json"))
    ap.add_argument("--data-dir", type=Path, help="an ingested LoCoMo data dir (skipped when absent)")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--large-docs", type=int, default=0)
    ap.add_argument("--keep-db", type=Path, help="the large chat's SQLite file, reused when already filled")
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--profile", type=Path, help="write cProfile stats of the measurements here")
    args = ap.parse_args(argv)
    prof = cProfile.Profile() if args.profile else None
    out: dict[str, Any] = {"loadavg_start": list(os.getloadavg())}
    with tempfile.TemporaryDirectory(prefix="memstream-ret-") as tmp:
        if args.data_dir:
            if prof:
                prof.enable()
            out["locomo"] = asyncio.run(
                at_locomo_size(args.data_dir, args.embedder, args.locomo, args.questions)
            )
        if args.large_docs:
            questions = [q for _, q in locomo_questions(args.locomo)][: args.questions]
            model = CachedEmbedder(raw_embedder(args.embedder, 64)) if args.embedder != "none" else None
            coro = at_scale(
                args.large_docs, model, locomo_turns(args.locomo), questions, Path(tmp), db=args.keep_db
            )
            if prof:
                prof.enable()
            out["large"] = asyncio.run(coro)
    if prof:
        prof.disable()
        prof.dump_stats(args.profile)
    out["loadavg_end"] = list(os.getloadavg())
    print(json.dumps(out))


if __name__ == "__main__":
    main()
