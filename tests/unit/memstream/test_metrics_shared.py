"""The merge of ``serve --workers``' per-process metrics: sums, pooled latencies, the processing process's
pipeline figures, and dead processes' files dropped."""

from __future__ import annotations

import json
import subprocess
import sys

from memstream.metrics import Metrics, PipelineSnapshot
from memstream.metrics_shared import SharedMetrics, merge, state


def figures(retrieves: int, latencies_ms: list[float]) -> Metrics:
    m = Metrics()
    m.counters["retrieve"] = retrieves
    for ms in latencies_ms:
        m.latency_ms.append(ms)
    return m


def test_merge_sums_counters_and_histograms_and_takes_the_processors_pipeline():
    leader = state(figures(3, [2.0, 40.0]), PipelineSnapshot(processed={"segmenter": 7}, lag={"segmenter": 1}),
                   processing=True)  # fmt: skip
    other = state(figures(5, [4.0]), PipelineSnapshot(background_processed=0), processing=False)
    for order in ([leader, other], [other, leader]):
        merged, pipeline = merge(order)
        assert merged.counters["retrieve"] == 8
        h = merged.latency_ms.histogram
        assert h.count == 3 and abs(h.sum - 0.046) < 1e-9 and sum(h.counts) == 3
        assert sorted(merged.latency_ms.recent) == [2.0, 4.0, 40.0]
        assert (
            pipeline is not None
            and pipeline.processed == {"segmenter": 7}
            and pipeline.lag == {"segmenter": 1}
        )
    many = [state(figures(0, [float(i)] * 1000), None, processing=False) for i in range(3)]
    assert len(merge(many)[0].latency_ms.recent) == 3000  # every process's last 1,000, not just one's
    text = merge([leader, other])[0].render(merge([leader, other])[1])
    assert (
        "memstream_retrieve_total 8" in text
        and 'memstream_stage_processed_total{stage="segmenter"} 7' in text
    )


def test_read_all_keeps_live_processes_and_removes_dead_ones(tmp_path):
    shared = SharedMetrics(tmp_path)
    shared.write(state(figures(1, []), None, processing=False))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    gone = shared.dir / f"{int(dead.stdout)}.json"  # a process that has exited
    gone.write_text(json.dumps(state(figures(100, []), None, processing=True)))
    (shared.dir / "notes.json").write_text("{}")  # not a process's file: ignored, kept
    states = shared.read_all()
    assert [s["counters"]["retrieve"] for s in states] == [1]
    assert not gone.exists() and (shared.dir / "notes.json").exists()
    shared.remove()
    assert shared.read_all() == []
    shared.write(state(figures(1, []), None, processing=False))
    SharedMetrics.clear(tmp_path)  # the supervisor's start: no file of an earlier run is summed
    assert shared.read_all() == [] and (shared.dir / "notes.json").exists()
