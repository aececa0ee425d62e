"""An overloaded API refuses (429 + Retry-After) instead of keeping a request waiting for its lane: through
the real app (its lanes are real threads; the test holds one with a call it lets go of later), and at a
real ``memstream serve`` hit by a burst."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
from fastapi.testclient import TestClient

from memstream.api import create_app
from memstream.settings import ServeConfig, Settings
from tests.live_server import ingested, running_server


def msg(i: int) -> dict:
    return {"chat_id": "c1", "message_id": f"m{i}", "sender": "ann", "ts": f"2024-03-01T09:{i:02d}:00Z",
            "text": f"the deploy plan, step {i}"}  # fmt: skip


def held(client: TestClient, lane, gate: threading.Event):
    """``lane`` kept busy (on the app's loop) until ``gate`` is set; returns once the call has the lane."""
    task = client.portal.start_task_soon(lane.call, lambda c: asyncio.to_thread(gate.wait, 60))
    while lane.pending == 0 and not task.done():
        time.sleep(0.01)
    return task


def test_a_busy_reader_lane_answers_429_with_retry_after_at_once(tmp_path):
    settings = Settings(data_dir=tmp_path / "d", serve=ServeConfig(readers=1, max_wait_s=0.05))
    gate = threading.Event()
    with TestClient(create_app(settings, embedder=None)) as client:
        reader = client.app.state.lanes.readers[0]
        client.portal.call(reader.call, lambda c: asyncio.sleep(0.2))  # a call of a known time (>= 0.2 s)
        holder = held(client, reader, gate)
        try:
            r = client.post("/v1/retrieve", json={"chat_id": "c1", "query": "deploy plan"})
            assert not holder.done()  # answered while the lane was busy: not queued behind it
        finally:
            gate.set()
        holder.result(30)
        assert r.status_code == 429 and "busy" in r.json()["detail"]
        assert int(r.headers["retry-after"]) >= 1
        assert client.post("/v1/retrieve", json={"chat_id": "c1", "query": "deploy plan"}).status_code == 200
        assert "memstream_shed_total 1\n" in client.get("/metrics").text  # the refusal is counted where watched


def test_a_write_that_waited_its_bound_for_the_ingest_lane_is_refused_and_not_written(tmp_path):
    settings = Settings(data_dir=tmp_path / "d", serve=ServeConfig(max_wait_s=0.2))
    gate = threading.Event()
    with TestClient(create_app(settings, embedder=None)) as client:
        holder = held(client, client.app.state.lanes.ingest, gate)
        try:
            r = client.post("/v1/messages", json={"messages": [msg(0)], "wait": False})
            assert not holder.done()
        finally:
            gate.set()
        holder.result(30)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1, r.text
        again = client.post("/v1/messages", json={"messages": [msg(0)], "wait": False})
        assert again.status_code == 202 and again.json()["new"] == 1  # the refused one was never appended


async def test_a_burst_at_a_real_serve_is_answered_or_refused_never_5xx(tmp_path):
    data = ingested(tmp_path, [f"the deploy plan, step {i}" for i in range(30)])
    env = {"MEMSTREAM_SERVE__READERS": "1", "MEMSTREAM_SERVE__MAX_WAIT_S": "0.001"}
    with running_server(data, env=env) as url:
        limits = httpx.Limits(max_connections=60)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
            body = {"chat_id": "c1", "query": "deploy plan step 3"}
            answers = await asyncio.gather(*(client.post("/v1/retrieve", json=body) for _ in range(60)))
    codes = [a.status_code for a in answers]
    assert set(codes) == {200, 429}, codes  # a lane that is busy refuses at once; one that is free answers
    assert all(int(a.headers["retry-after"]) >= 1 for a in answers if a.status_code == 429)


def test_a_write_past_max_backlog_is_refused_with_retry_after(tmp_path):
    settings = Settings(data_dir=tmp_path / "d", serve=ServeConfig(max_backlog=1))
    gate, started = threading.Event(), threading.Event()

    async def stall() -> None:  # the processor's loop held: nothing appended gets processed meanwhile
        started.set()
        gate.wait(60)

    with TestClient(create_app(settings, embedder=None)) as client:
        stalled = client.portal.start_task_soon(client.app.state.lanes.processor.submit, stall())
        try:
            assert started.wait(30)
            first = client.post("/v1/messages", json={"messages": [msg(0), msg(1)], "wait": False})
            refused = client.post("/v1/messages", json={"messages": [msg(2)], "wait": False})
        finally:
            gate.set()
        stalled.result(30)
    assert first.status_code == 202 and first.json()["new"] == 2
    assert refused.status_code == 429 and refused.headers["retry-after"] == "5" and "waiting" in refused.text
