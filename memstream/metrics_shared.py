"""``/metrics`` of ``memstream serve --workers N``: one exposition for the whole server, whichever process a
scrape reaches (the kernel spreads connections over the processes sharing the port, so per-process figures
would jump between scrapes).

Every process writes its own figures to ``<data dir>/run/metrics/<pid>.json`` every ``INTERVAL_S`` (and on
each scrape it answers); a scrape merges the files of the processes alive now: request counters and latency
histograms are summed, the last latencies pooled for the quantiles, and the pipeline's figures are those of
the process that runs it (at most ``INTERVAL_S`` old when another process answers). A dead process's file is
removed, so its counts leave the sums (Prometheus reads that as a counter reset). ``memstream_serve_processes``
tells how many processes were merged.

:func:`state` and :func:`merge` are pure; :class:`SharedMetrics` does the file I/O.
"""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memstream.metrics import Histogram, Metrics, PipelineSnapshot, family

INTERVAL_S = 1.0


def state(metrics: Metrics, pipeline: PipelineSnapshot | None, *, processing: bool) -> dict[str, Any]:
    """One process's figures as JSON-ready data (``processing``: it runs the pipeline)."""
    h = metrics.latency_ms.histogram
    return {"counters": dict(metrics.counters),
            "histogram": {"buckets": list(h.buckets), "counts": list(h.counts), "sum": h.sum, "count": h.count},
            "recent_ms": list(metrics.latency_ms.recent),
            "pipeline": asdict(pipeline) if pipeline is not None else None, "processing": processing}  # fmt: skip


def merge(states: list[dict[str, Any]]) -> tuple[Metrics, PipelineSnapshot | None]:
    """The server's figures from its processes' (see the module docstring)."""
    out = Metrics()
    out.latency_ms.recent = deque(maxlen=max(1, len(states)) * (out.latency_ms.recent.maxlen or 1000))  # all
    pipeline: PipelineSnapshot | None = None
    for s in states:
        out.counters.update(s.get("counters", {}))
        h = s.get("histogram") or {}
        if tuple(h.get("buckets", ())) == out.latency_ms.histogram.buckets:
            mine: Histogram = out.latency_ms.histogram
            mine.counts = [a + b for a, b in zip(mine.counts, h["counts"], strict=True)]
            mine.sum += h["sum"]
            mine.count += h["count"]
        out.latency_ms.recent.extend(s.get("recent_ms", []))
        p = s.get("pipeline")
        if p is not None and (pipeline is None or s.get("processing")):  # the processing process's, if any
            pipeline = PipelineSnapshot(**p)
    return out, pipeline


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, someone else's
        return True
    return True


def processes_lines(n: int) -> str:
    """The ``memstream_serve_processes`` gauge (exposition lines)."""
    name = "memstream_serve_processes"
    return (
        "\n".join(
            family(name, "gauge", "Processes of this server whose figures are merged here.", [f"{name} {n}"])
        )
        + "\n"
    )


class SharedMetrics:
    """This process's file in ``<data dir>/run/metrics/`` and the merge of every live process's."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = Path(data_dir) / "run" / "metrics"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / f"{os.getpid()}.json"

    def write(self, figures: dict[str, Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(figures), encoding="utf-8")
        os.replace(tmp, self.path)  # a reader sees the old file or the new one, never half of one

    def read_all(self) -> list[dict[str, Any]]:
        """The figures of every live process; dead processes' files are removed."""
        out = []
        for f in sorted(self.dir.glob("*.json")):
            try:
                pid = int(f.stem)
            except ValueError:
                continue
            if not _alive(pid):
                f.unlink(missing_ok=True)
                continue
            try:
                out.append(json.loads(f.read_text(encoding="utf-8")))
            except (OSError, ValueError):  # replaced or removed while read: its next write comes soon
                continue
        return out

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    @staticmethod
    def clear(data_dir: Path) -> None:
        """Remove every process's file (the supervisor, before it starts its processes)."""
        for f in (Path(data_dir) / "run" / "metrics").glob("*.json"):
            if f.stem.isdigit():
                f.unlink(missing_ok=True)
