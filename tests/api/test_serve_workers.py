"""``memstream serve --workers 2``: two real processes on one port and one data dir. Writes POSTed to either
are processed once (by the process holding the processing lock), retrievable through both, deletable
through either; ``/metrics`` is the whole server's through either; when the processing process is SIGKILLed the other takes over and nothing accepted is lost."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.live_server import child_env, free_port, memstream_cmd, stop

TIMEOUT = 180.0


def until(check, what: str, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = check()
        if out:
            return out
        time.sleep(0.1)
    raise TimeoutError(what)


def on_one_connection(url: str, method: str, path: str, **kw) -> tuple[int, bool, httpx.Response]:
    """(pid, processing, response) of one request, sent on a new connection after a /healthz on it (one
    connection is served by one process)."""
    with httpx.Client(base_url=url, timeout=60) as c:
        health = c.get("/healthz").json()
        return health["pid"], health["processing"], c.request(method, path, **kw)


def on_process(url: str, pid: int, method: str, path: str, **kw) -> httpx.Response:
    """One request served by process ``pid`` (new connections until one reaches it)."""
    for _ in range(200):
        with httpx.Client(base_url=url, timeout=60) as c:
            if c.get("/healthz").json()["pid"] == pid:
                return c.request(method, path, **kw)
    raise AssertionError(f"no connection reached pid {pid}")


def msg(chat: str, i: int) -> dict:
    return {"chat_id": chat, "message_id": f"m{i}", "sender": ["alice", "bob"][i % 2],
            "ts": f"2024-03-01T09:{i // 60:02d}:{i % 60:02d}Z", "text": f"canary{chat}x{i} walked the heron"}


def found(url: str, chat: str, i: int) -> tuple[int, list[str]]:
    """(pid, message ids of the turns) of a BM25 retrieval of message ``i``'s unique word."""
    pid, _, r = on_one_connection(url, "POST", "/v1/retrieve",
                                  json={"chat_id": chat, "query": f"canary{chat}x{i}", "mode": "bm25", "k": 50})
    assert r.status_code == 200, r.text
    return pid, [m for it in r.json()["items"] if it["kind"] == "turn" for m in it["source_message_ids"]]


def sample(text: str, name: str) -> float:
    """The value of one sample (``name`` with its labels) in a Prometheus exposition."""
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.rsplit(" ", 1)[0] == name]
    assert len(values) == 1, (name, text)
    return values[0]


@pytest.fixture
def two_workers(tmp_path: Path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(memstream_cmd("serve", "--workers", "2", "--port", str(port), "--data-dir",
                                          str(tmp_path / "d"), "--embedder", "none"),
                            stdout=log, stderr=subprocess.STDOUT, env=child_env(),
                            cwd=Path(__file__).parents[2])  # fmt: skip
    pids: dict[int, bool] = {}

    def both_up() -> bool:
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()
        try:
            h = httpx.get(url + "/healthz", timeout=2).json()
            pids[h["pid"]] = h["processing"]
        except httpx.TransportError:
            pass
        return len(pids) == 2

    try:
        until(both_up, "two workers answering /healthz")
        yield url, pids
    finally:
        stop(proc, timeout=40)
        log.close()


def test_two_workers_share_writes_reads_and_deletions(two_workers):
    url, pids = two_workers
    assert sorted(pids.values()) == [False, True]  # exactly one processes
    wrote: dict[int, list[int]] = {}
    i = 0
    while len(wrote) < 2 or i < 10:  # until both processes accepted writes
        pid, _, r = on_one_connection(url, "POST", "/v1/messages", json={"messages": [msg("w", i)]})
        assert r.status_code == 202 and r.json()["new"] == 1, r.text
        wrote.setdefault(pid, []).append(i)
        i += 1
        assert i < 200
    retrieves = 0
    for j in range(i):  # processed (wait=true is the default) and seen through both processes, once
        answered: set[int] = set()
        while len(answered) < 2:
            pid, ids = found(url, "w", j)
            retrieves += 1
            assert ids.count(f"m{j}") == 1, (j, pid, ids)
            answered.add(pid)
    pid, _, again = on_one_connection(url, "POST", "/v1/messages", json={"messages": [msg("w", 0)]})
    assert again.json()["results"][0]["status"] == "duplicate"

    time.sleep(1.5)  # each process publishes its figures every second
    for p in pids:  # one exposition for the whole server, whichever process answers
        text = on_process(url, p, "GET", "/metrics").text
        assert sample(text, "memstream_serve_processes") == 2
        assert sample(text, "memstream_retrieve_total") == retrieves
        assert sample(text, "memstream_retrieve_latency_seconds_count") == retrieves
        assert sample(text, 'memstream_stage_processed_total{stage="segmenter"}') >= i  # the processor's

    follower = next(p for p, lead in pids.items() if not lead)
    gone = on_process(url, follower, "DELETE", "/v1/chats/w")  # by the process that does not process
    assert gone.status_code == 200 and gone.json()["messages"] == i, gone.text
    seen: set[int] = set()
    while len(seen) < 2:
        pid, ids = found(url, "w", 3)
        assert ids == [], (pid, ids)
        seen.add(pid)


def test_the_other_worker_takes_over_processing(two_workers):
    url, pids = two_workers
    leader = next(p for p, lead in pids.items() if lead)
    for i in range(5):  # durable, not waited for
        r = httpx.post(url + "/v1/messages", json={"messages": [msg("k", i)], "wait": False}, timeout=60)
        assert r.status_code == 202
    os.kill(leader, signal.SIGKILL)

    def processing_elsewhere():
        try:
            h = httpx.get(url + "/healthz", timeout=2).json()
        except httpx.TransportError:
            return False
        return h["processing"] and h["pid"] != leader

    until(processing_elsewhere, "another process took over processing", 60)
    r = httpx.post(url + "/v1/messages", json={"messages": [msg("k", 5)]}, timeout=60)
    assert r.status_code == 202
    for j in range(6):  # nothing accepted was lost (drained by the new processing process), nothing twice
        ids = until(lambda j=j: found(url, "k", j)[1], f"message {j} retrievable", 60)
        assert ids.count(f"m{j}") == 1, (j, ids)
