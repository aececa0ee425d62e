"""``memstream serve`` asks the router's first questions itself before it answers anyone (an empty chat:
nothing read, nothing written), so the first user's question does not load the router."""

from __future__ import annotations

import sqlite3

import httpx

from tests.live_server import ingested, running_server


def test_the_server_warms_the_router_and_leaves_no_trace(tmp_path):
    data = ingested(tmp_path, ["I moved to Hangzhou last spring.", "I play the violin every Sunday."])
    with running_server(data, log_level="INFO") as url:
        log = next(tmp_path.glob("serve-*.log")).read_text()
        assert "router warmed up" in log and "warm-up failed" not in log
        metrics = httpx.get(url + "/metrics", timeout=10).text  # the warm-up is not a user's retrieval
        assert "memstream_retrieve_total 0" in metrics
        got = httpx.post(url + "/v1/retrieve", json={"chat_id": "c1", "query": "Where did Ann move?"}, timeout=30)
        assert got.status_code == 200 and "Hangzhou" in got.json()["context"]
    with sqlite3.connect(data / "memstream.db") as db:  # nothing of the warm-up's chat was stored
        assert {c for (c,) in db.execute("SELECT chat_id FROM messages UNION SELECT chat_id FROM docs")} == {"c1"}
