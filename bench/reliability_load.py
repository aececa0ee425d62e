"""The load step of ``memstream bench reliability``: open-loop mixed read/write traffic on loopback.

Requests arrive on a fixed schedule (``rps``) and are served by ``workers`` keep-alive connections (by
default enough for ``PROMPT_S`` of requests: a server that answers or refuses each within it never finds
the client short of a connection); a request's latency counts from its scheduled time, so queueing behind a
slow server shows (no coordinated omission). With ``serve --workers`` the server's CPU time and RSS are
summed over its processes. The client is a minimal HTTP/1.1 speaker on asyncio streams (Content-Length and
chunked bodies, keep-alive, reconnect after an error): on a 2-core box an httpx client spent ~6 ms of CPU a
request, about as much as the server, so it measured the client as much as the service.

An overloaded server should refuse (429 + Retry-After) rather than keep a request waiting: a step reports
the share of requests answered or refused within ``PROMPT_S`` (``prompt_share``, target 1.0), the 5xx and
429 counts, and the p95 of the answered requests alone (``p95_answered_ms``).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from collections.abc import Callable

PROMPT_S = 2.0  # an answer or a refusal later than this counts as a request kept waiting


class Conn:
    """One keep-alive HTTP/1.1 connection to ``host:port`` (reopened after any error)."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host, self.port = host, port
        self.head = "".join(f"{k}: {v}\r\n" for k, v in {"host": f"{host}:{port}", **headers}.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        try:
            self.writer.write(f"{method} {path} HTTP/1.1\r\n{self.head}content-type: application/json\r\n"
                              f"content-length: {len(body)}\r\n\r\n".encode() + body)  # fmt: skip
            head = await self.reader.readuntil(b"\r\n\r\n")  # type: ignore[union-attr]
            status = int(head[9:12])
            fields = {}
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip().lower()
            if fields.get("transfer-encoding") == "chunked":
                data = b""
                while size := int((await self.reader.readuntil(b"\r\n")).strip(), 16):  # type: ignore[union-attr]
                    data += (await self.reader.readexactly(size + 2))[:-2]  # type: ignore[union-attr]
                await self.reader.readuntil(b"\r\n")  # type: ignore[union-attr]
            else:
                data = await self.reader.readexactly(int(fields.get("content-length", "0")))  # type: ignore[union-attr]
            if fields.get("connection") == "close":
                self.close()
            return status, data
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def cpu_s(pid: int) -> float:
    """User + system CPU seconds used so far by process ``pid`` (Linux /proc; 0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_s(server) -> float:
    """CPU seconds of every process of ``server`` (``serve --workers``: the workers too)."""
    return sum(cpu_s(pid) for pid in (server.pids() if hasattr(server, "pids") else [server.proc.pid]))


def mixed_request(n: int, message: Callable[..., dict], mode: str | None = "bm25") -> tuple[str, bytes]:
    """Request ``n`` of the mix: every fifth a one-message write, the rest retrievals in ``mode`` (None: the
    served default, as a bot that names none), over 7 chats."""
    if n % 5 == 0:
        body = {"messages": [message(f"load{n % 7}", 100_000 + n)], "wait": False}
        return "/v1/messages", json.dumps(body).encode()
    query = {"chat_id": f"load{n % 7}", "query": ["deploy plan", "the budget?", "trip item 3"][n % 3]}
    return "/v1/retrieve", json.dumps(query | ({"mode": mode} if mode else {})).encode()


def quantile(values: list[float], p: float) -> float | None:
    """The ``p`` quantile of sorted ``values`` in ms, rounded (None when there are none)."""
    return round(values[min(len(values) - 1, int(p * len(values)))], 1) if values else None


def shedding(outcomes: list[tuple[int, float]]) -> dict:
    """Figures of (status, ms) outcomes (status 0: no HTTP answer): 5xx, 429s, the share answered or refused
    within ``PROMPT_S`` and the p95 of the answered ones."""
    prompt = sum(1 for status, ms in outcomes if (0 < status < 400 or status == 429) and ms <= PROMPT_S * 1000)
    answered = sorted(ms for status, ms in outcomes if 0 < status < 400)
    return {"5xx": sum(1 for status, _ in outcomes if status >= 500),
            "429": sum(1 for status, _ in outcomes if status == 429),
            "prompt_share": round(prompt / max(1, len(outcomes)), 4), "p95_answered_ms": quantile(answered, 0.95)}


async def run_load(server, rps: int, seconds: float, key: str, message: Callable[..., dict], *,
                   workers: int | None = None, timeout_s: float = 10.0,
                   mode: str | None = "bm25") -> dict:  # fmt: skip
    """{rps, achieved_rps, errors, error_kinds, p50/p95/p99 ms, rss_growth_mb} of one load step, with the
    server's CPU time per request, the box's 1-minute load average before and after (other processes'
    load shows there: a 2-core box with a load of 10 leaves the server a fraction of a core) and the
    :func:`shedding` figures. ``mode``: of the retrievals (:func:`mixed_request`)."""
    lat: list[float] = []
    outcomes: list[tuple[int, float]] = []
    errors: dict[str, int] = {}
    rss0, cpu0, load0 = server.rss_mb(), server_cpu_s(server), os.getloadavg()[0]
    total = int(rps * seconds)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(total):
        queue.put_nowait(n)
    start = time.perf_counter() + 0.2

    async def worker() -> None:
        conn = Conn("127.0.0.1", server.port, {"x-api-key": key})
        try:
            while not queue.empty():
                n = queue.get_nowait()
                due = start + n / rps
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                path, body = mixed_request(n, message, mode)
                status = 0
                try:
                    status, _ = await asyncio.wait_for(conn.request("POST", path, body), timeout_s)
                    if status >= 400:
                        errors[str(status)] = errors.get(str(status), 0) + 1
                except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
                        TimeoutError) as exc:  # fmt: skip
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                lat.append((time.perf_counter() - due) * 1000)
                outcomes.append((status, lat[-1]))
        finally:
            conn.close()

    connections = workers or max(48, math.ceil(rps * PROMPT_S))
    await asyncio.gather(*(worker() for _ in range(connections)))
    achieved = total / max(1e-9, time.perf_counter() - start)
    lat.sort()
    return {"rps": rps, "achieved_rps": round(achieved, 1), "seconds": seconds, "requests": total,
            "mode": mode or "default", "errors": sum(errors.values()), "error_kinds": errors, **shedding(outcomes),
            "p50_ms": quantile(lat, 0.5), "p95_ms": quantile(lat, 0.95), "p99_ms": quantile(lat, 0.99),
            "rss_growth_mb": round(server.rss_mb() - rss0, 1),
            "server_cpu_ms_per_request": round((server_cpu_s(server) - cpu0) * 1000 / max(1, total), 2),
            "serve_workers": getattr(server, "workers", 1), "connections": connections,
            "loadavg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)]}  # fmt: skip
