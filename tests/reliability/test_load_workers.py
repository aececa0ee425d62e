"""The load step against ``serve --workers 2``: no errors, and the server's CPU time and RSS are those of
every process (the supervisor and both workers)."""

from __future__ import annotations

import asyncio

from bench import reliability as R
from bench.reliability_load import run_load


def test_the_load_client_drives_two_workers_without_errors(tmp_path):
    server = R.Server(tmp_path / "d", workers=2).start()
    try:
        assert len(server.pids()) == 3  # the supervisor and its two workers
        out = asyncio.run(run_load(server, 20, 2.0, "", R.message, workers=4))
        assert server.rss_mb() > 2 * 50  # two app processes, each well over 50 MB
    finally:
        server.stop()
    assert out["requests"] == 40 and out["errors"] == 0, out["error_kinds"]
    assert out["serve_workers"] == 2 and out["server_cpu_ms_per_request"] > 0


def test_killing_workers_of_serve_loses_and_duplicates_nothing(tmp_path):
    import random

    out = R.kill_serve_workers(tmp_path, 2, random.Random(3))
    assert out["accepted"] > 0
    assert out["lost"] == 0 and out["duplicated"] == 0, out
