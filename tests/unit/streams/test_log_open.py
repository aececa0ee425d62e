"""Processes opening one new SQLite file at once (every ``serve --workers`` process opens the same files at
start) all get it: switching a new file to WAL needs its exclusive lock, and SQLite answers 'database is
locked' at once, without calling the busy handler, when a connection would upgrade a lock another shares."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from backends.sqlite.util import open_sqlite
from streams.log import open_durable_sqlite

SCHEMA = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"


def _open(kind: str, path: str, barrier, results) -> None:
    barrier.wait()
    try:
        if kind == "durable":
            conn = open_durable_sqlite(Path(path), SCHEMA)
        else:
            conn, _ = open_sqlite(path, SCHEMA, None, "test store")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        conn.close()
        results.put(mode)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(repr(exc))


def test_processes_opening_one_new_file_at_once_all_open_it_in_wal(tmp_path):
    ctx = mp.get_context("fork")  # the modules are imported already: each round takes milliseconds
    got = []
    for n in range(24):
        kind = "durable" if n % 2 else "store"
        barrier, results = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open, args=(kind, str(tmp_path / f"{n}.db"), barrier, results))
                 for _ in range(4)]  # fmt: skip
        for p in procs:
            p.start()
        got += [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(60)
    assert got == ["wal"] * len(got)
