"""A running ``memstream serve`` tells its data dir where it listens, so that ``memstream query`` asks it.

A question answered in a fresh process pays for the imports, the store's caches and the model's load (~1 s
on 2 cores) before its ~10 ms of work; the server has all of that in memory. ``serve`` writes
``<data dir>/run/serve.json`` (its URL, its process id, its embedder) while it runs and removes it when it
stops; ``query`` reads it, checks that the process lives, and posts the question to ``/v1/retrieve``. When
there is no server, it has stopped, uses another embedder, refuses the key or is busy, the question is
answered in the process as before. The answer is the same either way: the server reads the same store
with the same code.

This module is the CLI's fast path: it imports only the standard library (no pydantic, numpy or model).
"""

from __future__ import annotations

import contextlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DATA_DIR_ENV", "DEFAULT_DATA_DIR", "Served", "ServerAnswer", "announce", "ask", "data_dir_of", "find"]

DEFAULT_DATA_DIR = Path(".memstream")  # Settings.data_dir's default (tests/unit/memstream/test_served.py)
DATA_DIR_ENV = "MEMSTREAM_DATA_DIR"
ANNOUNCEMENT = Path("run") / "serve.json"
_ANY = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # a wildcard bind is reached on loopback


def data_dir_of(option: Path | None) -> Path:
    """The data dir a command uses, as :class:`memstream.settings.Settings` reads it (option, environment,
    default), without importing the settings."""
    return option if option is not None else Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


def url_of(host: str, port: int) -> str:
    host = _ANY.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextlib.contextmanager
def announce(data_dir: Path, host: str, port: int, embedder: str) -> Iterator[Path]:
    """While the block runs, ``data_dir`` says that this process serves it at ``host:port``."""
    path = Path(data_dir) / ANNOUNCEMENT
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"url": url_of(host, port), "pid": os.getpid(), "embedder": embedder}
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body), encoding="utf-8")
    os.replace(tmp, path)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError, ValueError):  # another serve may have announced itself meanwhile
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                path.unlink()


@dataclass(frozen=True)
class Served:
    url: str
    pid: int
    embedder: str | None


def find(data_dir: Path) -> Served | None:
    """The server announced in ``data_dir`` if its process is alive, else None."""
    try:
        obj = json.loads((Path(data_dir) / ANNOUNCEMENT).read_text(encoding="utf-8"))
        served = Served(str(obj["url"]), int(obj["pid"]), obj.get("embedder"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(served.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        pass
    return served


@dataclass(frozen=True)
class ServerAnswer:
    """What the server said: ``status`` 200 with the response body, or an error status with its reason."""

    status: int
    body: str

    @property
    def ok(self) -> bool:
        return self.status == 200

    def reason(self) -> str:
        """The error's ``detail`` as one line."""
        try:
            detail = json.loads(self.body).get("detail", self.body)
        except (ValueError, AttributeError):
            detail = self.body
        if isinstance(detail, list):  # a validation error: its messages
            detail = "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail[:3])
        return str(detail)[:500]


def ask(served: Served, path: str, payload: dict, api_key: str | None, timeout: float = 60.0) -> ServerAnswer | None:
    """POST ``payload`` to the server; its answer, or None when it cannot be reached."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(served.url + path, data=json.dumps(payload).encode("utf-8"), headers=headers,
                                 method="POST")  # fmt: skip
    try:  # no proxy: the server is on this machine (an http_proxy in the environment would get the request)
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=timeout) as resp:
            return ServerAnswer(resp.status, resp.read().decode("utf-8", "replace"))
    except urllib.error.HTTPError as exc:
        return ServerAnswer(exc.code, exc.read().decode("utf-8", "replace"))
    except (OSError, ValueError):  # refused, reset, timed out, a bad URL in the file
        return None
