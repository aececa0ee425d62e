"""``memstream query`` as its own process: it ends without the interpreter's teardown (``os._exit``), so its
output must be complete and its status right; run in-process (CliRunner) it must not end the caller."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

from typer.testing import CliRunner

from memstream.cli import app

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
TEXTS = ["I moved to Hangzhou last spring.", "Nice! How is the weather there?", "Rainy, but I love the lake.",
         "Do you still play the violin?", "Yes, every Sunday with a quartet."]  # fmt: skip


def _ingest(tmp_path) -> str:
    src = tmp_path / "in.jsonl"
    rows = [{"chat_id": "c1", "message_id": f"m{i}", "sender": "ann" if i % 2 == 0 else "bo", "text": t,
             "ts": (T0 + timedelta(minutes=i)).isoformat()} for i, t in enumerate(TEXTS)]  # fmt: skip
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = tmp_path / "data"
    result = CliRunner().invoke(app, ["ingest", str(src), "--data-dir", str(data), "--embedder", "none"])
    assert result.exit_code == 0, result.output
    return str(data)


def test_query_process_prints_everything_and_exits_zero(tmp_path):
    data = _ingest(tmp_path)
    env = {**os.environ, "MEMSTREAM_LOG_LEVEL": "WARNING"}
    cmd = [sys.executable, "-m", "memstream.cli", "query", "--chat", "c1", "Where does ann live?", "--json",
           "--data-dir", data]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-800:]
    resp = json.loads(proc.stdout)  # the whole JSON document arrived before the process ended
    assert resp["chat_id"] == "c1"
    assert any("Hangzhou" in it["text"] for it in resp["items"])


def test_query_in_process_returns_to_the_caller(tmp_path):
    data = _ingest(tmp_path)
    result = CliRunner().invoke(app, ["query", "--chat", "c1", "violin", "--data-dir", data])
    assert result.exit_code == 0, result.output
    assert "violin" in result.output
    bad = subprocess.run([sys.executable, "-m", "memstream.cli", "query", "--chat", "c1", "   ", "--data-dir", data],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "error" in bad.stderr + bad.stdout
