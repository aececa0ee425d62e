"""``memstream serve`` asks the router's first questions itself before it answers anyone (an empty chat:
nothing read, nothing written), so the first user's question does not load the router."""

from __future__ import annotations

import json
import sqlite3
import subprocess

import httpx

from tests.live_server import child_env, memstream_cmd, running_server


def test_the_server_warms_the_router_and_leaves_no_trace(tmp_path):
    rows = [{"chat_id": "c1", "message_id": f"m{i}", "sender": "ann", "text": t, "ts": f"2024-03-01T09:0{i}:00Z"}
            for i, t in enumerate(["I moved to Hangzhou last spring.", "I play the violin every Sunday."])]  # fmt: skip
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = tmp_path / "data"
    proc = subprocess.run(memstream_cmd("ingest", str(src), "--data-dir", str(data), "--embedder", "none"),
                          capture_output=True, text=True, timeout=300, env=child_env())  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-800:]
    with running_server(data, log_level="INFO") as url:
        log = next(tmp_path.glob("serve-*.log")).read_text()
        assert "router warmed up" in log and "warm-up failed" not in log
        metrics = httpx.get(url + "/metrics", timeout=10).text  # the warm-up is not a user's retrieval
        assert "memstream_retrieve_total 0" in metrics
        got = httpx.post(url + "/v1/retrieve", json={"chat_id": "c1", "query": "Where did Ann move?"}, timeout=30)
        assert got.status_code == 200 and "Hangzhou" in got.json()["context"]
    with sqlite3.connect(data / "memstream.db") as db:  # nothing of the warm-up's chat was stored
        assert {c for (c,) in db.execute("SELECT chat_id FROM messages UNION SELECT chat_id FROM docs")} == {"c1"}
