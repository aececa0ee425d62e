"""The reliability bench's own parts: the load client against a real ``memstream serve`` and a local HTTP
server that answers chunked, and a partial run that keeps the other steps' figures."""

from __future__ import annotations

import asyncio
import json

from bench import reliability as R
from bench.cli_reliability import run_reliability
from bench.reliability_load import Conn, run_load


def test_the_load_client_drives_a_real_serve_without_errors(tmp_path):
    server = R.Server(tmp_path / "d").start()
    try:
        out = asyncio.run(run_load(server, 20, 2.0, "", R.message, workers=4))
    finally:
        server.stop()
    assert out["requests"] == 40 and out["errors"] == 0, out["error_kinds"]
    assert 0 < out["p50_ms"] <= out["p95_ms"] <= out["p99_ms"]
    assert out["server_cpu_ms_per_request"] > 0 and len(out["loadavg_1m"]) == 2


def test_the_load_client_reads_chunked_and_sized_bodies_on_one_connection():
    async def handle(reader, writer):
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno")
            await writer.drain()

    async def main():
        srv = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = srv.sockets[0].getsockname()[1]
        conn = Conn("127.0.0.1", port, {})
        try:
            first = await conn.request("GET", "/a")
            second = await conn.request("GET", "/b")
            return first, second
        finally:
            conn.close()
            srv.close()

    assert asyncio.run(main()) == ((200, b"hello world"), (404, b"no"))


def test_a_partial_run_keeps_the_other_steps_figures(tmp_path):
    (tmp_path / "reliability.json").write_text(json.dumps({"fuzz": {"inputs": 10000, "5xx": 0}}))
    out = run_reliability(tmp_path, n_fuzz=1, kills=1, rates=[], seconds=1, seed=3, steps=("sensitive",))
    saved = json.loads((tmp_path / "reliability.json").read_text())
    assert saved["fuzz"] == {"inputs": 10000, "5xx": 0} and saved["steps_run"] == ["sensitive"]
    assert saved["sensitive"] == out["sensitive"] and set(saved["sensitive"]) >= {"phone", "email"}
