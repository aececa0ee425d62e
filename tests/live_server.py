"""A real ``memstream serve`` in a subprocess on a free loopback port (client, MCP and browser tests)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from memstream.devservers import free_port

__all__ = ["child_env", "free_port", "ingested", "memstream_cmd", "running_server", "stop"]


def memstream_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "memstream.cli", *args]


def child_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("MEMSTREAM_DATA_DIR", None)
    return {**env, **extra}


def ingested(tmp_path: Path, texts: list[str], chat: str = "c1") -> Path:
    """A data dir built by ``memstream ingest`` (no embedder) of ``texts`` in ``chat``, one a minute from
    2024-03-01 09:00, sent by ann and bo in turn."""
    rows = [{"chat_id": chat, "message_id": f"m{i}", "sender": "ann" if i % 2 == 0 else "bo", "text": t,
             "ts": f"2024-03-01T09:{i:02d}:00Z"} for i, t in enumerate(texts)]  # fmt: skip
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = tmp_path / "data"
    proc = subprocess.run(memstream_cmd("ingest", str(src), "--data-dir", str(data), "--embedder", "none"),
                          capture_output=True, text=True, timeout=300, env=child_env())  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-800:]
    return data


@contextmanager
def running_server(data_dir: Path, *, embedder: str | None = "none", timeout: float = 120.0,
                   env: dict[str, str] | None = None, log_level: str | None = None) -> Iterator[str]:  # fmt: skip
    """Start ``memstream serve`` on ``data_dir``; yield its base URL once /healthz answers; stop it.
    ``embedder`` None: the one the data dir is indexed with. Its output goes to ``serve-PORT.log`` beside
    ``data_dir``."""
    port = free_port()
    log = (data_dir.parent / f"serve-{port}.log").open("w")
    proc = subprocess.Popen(
        memstream_cmd(*(["--log-level", log_level] if log_level else []), "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir),
                      *(["--embedder", embedder] if embedder else [])),
        stdout=log, stderr=subprocess.STDOUT, env=child_env(**(env or {})), cwd=Path(__file__).parents[1],
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"memstream serve exited with {proc.returncode}: {Path(log.name).read_text()}")
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"memstream serve did not answer in {timeout}s: {Path(log.name).read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        stop(proc, timeout=20)
        log.close()


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    """Send ``sig`` (if it still runs), SIGKILL after ``timeout`` seconds; its exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode
