"""Local stand-ins for the production services, for development, the test suites and the benchmarks.

:func:`noida_server` runs ``noida-db`` (PyPI ``noida-db``, an Elasticsearch 8.15-compatible API server) on
a free loopback port. Nothing starts at import.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

__all__ = ["free_port", "noida_binary", "noida_server"]


def noida_binary() -> Path:
    path = Path(str(files("noida_db").joinpath("noida-db")))
    if not path.is_file():
        raise FileNotFoundError(f"noida-db binary not found at {path}")
    path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:  # noqa: S310 - loopback only
            return resp.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def noida_server(data_dir: Path, *, attempts: int = 5, timeout: float = 30.0) -> Iterator[str]:
    """Run ``noida-db start --only elasticsearch`` on a free loopback port; yields ``http://127.0.0.1:PORT``.

    A server whose port was taken meanwhile exits (with status 0): another port is tried.
    """
    binary, last_error = noida_binary(), ""
    for _ in range(attempts):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = data_dir / f"noida-{port}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(binary), "start", "--only", "elasticsearch", "--elasticsearch-port", str(port),
                 "--data-dir", str(data_dir / f"data-{port}")],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline and not _answers(url):
                time.sleep(0.1)
            if proc.poll() is None and _answers(url):
                yield url
                return
            last_error = f"exit {proc.poll()}: {log.read_text(errors='replace')[-500:]}"
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    raise RuntimeError(f"noida-db did not start after {attempts} attempts; last: {last_error}")
