"""Progress of a pipeline run (ingest, replay, resegment) on stderr.

On a terminal: one tqdm bar per stage with its rate and ETA (the total grows as the stage's input topic
grows). Otherwise (a pipe, a file, CI): one line every ``every`` seconds and one at the end, each stage with
records done / known, its rate and ETA, so a long run is never silent.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def progress_bars(*, every: float = 10.0, stream: TextIO | None = None, tty: bool | None = None):
    """``(progress, close)``: ``progress(stage, n, lag)`` after each batch a stage consumed (``n`` records,
    ``lag`` left in its input topic), ``close()`` once the run is over."""
    out = stream if stream is not None else sys.stderr
    if tty if tty is not None else out.isatty():
        return _bars(out)
    return _lines(out, every)


def _bars(out: TextIO):
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def progress(stage: str, n: int, lag: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(desc=f"{stage:12}", unit="rec", file=out, dynamic_ncols=True)
        bar.total = bar.n + n + lag
        bar.update(n)

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return progress, close


def _lines(out: TextIO, every: float):
    start = time.monotonic()
    done: dict[str, int] = {}
    left: dict[str, int] = {}
    span: dict[str, list[float]] = {}  # stage -> [start of its first batch, end of its latest]
    last = [start, start]  # the last line printed, the last batch reported (by any stage)

    def line(now: float) -> str:
        parts = []
        for stage, n in done.items():
            rate = n / max(span[stage][1] - span[stage][0], 1e-3)
            eta = f", ETA {left[stage] / rate:.0f}s" if left[stage] and rate > 0 else ""
            parts.append(f"{stage} {n}/{n + left[stage]} ({rate:.0f}/s{eta})")
        return f"progress {now - start:.0f}s: " + " · ".join(parts)

    def progress(stage: str, n: int, lag: int) -> None:
        now = time.monotonic()
        span.setdefault(stage, [last[1], now])[1] = now  # stages run in turn: this batch began after the last
        last[1] = now
        done[stage] = done.get(stage, 0) + n
        left[stage] = lag
        if now - last[0] >= every:
            last[0] = now
            print(line(now), file=out, flush=True)

    def close() -> None:
        if done:
            print(line(time.monotonic()).replace("progress", "done", 1), file=out, flush=True)

    return progress, close
