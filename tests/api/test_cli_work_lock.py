"""A command-line ingest never interleaves with a serving worker's deletion: besides the processing lock it
holds ``work.lock`` (the lock ``serve --workers`` takes around each batch and deletion) for its whole run, and
says so when it has to wait."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from memstream.dirlock import WorkLock
from tests.helpers import make_messages, write_jsonl


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "memstream.cli", *args]


def log_rows(data_dir) -> int:
    import sqlite3

    db = data_dir / "log" / "log.db"
    if not db.exists():
        return 0
    with sqlite3.connect(db, timeout=5) as con:
        try:
            return con.execute("SELECT count(*) FROM consumer_offsets WHERE offset > 0").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def test_cli_ingest_waits_for_a_held_work_lock(tmp_path):
    data = tmp_path / "d"
    data.mkdir()
    src = write_jsonl(tmp_path / "in.jsonl", make_messages(2, 40))
    lock = WorkLock(data)
    asyncio.run(lock.__aenter__())  # held until released below: a serving worker's deletion in progress
    proc = subprocess.Popen(cli("ingest", str(src), "--data-dir", str(data), "--embedder", "none"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 15  # an unblocked ingest of 80 messages without an embedder ends sooner
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None, "the ingest ran while a deletion held work.lock"
        assert log_rows(data) == 0  # nothing consumed while it waits
    finally:
        asyncio.run(lock.__aexit__(None, None, None))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "waiting for a serving worker's deletion or batch" in " ".join(err.split())  # rich wraps lines
    assert log_rows(data) > 0
