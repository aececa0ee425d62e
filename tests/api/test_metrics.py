"""``GET /metrics``: the Prometheus text format (HELP/TYPE per family), per-stage counters, dead letters, lag
and the retrieval latency histogram of a real server process (in-process ASGI client)."""

from __future__ import annotations

import fcntl
import json
import os
import re
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from memstream.api import create_app
from memstream.dirlock import LOCK_FILE
from memstream.metrics import Histogram, Metrics, PipelineSnapshot
from memstream.metrics_shared import SharedMetrics
from memstream.settings import Settings

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
SAMPLE = re.compile(r'^([a-z_]+)(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+]+$')


def msg(i: int, text: str) -> dict:
    ts = (T0 + timedelta(minutes=i)).isoformat()
    return {
        "chat_id": "c1",
        "message_id": f"m{i}",
        "sender": "alice" if i % 2 else "bob",
        "ts": ts,
        "text": text,
    }


def families(text: str) -> dict[str, str]:
    """name -> TYPE; every sample line must belong to a family declared (HELP then TYPE) before it."""
    types: dict[str, str] = {}
    helped: set[str] = set()
    for line in text.strip().splitlines():
        if line.startswith("# HELP "):
            helped.add(line.split()[2])
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert name in helped, f"TYPE before HELP for {name}"
            types[name] = kind
        else:
            m = SAMPLE.match(line)
            assert m, f"not a sample line: {line!r}"
            base = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
            assert m.group(1) in types or base in types, f"sample of an undeclared family: {line!r}"
    return types


def sample(text: str, name: str) -> float:
    return float(next(line.rsplit(" ", 1)[1] for line in text.splitlines() if line.startswith(name + " ")))


def test_histogram_buckets_are_cumulative_and_the_render_parses():
    h = Histogram((0.01, 0.1, 1.0))
    for s in (0.005, 0.05, 0.05, 2.0):
        h.observe(s)
    assert h.lines("x") == ['x_bucket{le="0.01"} 1', 'x_bucket{le="0.1"} 3', 'x_bucket{le="1"} 3',
                            'x_bucket{le="+Inf"} 4', "x_sum 2.105000", "x_count 4"]  # fmt: skip
    m = Metrics()
    m.counters["retrieve"] += 2
    m.latency_ms.append(12.0)
    snap = PipelineSnapshot(
        processed={"segmenter": 5}, dead={"segmenter": 1}, lag={"segmenter": 0}, dead_letter_records=3
    )
    text = m.render(snap)
    types = families(text)
    assert types["memstream_retrieve_total"] == "counter" and types["memstream_stage_lag_records"] == "gauge"
    assert types["memstream_retrieve_latency_seconds"] == "histogram"
    assert 'memstream_retrieve_latency_seconds_bucket{le="0.015"} 1' in text
    assert 'memstream_retrieve_latency_seconds_bucket{le="0.01"} 0' in text
    assert 'memstream_dead_letters_total{stage="segmenter"} 1' in text


def test_the_server_reports_stage_counters_dead_letters_lag_and_latency(tmp_path):
    with TestClient(create_app(Settings(data_dir=tmp_path / "d"), embedder=None)) as client:
        batch = [
            msg(0, "I moved to Hangzhou last week."),
            msg(1, "Nice! Which district?"),
            msg(2, "Xihu, near the lake."),
            msg(3, "   "),
        ]  # fmt: skip  (a blank text: dead-lettered)
        r = client.post("/v1/messages", json={"messages": batch, "flush": True})
        assert r.status_code == 202, r.text
        client.post("/v1/retrieve", json={"chat_id": "c1", "query": "Where did alice move?", "mode": "bm25"})
        text = client.get("/metrics").text
    types = families(text)
    assert {"memstream_stage_processed_total", "memstream_dead_letters_total", "memstream_stage_lag_records",
            "memstream_dead_letter_records", "memstream_retrieve_latency_seconds"} <= set(types)  # fmt: skip
    assert sample(text, 'memstream_stage_processed_total{stage="segmenter"}') >= 3
    assert sample(text, 'memstream_stage_processed_total{stage="indexer"}') >= 1
    assert sample(text, 'memstream_stage_lag_records{stage="segmenter"}') == 0  # processed before the answer
    assert sample(text, "memstream_dead_letter_records") >= 1
    assert (
        sample(text, "memstream_retrieve_total") == 1
        and sample(text, "memstream_retrieve_latency_seconds_count") == 1
    )


def test_healthz_tells_every_process_whether_the_processing_one_fails(tmp_path):
    """``serve --workers``: a process that does not run the pipeline answers /healthz with the processing
    process's state, read from the figures it publishes (here written as a live process would)."""
    data = tmp_path / "d"
    with TestClient(create_app(Settings(data_dir=data), embedder=None)) as client:
        alone = client.get("/healthz").json()
        assert alone["status"] == "ok" and alone["background_failing"] is False and alone["processes"] == 1
    held = os.open(data / LOCK_FILE, os.O_RDWR | os.O_CREAT)  # as another process holding it
    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        _as_follower(data)
    finally:
        os.close(held)


def _as_follower(data) -> None:
    with TestClient(create_app(Settings(data_dir=data), embedder=None, shared=True)) as client:
        assert client.app.state.lanes.leader is False  # the lock is held: this process does not process
        processor = SharedMetrics(data).dir / f"{os.getppid()}.json"  # a live pid, as the processing one
        failing = {"counters": {}, "histogram": {}, "recent_ms": [], "processing": True,
                   "pipeline": {"failing": True}}  # fmt: skip
        processor.write_text(json.dumps(failing))
        h = client.get("/healthz").json()
        assert (h["status"], h["background_failing"], h["processing"]) == ("degraded", True, False)
        assert h["processes"] >= 2  # this one (it publishes every second) and the processing one
        processor.write_text(json.dumps(failing | {"pipeline": {"failing": False}}))
        assert client.get("/healthz").json()["status"] == "ok"
        processor.unlink()
