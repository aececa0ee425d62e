"""Where an embedded ingest waits: a timeline of its stage batches (event loop) and the model's forwards.

    python -m bench.throughput_timeline --data FILE --data-dir DIR [--embedder minilm] [--out events.json]

Ingests ``FILE`` into a fresh ``DIR`` (the model loaded first, outside the clock) with every stage batch of
the embedded runner and every forward on the model's threads timestamped. Prints the wall and CPU seconds,
how long the model was busy, each stage's time, records and first/last batch, and the model's busy fraction
in each second: where that fraction drops while a stage runs, the model waited for the event loop.
``--out`` writes the events: ``[kind, name, start_s, end_s, items]``.
The wrappers are installed in this process only, for this run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

Event = tuple[str, str, float, float, int]  # kind ("stage" | "forward"), name, start s, end s, items


def summary(events: list[Event], wall: float) -> dict[str, Any]:
    """Per stage: seconds, items, first and last batch; the model's busy seconds overall and per second."""
    stages: dict[str, dict[str, float]] = {}
    busy = [0.0] * (int(wall) + 1)
    for kind, name, start, end, items in events:
        if kind == "stage":
            s = stages.setdefault(name, {"seconds": 0.0, "records": 0, "first": start, "last": end})
            s["seconds"] += end - start
            s["records"] += items
            s["first"], s["last"] = min(s["first"], start), max(s["last"], end)
            continue
        while start < end and int(start) < len(busy):  # spread the forward over the seconds it covers
            step = min(end, int(start) + 1)
            busy[int(start)] += step - start
            start = step
    forwards = [e for e in events if e[0] == "forward"]
    return {
        "wall_s": round(wall, 3),
        "model_busy_s": round(sum(e[3] - e[2] for e in forwards), 3),
        "forwards": len(forwards),
        "texts": sum(e[4] for e in forwards),
        "stages": {k: {n: round(v, 3) for n, v in s.items()} for k, s in stages.items()},
        "model_busy_per_s": [round(b, 2) for b in busy],
    }


async def timeline(data: Path, data_dir: Path, embedder: str) -> tuple[list[Event], float, float]:
    """The ingest of ``data`` with its events; returns (events, wall seconds, CPU seconds)."""
    from backends.embed.base import _LazyModelEmbedder, warm_up
    from memstream.clients import build_clients
    from memstream.ops import ingest
    from memstream.settings import Settings
    from streams.runner import EmbeddedRunner

    events: list[Event] = []
    t0 = [time.perf_counter()]

    def now() -> float:
        return time.perf_counter() - t0[0]

    run_stage, forward = EmbeddedRunner._run_stage, _LazyModelEmbedder._forward

    async def timed_stage(self: Any, stage: Any, **kw: Any) -> int:
        start = now()
        n = await run_stage(self, stage, **kw)
        if n:
            events.append(("stage", stage.group, start, now(), n))
        return n

    def timed_forward(self: Any, texts: list[str], is_query: bool) -> Any:
        start = now()
        out = forward(self, texts, is_query)
        events.append(("forward", threading.current_thread().name, start, now(), len(texts)))
        return out

    EmbeddedRunner._run_stage = timed_stage  # type: ignore[method-assign]
    _LazyModelEmbedder._forward = timed_forward  # type: ignore[method-assign]
    try:
        clients = await build_clients(Settings(data_dir=data_dir, embedder=embedder))
        try:
            await warm_up(clients.embedder)
            events.clear()
            t0[0], cpu0 = time.perf_counter(), time.process_time()
            await ingest(clients, data)
            wall, cpu = now(), time.process_time() - cpu0
        finally:
            await clients.close()
    finally:
        EmbeddedRunner._run_stage = run_stage  # type: ignore[method-assign]
        _LazyModelEmbedder._forward = forward  # type: ignore[method-assign]
    return events, wall, cpu


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="JSON Lines of messages (or any ingest format)")
    ap.add_argument("--data-dir", type=Path, required=True, help="a fresh data dir for the ingest")
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--out", type=Path, help="write the events here as JSON")
    args = ap.parse_args(argv)
    events, wall, cpu = asyncio.run(timeline(args.data, args.data_dir, args.embedder))
    result = {**summary(events, wall), "cpu_s": round(cpu, 3)}
    if args.out:
        args.out.write_text(json.dumps(sorted(events, key=lambda e: e[2])), encoding="utf-8")
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
