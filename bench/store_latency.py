"""Search latency of a ``MemoryStore`` backend: p50/p95 per search mode on a synthetic one-chat corpus.

    python -m bench.store_latency --store sqlite --docs 2000 --queries 200
    python -m bench.store_latency --store es --docs 2000 --queries 200            # starts a local noida-db
    python -m bench.store_latency --store es --url 'es://127.0.0.1:9200?rrf=client'

Half the documents are turns, half memory records (one decision each); texts mix Latin words and a few
Chinese ones; vectors are random unit vectors. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from memstream.devservers import noida_server
from retrieval.protocols import MemoryStore, SearchQuery
from schemas import ChatMessage, DecisionOp, MemoryDecision, MemoryKind, MemoryRecord

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)


# ---- the benchmark ---------------------------------------------------------------------------------


def corpus(n_docs: int, dim: int, seed: int = 0, texts: list[str] | None = None, chat: str = "bench"):
    """``n_docs`` documents of one chat: half turns, half memory records (one ADD decision each), random unit
    vectors. Texts: 12 words drawn from a synthetic vocabulary, or ``texts`` (real sentences) cycled with a
    counter so each is distinct."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(3000)] + ["pizza", "杭州", "deploy", "猫", "发布", "周四"]
    if texts:
        texts = [f"{texts[i % len(texts)]} #{i}" for i in range(n_docs)]
    else:
        texts = [" ".join(rng.choice(words, size=12)) for _ in range(n_docs)]
    vecs = rng.standard_normal((n_docs, dim)).astype(np.float32)
    half = n_docs // 2
    msgs = [
        ChatMessage(chat_id=chat, message_id=f"m{i}", sender=f"u{i % 5}", ts=T0 + timedelta(minutes=i),
                    text=texts[i])
        for i in range(half)
    ]  # fmt: skip
    decisions = [
        MemoryDecision(
            decision_id=f"d{i}", op=DecisionOp.ADD, chat_id=chat, reason="bench", source_event_id="ev",
            at=T0 + timedelta(minutes=i),
            record=MemoryRecord(memory_id=f"mem{i}", chat_id=chat, kind=MemoryKind.FACT, text=texts[half + i],
                                speaker=f"u{i % 5}", valid_from=T0 + timedelta(minutes=i),
                                source_message_ids=[f"m{i % max(half, 1)}"], source_event_id="ev"),
        )
        for i in range(n_docs - half)
    ]  # fmt: skip
    return rng, words, msgs, vecs[:half], decisions, vecs[half:]


async def fill(store: MemoryStore, msgs, msg_vecs, decisions, dec_vecs) -> dict:
    """Write a :func:`corpus` into ``store`` (bootstrapped): turns in batches of 500, then each decision."""
    t0 = time.perf_counter()
    for i in range(0, len(msgs), 500):
        await store.upsert_messages(msgs[i : i + 500], msg_vecs[i : i + 500])
    ingest_turns = time.perf_counter() - t0
    t0 = time.perf_counter()
    for d, v in zip(decisions, dec_vecs, strict=True):
        await store.apply_decision(d, v)
    return {"ingest_turns_s": round(ingest_turns, 3),
            "apply_decision_ms": round(1000 * (time.perf_counter() - t0) / max(len(decisions), 1), 2)}  # fmt: skip


async def run(store: MemoryStore, *, n_docs: int, n_queries: int, dim: int, k: int) -> dict:
    rng, words, msgs, msg_vecs, decisions, dec_vecs = corpus(n_docs, dim)
    await store.bootstrap()
    filled = await fill(store, msgs, msg_vecs, decisions, dec_vecs)
    out: dict = {"docs": n_docs, "queries": n_queries, "k": k, **filled, "modes": {}}
    qvecs = rng.standard_normal((n_queries, dim)).astype(np.float32)
    for mode in ("bm25", "knn", "hybrid"):
        took = []
        for i in range(n_queries + 10):  # the first 10 warm up
            q = SearchQuery(chat_id="bench", text=" ".join(rng.choice(words, size=4)),
                            vector=qvecs[i % n_queries].tolist(), mode=mode, k=k)  # fmt: skip
            t = time.perf_counter()
            await store.search(q)
            took.append(time.perf_counter() - t)
        ms = 1000 * np.array(took[10:])
        out["modes"][mode] = {"p50_ms": round(float(np.percentile(ms, 50)), 2),
                              "p95_ms": round(float(np.percentile(ms, 95)), 2)}  # fmt: skip
    t = time.perf_counter()
    for i in range(min(n_queries, 50)):
        await store.similar_memories("bench", qvecs[i], k=10)
    out["similar_memories_ms"] = round(1000 * (time.perf_counter() - t) / min(n_queries, 50), 2)
    return out


async def bench(args: argparse.Namespace, tmp: Path) -> dict:
    if args.store == "sqlite":
        from backends.sqlite.store import SQLiteStore

        store: MemoryStore = SQLiteStore(tmp / "bench.db", args.dim)
        result = await run(store, n_docs=args.docs, n_queries=args.queries, dim=args.dim, k=args.k)
        await store.close()
        return {"store": "sqlite", **result}
    from backends.es.store import ESStore

    with contextlib.ExitStack() as stack:
        url = args.url or "es://" + stack.enter_context(noida_server(tmp)).removeprefix("http://")
        sep = "&" if "?" in url else "?"
        store = ESStore.from_url(f"{url}{sep}prefix=bench-{uuid.uuid4().hex[:8]}&rrf={args.rrf}", args.dim)
        try:
            result = await run(store, n_docs=args.docs, n_queries=args.queries, dim=args.dim, k=args.k)
            result["rrf"] = store.fusion
            for kind in ("docs", "messages", "memories", "decisions", "topics"):
                await store.es.indices.delete(index=f"{store.alias(kind)}-v1")
        finally:
            await store.close()
        return {"store": "es", "server": "noida-db" if not args.url else args.url.split("?")[0], **result}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", choices=["sqlite", "es"], default="sqlite")
    parser.add_argument("--url", help="es://host:port[?rrf=...]; default: start a local noida-db")
    parser.add_argument("--rrf", choices=["auto", "server", "client"], default="auto")
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=30, help="hits per search (the retrieval service asks 3x k)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memstream-bench-") as tmp:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        print(json.dumps(asyncio.run(bench(args, Path(tmp))), ensure_ascii=False))


if __name__ == "__main__":
    main()
