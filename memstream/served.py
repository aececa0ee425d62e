"""A running ``memstream serve`` tells its data dir where it listens, so that ``memstream query`` asks it.

A question answered in a fresh process pays for the imports, the store's caches and the model's load (~1 s
on 2 cores) before its ~10 ms of work; the server has all of that in memory. ``serve`` writes
``<data dir>/run/serve.json`` while it runs (its URL, its process id, its embedder, the data dir it serves and
a random token) and removes it when it stops; ``query`` reads it and asks the server only when

- the announced data dir is this one (its resolved path and its inode: a copied data dir carries a copy of the
  file, which names the original),
- the process lives and the URL is on this machine's loopback (a question, and a key, go nowhere else),
- the answer carries the token in its ``X-Memstream-Instance`` header (it came from that server, not from
  another one that holds the port meanwhile) and is a retrieval response.

Otherwise (no server, another embedder, a busy or silent server: 5 s at most) the question is answered in
the process as before. A server that refuses the key (401/403) ends the command instead: answering from disk
would step around the keys. The answer is the same either way: the server reads the same store with
the same code and the same retrieval settings.

This module is the CLI's fast path: it imports only the standard library (no pydantic, numpy or model).
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import json
import os
import secrets
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "ANSWER_SETTINGS",
    "INSTANCE_HEADER",
    "InstanceHeader",
    "Served",
    "ServerAnswer",
    "announce",
    "ask",
    "data_dir_of",
    "find",
    "is_retrieval_response",
    "new_token",
    "same_settings",
]

DEFAULT_DATA_DIR = Path(".memstream")  # Settings.data_dir's default (tests/api/test_cli_served_query.py)
DATA_DIR_ENV = "MEMSTREAM_DATA_DIR"
INSTANCE_HEADER = "X-Memstream-Instance"  # every response of an announced server carries its token
ANNOUNCEMENT = Path("run") / "serve.json"
TIMEOUT_S = 5.0  # a question takes milliseconds; a server silent this long is left alone
_ANY = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}  # a wildcard bind is reached on loopback


def data_dir_of(option: Path | None) -> Path:
    """The data dir a command uses, read as :class:`memstream.settings.Settings` reads it (the option, else
    ``MEMSTREAM_DATA_DIR`` in any case, empty meaning the current directory, else the default), without
    importing the settings."""
    if option is not None:
        return option
    named = _setting("DATA_DIR")
    return Path(named) if named is not None else DEFAULT_DATA_DIR


def _setting(name: str) -> str | None:
    """``MEMSTREAM_<name>`` from the environment as the settings read it: in any case, the last one set."""
    found = [v for k, v in os.environ.items() if k.upper() == f"MEMSTREAM_{name}"]
    return found[-1] if found else None


# the settings (memstream.settings.Settings fields) besides the embedder that can change an answer
ANSWER_SETTINGS = ("retrieval", "llm", "graph", "store_url")


def same_settings(served: Served, embedder: str | None) -> bool:
    """Whether this process would answer as the server does: the same embedder (``embedder``, else
    ``MEMSTREAM_EMBEDDER``, when either is given), and none of :data:`ANSWER_SETTINGS` set in this process's
    environment (``MEMSTREAM_RETRIEVAL__RRF_K``, another store…: the server may not have it, so the question
    is answered here, with it)."""
    wanted = embedder or _setting("EMBEDDER")
    if wanted is not None and wanted != served.embedder:
        return False
    names = [f"MEMSTREAM_{n.upper()}" for n in ANSWER_SETTINGS]
    return not any(k.upper() == n or k.upper().startswith(n + "__") for k in os.environ for n in names)


def url_of(host: str, port: int) -> str:
    host = _ANY.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _identity(data_dir: Path) -> dict:
    st = os.stat(data_dir)
    return {"data_dir": str(Path(data_dir).resolve()), "dev": st.st_dev, "ino": st.st_ino}


def new_token() -> str:
    return secrets.token_hex(16)


class InstanceHeader:
    """ASGI middleware: every HTTP response carries ``token`` in :data:`INSTANCE_HEADER`."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.header = (INSTANCE_HEADER.lower().encode("latin-1"), token.encode("latin-1"))

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), self.header]}
            await send(message)

        await self.app(scope, receive, send_with_header)


@contextlib.contextmanager
def announce(data_dir: Path, host: str, port: int, embedder: str, token: str) -> Iterator[Path]:
    """While the block runs, ``data_dir`` says that this process serves it at ``host:port`` (its responses
    carry ``token`` in :data:`INSTANCE_HEADER`)."""
    path = Path(data_dir) / ANNOUNCEMENT
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"url": url_of(host, port), "pid": os.getpid(), "embedder": embedder, "token": token,
            **_identity(data_dir)}  # fmt: skip
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(body), encoding="utf-8")
    os.replace(tmp, path)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError, ValueError):  # another serve may have announced itself meanwhile
            if json.loads(path.read_text(encoding="utf-8")).get("token") == token:
                path.unlink()


@dataclass(frozen=True)
class Served:
    url: str
    pid: int
    embedder: str | None
    token: str


def find(data_dir: Path) -> Served | None:
    """The server announced in ``data_dir`` if the announcement is this data dir's, its process lives and it
    listens on loopback; else None."""
    try:
        obj = json.loads((Path(data_dir) / ANNOUNCEMENT).read_text(encoding="utf-8"))
        served = Served(str(obj["url"]), int(obj["pid"]), obj.get("embedder"), str(obj["token"]))
        same = {k: obj.get(k) for k in ("data_dir", "dev", "ino")} == _identity(data_dir)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not same or not _on_loopback(served.url) or served.pid <= 0:
        return None
    try:
        os.kill(served.pid, 0)
    except (ProcessLookupError, OverflowError):
        return None
    except PermissionError:  # alive, another user's
        pass
    return served


def _on_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerAnswer:
    """What the server said: ``status`` 200 with the response body, or an error status with its reason."""

    status: int
    body: str

    @property
    def ok(self) -> bool:
        return self.status == 200

    def reason(self) -> str:
        """The error's ``detail`` as one line (a validation error as ``field: message``, as the CLI says it)."""
        try:
            detail = json.loads(self.body).get("detail", self.body)
        except (ValueError, AttributeError):
            detail = self.body
        if isinstance(detail, list):
            detail = "; ".join(_field_error(d) for d in detail[:5])
        return str(detail)[:500]


def _field_error(d: object) -> str:
    if not isinstance(d, dict):
        return str(d)
    loc = [str(p) for p in d.get("loc", ())]
    loc = loc[1:] if loc[:1] == ["body"] else loc
    msg = str(d.get("msg", ""))
    if loc and msg.startswith(loc[0]):  # already in plain words, naming its field (memstream.api_errors)
        return msg
    return f"{'.'.join(loc) or '<root>'}: {msg}"


def ask(served: Served, path: str, payload: dict, api_key: str | None,
        timeout: float = TIMEOUT_S) -> ServerAnswer | None:  # fmt: skip
    """POST ``payload`` to the server; its answer, or None when it cannot be reached, does not answer in
    ``timeout`` seconds, or is not the announced server (its token)."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(served.url + path, data=json.dumps(payload).encode("utf-8"), headers=headers,
                                 method="POST")  # fmt: skip
    try:
        status, token, body = _post(req, timeout)
    except (OSError, ValueError, http.client.HTTPException):  # refused, reset, timed out, not HTTP
        return None
    if token != served.token:
        return None
    return ServerAnswer(status, body.decode("utf-8", "replace"))


def is_retrieval_response(body: str) -> bool:
    """Whether ``body`` reads as a ``/v1/retrieve`` response (what ``memstream query`` prints of one)."""
    try:
        resp = json.loads(body)
    except ValueError:
        return False
    return (isinstance(resp, dict) and isinstance(resp.get("items"), list) and isinstance(resp.get("context"), str)
            and isinstance(resp.get("strategy"), str) and isinstance(resp.get("context_tokens"), int))  # fmt: skip


def _post(req: urllib.request.Request, timeout: float) -> tuple[int, str | None, bytes]:
    """(status, the instance header, body) of ``req``, an error status included."""
    try:  # no proxy: the server is on this machine (an http_proxy in the environment would get the request)
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=timeout) as resp:
            return resp.status, resp.headers.get(INSTANCE_HEADER), resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers.get(INSTANCE_HEADER), exc.read()
