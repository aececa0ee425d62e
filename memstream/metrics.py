"""``GET /metrics`` of ``memstream serve``: the Prometheus text format (version 0.0.4), HELP and TYPE for every
family.

- request counters (``memstream_retrieve_total`` ...), counted by the routes in :attr:`Metrics.counters`, and
  requests refused (``memstream_shed_total``: 429; ``memstream_deletion_pending_total``: 503);
- retrieval latency: a histogram in seconds (``memstream_retrieve_latency_seconds``) and, as before, a
  summary of the last 1,000 calls in milliseconds (``memstream_retrieve_latency_ms``);
- the embedded pipeline (the background processor): records each stage consumed since start
  (``memstream_stage_processed_total{stage=...}``), dead-lettered by a stage since start and in the dead-letter
  topic in all (``memstream_dead_letters_total``, ``memstream_dead_letter_records``), each stage's lag
  (``memstream_stage_lag_records``), raw messages processed and whether the last background run failed.

Rendering is pure (:meth:`Metrics.render` over a :class:`PipelineSnapshot`); :func:`pipeline_snapshot` reads the
log on a lane of the server, never on the event loop.
"""

from __future__ import annotations

import bisect
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUCKETS_S", "Histogram", "Metrics", "PipelineSnapshot", "family", "pipeline_snapshot"]

BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_HELP = {
    "retrieve": "Retrieval requests answered (POST /v1/retrieve).",
    "retrieve_empty": "Retrieval requests answered with no relevant memory.",
    "context": "Bot context requests answered (POST /v1/context).",
    "shed": "Requests refused with 429: their lane would have kept them waiting too long, or the backlog is full.",
    "deletion_pending": "Reads refused with 503 while a deletion in their chat is not finished.",
}


class Histogram:
    """Cumulative buckets (upper bounds in seconds), sum and count."""

    def __init__(self, buckets: tuple[float, ...] = BUCKETS_S) -> None:
        self.buckets = buckets
        self.counts = [0] * len(buckets)  # per bucket, not cumulative
        self.sum = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        i = bisect.bisect_left(self.buckets, seconds)
        if i < len(self.counts):
            self.counts[i] += 1
        self.sum += seconds
        self.count += 1

    def lines(self, name: str, labels: str = "") -> list[str]:
        sep = "," if labels else ""
        out, total = [], 0
        for bound, n in zip(self.buckets, self.counts, strict=True):
            total += n
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound:g}"}} {total}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        braces = f"{{{labels}}}" if labels else ""
        return [*out, f"{name}_sum{braces} {self.sum:.6f}", f"{name}_count{braces} {self.count}"]


class Latencies:
    """What the routes append retrieval latencies (ms) to: the histogram and the last 1,000 for quantiles."""

    def __init__(self) -> None:
        self.histogram = Histogram()
        self.recent: deque[float] = deque(maxlen=1000)

    def append(self, ms: float) -> None:
        self.histogram.observe(ms / 1000.0)
        self.recent.append(ms)

    def __len__(self) -> int:
        return len(self.recent)


@dataclass
class PipelineSnapshot:
    """The embedded pipeline's figures at one moment (all zero/empty when this process runs no pipeline)."""

    processed: dict[str, int] = field(default_factory=dict)  # stage -> records consumed since start
    dead: dict[str, int] = field(default_factory=dict)  # stage -> records dead-lettered since start
    lag: dict[str, int] = field(default_factory=dict)  # stage -> records not yet consumed
    dead_letter_records: int = 0  # the dead-letter topic's size (every stage, the ingest, all time)
    background_processed: int = 0  # raw records processed by the background worker since start
    failing: bool = False  # the last background run raised


def family(name: str, kind: str, help_: str, samples: list[str]) -> list[str]:
    return [f"# HELP {name} {help_}", f"# TYPE {name} {kind}", *samples]


class Metrics:
    """The server's counters and retrieval latencies; :meth:`render` writes the exposition."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.latency_ms = Latencies()

    def render(self, pipeline: PipelineSnapshot | None = None) -> str:
        lines: list[str] = []
        for key in sorted(set(self.counters) | {"retrieve", "retrieve_empty", "context", "shed", "deletion_pending"}):
            name = f"memstream_{key}_total"
            lines += family(
                name, "counter", _HELP.get(key, f"{key} events."), [f"{name} {self.counters[key]}"]
            )
        lat = self.latency_ms
        lines += family("memstream_retrieve_latency_seconds", "histogram",
                         "Latency of retrieval and context requests, seconds.",
                         lat.histogram.lines("memstream_retrieve_latency_seconds"))  # fmt: skip
        recent = sorted(lat.recent)
        quantiles = [f'memstream_retrieve_latency_ms{{quantile="{q}"}} {recent[int(q * (len(recent) - 1))]:.3f}'
                     for q in (0.5, 0.95, 0.99) if recent]  # fmt: skip
        quantiles += [f"memstream_retrieve_latency_ms_sum {sum(recent):.3f}",
                      f"memstream_retrieve_latency_ms_count {len(recent)}"]  # fmt: skip
        lines += family("memstream_retrieve_latency_ms", "summary",
                         "Latency of the last 1,000 retrieval and context requests, milliseconds.", quantiles)  # fmt: skip
        if pipeline is not None:
            lines += _pipeline_lines(pipeline)
        return "\n".join(lines) + "\n"


def _pipeline_lines(p: PipelineSnapshot) -> list[str]:
    out = family("memstream_stage_processed_total", "counter",
                  "Records each pipeline stage consumed since the server started.",
                  [f'memstream_stage_processed_total{{stage="{s}"}} {n}' for s, n in sorted(p.processed.items())])  # fmt: skip
    out += family("memstream_dead_letters_total", "counter",
                   "Records each pipeline stage dead-lettered since the server started.",
                   [f'memstream_dead_letters_total{{stage="{s}"}} {n}' for s, n in sorted(p.dead.items())])  # fmt: skip
    out += family("memstream_dead_letter_records", "gauge",
                   "Records in the dead-letter topic (every stage and the ingest, all time).",
                   [f"memstream_dead_letter_records {p.dead_letter_records}"])  # fmt: skip
    out += family("memstream_stage_lag_records", "gauge", "Records of its input topic a stage has not consumed yet.",
                   [f'memstream_stage_lag_records{{stage="{s}"}} {n}' for s, n in sorted(p.lag.items())])  # fmt: skip
    out += family("memstream_background_processed_total", "counter",
                   "Raw messages the background processor segmented since the server started.",
                   [f"memstream_background_processed_total {p.background_processed}"])  # fmt: skip
    out += family("memstream_background_failing", "gauge", "1 if the last background processing run failed.",
                   [f"memstream_background_failing {int(p.failing)}"])  # fmt: skip
    return out


async def pipeline_snapshot(lanes: Any) -> PipelineSnapshot:
    """The figures of ``lanes``' embedded pipeline (a :class:`memstream.serving.Lanes`): counters from its runner,
    lag and the dead-letter topic read on the ingest lane. Empty when the server runs no pipeline (Kafka)."""
    runner = getattr(lanes, "runner", None)
    if runner is None or not lanes.embedded:
        return PipelineSnapshot(background_processed=lanes.drained, failing=lanes.last_error is not None)
    from streams.topics import DEAD_LETTERS

    stages = [(s.group, s.source.name) for s in runner.stages.all()]

    async def read(c: Any) -> tuple[dict[str, int], int]:
        lag = {g: await c.log.end_offset(t) - await c.log.committed(g, t) for g, t in stages}
        return lag, await c.log.end_offset(DEAD_LETTERS.name)

    lag, dead_records = await lanes.ingest.call(read)
    totals = runner.totals
    return PipelineSnapshot(processed=dict(totals.processed), dead=dict(totals.dead), lag=lag,
                            dead_letter_records=dead_records, background_processed=lanes.drained,
                            failing=lanes.last_error is not None)  # fmt: skip
