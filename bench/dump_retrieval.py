"""Dump retrieval responses (timings stripped) to check that a speed change is output-identical.

- LoCoMo size: every LoCoMo question of the ingested chats in each mode (routed, hybrid, bm25).
- Large: the first ``--large-questions`` questions, routed, in the large chat of ``--keep-db``
  (filled by ``python -m bench.throughput_retrieval --large-docs N --keep-db F``).

One JSON line per response; diff two dumps with ``cmp`` or ``diff``::

    python -m bench.dump_retrieval --data-dir DIR --locomo F --out before.jsonl [--keep-db F]
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.throughput_retrieval import MODES, locomo_questions


def stripped(resp: Any) -> dict:
    """The response as JSON with every timing removed (the trace's ``ms``)."""
    out = resp.model_dump(mode="json")
    for step in out.get("trace", []):
        step.pop("ms", None)
    return out


async def dump(store: Any, embedder: Any, questions: list[tuple[str, str]], now: dict, modes, sink, *,
               llm: Any = None, graph: Any = None) -> int:  # fmt: skip
    from retrieval.service import retrieve
    from schemas import RetrieveRequest

    n = 0
    for mode in modes:
        for chat, question in questions:
            req = RetrieveRequest(chat_id=chat, query=question, k=10, mode=mode, now=now.get(chat))
            resp = await retrieve(store, embedder, req, llm=llm, graph=graph)
            sink.write(json.dumps({"mode": mode, **stripped(resp)}, sort_keys=True) + "\n")
            n += 1
    return n


async def at_locomo_size(data_dir: Path, embedder: str, locomo: Path, sink) -> int:
    from memstream.clients import build_clients
    from memstream.settings import Settings

    clients = await build_clients(Settings(data_dir=data_dir, embedder=embedder))
    try:
        chats = set(await clients.store.chats())
        now = {}
        for chat in chats:
            msgs = await clients.store.list_messages(chat)
            if msgs:
                now[chat] = msgs[-1].ts + timedelta(days=1)
        questions = locomo_questions(locomo, chats)
        return await dump(clients.store, clients.embedder, questions, now, MODES, sink, llm=clients.llm,
                          graph=clients.graph)  # fmt: skip
    finally:
        await clients.close()


async def at_scale(db: Path, embedder: Any, locomo: Path, n_questions: int, sink) -> int:
    from backends.sqlite.store import SQLiteStore

    store = SQLiteStore(db, embedder.dim)
    await store.bootstrap()
    try:
        msgs = await store.list_messages("big")
        now = {"big": msgs[-1].ts + timedelta(days=1)} if msgs else {}
        questions = [("big", q) for _, q in locomo_questions(locomo)][:n_questions]
        return await dump(store, embedder, questions, now, ("routed",), sink)
    finally:
        await store.close()


def main(argv: list[str] | None = None) -> None:
    import argparse

    from backends.embed.embedder import CachedEmbedder
    from bench.throughput_embed import raw_embedder

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, help="an ingested LoCoMo data dir")
    ap.add_argument("--keep-db", type=Path, help="the large chat's filled SQLite file")
    ap.add_argument("--large-questions", type=int, default=300)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    counts = {}
    with args.out.open("w", encoding="utf-8") as sink:
        if args.data_dir:
            counts["locomo"] = asyncio.run(at_locomo_size(args.data_dir, args.embedder, args.locomo, sink))
        if args.keep_db:
            model = CachedEmbedder(raw_embedder(args.embedder, 64))
            counts["large"] = asyncio.run(
                at_scale(args.keep_db, model, args.locomo, args.large_questions, sink)
            )
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
