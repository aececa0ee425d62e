"""``memstream bench reliability --out DIR``: a real ``memstream serve`` on a free loopback port, attacked.

- fuzz: ``n_fuzz`` generated bad (and odd) requests -> crashes (server gone), 5xx, hangs (> 10 s);
- kills: ``ingest`` SIGKILLed ``kills`` times at random points, then finished; ``serve`` SIGKILLed while
  batches are POSTed (``wait=false``) and restarted (it drains its backlog on start) -> lost/duplicated
  messages against what the log accepted; a random worker of ``serve --workers 2`` SIGKILLed likewise (restarted by its
  supervisor; the other takes processing over); a Faust worker SIGKILLed over a Tansu broker -> lost/duplicated
  records against a clean embedded run (:mod:`bench.reliability_kafka`);
- load: mixed read/write (4:1) at each rate for ``seconds`` (loopback only), on a server of its own per
  embedder (the default one, asked the served default mode, and ``none``, BM25) -> errors, 5xx, 429s, the
  share answered or refused within 2 s, p50/p95/p99 and p95 of the answered, RSS growth;
- leaks: canaries of chat B never in chat A's answers; a key for A probing B on every endpoint;
- deleted_returned: a deleted user's canary returned after ``replay``;
- sensitive: precision/recall per kind on the generated set (bench/sensitive_gen.py).
Loopback only; BM25-only (``--embedder none``) so the box's 2 cores measure the service, not the model, but for
the load step's figure of the default embedder (the configuration served when none is named).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import httpx

from memstream.devservers import free_port

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
CLI = [sys.executable, "-m", "memstream.cli"]
T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def message(chat: str, i: int, text: str | None = None, sender: str | None = None) -> dict:
    return {"chat_id": chat, "message_id": f"m{i}", "sender": sender or ["alice", "bob", "carol"][i % 3],
            "ts": (T0 + timedelta(seconds=30 * i)).isoformat(),
            "text": text or f"note {i}: the {['deploy', 'lunch', 'budget', 'trip'][i // 7 % 4]} plan item {i % 11}"}


def memstream(data: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args, "--data-dir", str(data)], env=ENV, capture_output=True, text=True, **kw)


class Server:
    """``memstream serve`` of ``data`` on a free loopback port; ``embedder`` None: the default one."""

    def __init__(self, data: Path, workers: int = 1, embedder: str | None = "none") -> None:
        self.data, self.port, self.proc, self.workers = data, free_port(), None, workers
        self.embedder = embedder

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        self.proc = subprocess.Popen([*CLI, "serve", "--port", str(self.port), "--data-dir", str(self.data),
                                      *(["--embedder", self.embedder] if self.embedder else []),
                                      "--workers", str(self.workers)], env=ENV,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        seen: set[int] = set()
        deadline = time.monotonic() + 120  # every worker answering; on a loaded 2-core box a worker may take long
        while time.monotonic() < deadline:
            try:
                seen.add(httpx.get(f"{self.url}/healthz", timeout=1).json()["pid"])  # a new connection each
                if len(seen) >= self.workers:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05 if seen else 0.1)
        raise RuntimeError("memstream serve did not come up")

    def pids(self) -> list[int]:
        """The serve process and, with ``--workers``, its worker processes."""
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as fh:
                return [self.proc.pid, *map(int, fh.read().split())]
        except OSError:
            return [self.proc.pid]

    def rss_mb(self) -> float:
        """Resident memory of every process of the server."""
        total = 0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/status") as fh:
                    total += next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))
            except OSError:
                pass
        return total / 1024

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            self.proc.wait(30)


def make_key(data: Path, *args: str) -> str:
    out = memstream(data, "keys", "create", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().split()[-1]


# ---- fuzz -------------------------------------------------------------------------------------------

WEIRD = ["", " ", "a/b", "\ud800", "\x00", "x" * 300, "../../etc", "%2F", "NaN", "9" * 40, "😀" * 5, "\u202e"]
TIMES = ["2024-05-20T10:00:00", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+14:00", "2024-02-30T00:00Z",
         "1e400", "", "2024-05-20T10:00:00Z"]


def fuzz_case(rng: random.Random) -> tuple[str, str, str]:
    """(method, path, body text) — mostly invalid, some valid, many odd."""
    pick = rng.random()
    val = lambda: rng.choice([rng.choice(WEIRD), rng.randint(-2**70, 2**70), None, True, [], {}, 1.5,  # noqa: E731
                              "".join(chr(rng.randint(1, 0x10FFFF)) for _ in range(rng.randint(0, 12)))])
    if pick < 0.35:
        body = {"chat_id": rng.choice(["c0", val()]), "query": rng.choice(["how long ago was it 10000 years ago?",
                                                                          "上个月", val()])}
        for f in ("k", "mode", "now", "token_budget", "kinds", "asker"):
            if rng.random() < 0.3:
                body[f] = rng.choice([val(), rng.choice(TIMES)])
        return "POST", rng.choice(["/v1/retrieve", "/v1/context"]), json.dumps(body, allow_nan=True)
    if pick < 0.7:
        msgs = [{k: rng.choice([v, val()]) if rng.random() < 0.3 else v for k, v in message("c0", rng.randint(0, 99)).items()}
                for _ in range(rng.randint(1, 4))]
        for m in msgs:
            if rng.random() < 0.3:
                m["ts"] = rng.choice(TIMES)
        return "POST", "/v1/messages", json.dumps({"messages": msgs, "wait": False}, allow_nan=True)
    if pick < 0.85:
        text = rng.choice(['{"chat_id": "c0", "query": "\\ud800"}', '{"k": NaN}', '{"k": Infinity}', "[", "null",
                           '{"messages": []}', '{"messages": [null]}', "\x00" * 10, '{"a":' * 50])
        return "POST", rng.choice(["/v1/retrieve", "/v1/messages", "/v1/context"]), text
    chat = quote(str(val()).encode("utf-8", "surrogatepass"), safe="") or "x"  # raw bytes, even invalid UTF-8
    return rng.choice(["GET", "DELETE"]), rng.choice([f"/v1/chats/{chat}/topics", f"/v1/chats/{chat}/memories",
                                                      f"/v1/chats/{chat}/messages/{chat}/reply-chain"]), ""


async def run_fuzz(server: Server, n: int, key: str, seed: int = 1) -> dict:
    rng = random.Random(seed)
    out = {"inputs": 0, "crashes": 0, "5xx": 0, "hangs": 0, "status": {}}
    headers = {"X-API-Key": key, "content-type": "application/json"}
    async with httpx.AsyncClient(base_url=server.url, timeout=10, headers=headers) as client:
        sem = asyncio.Semaphore(8)

        async def one(case):
            method, path, body = case
            async with sem:
                try:
                    r = await client.request(method, path, content=body.encode("utf-8", "surrogatepass"))
                    out["status"][r.status_code] = out["status"].get(r.status_code, 0) + 1
                    out["5xx"] += r.status_code >= 500
                except httpx.TimeoutException:
                    out["hangs"] += 1
                except httpx.HTTPError:
                    out["crashes"] += not server.alive()
                out["inputs"] += 1

        await asyncio.gather(*(one(fuzz_case(rng)) for _ in range(n)))
    out["crashes"] += not server.alive()
    return out


# ---- kills ------------------------------------------------------------------------------------------

def stored_ids(data: Path) -> tuple[list[tuple[str, str]], list[str]]:
    with sqlite3.connect(data / "memstream.db") as db:
        msgs = db.execute("SELECT chat_id, message_id FROM messages ORDER BY 1, 2").fetchall()
        mems = [r for (r,) in db.execute("SELECT memory_id FROM memories ORDER BY 1")]
    return msgs, mems


def kill_ingest(work: Path, kills: int, rng: random.Random) -> dict:
    rows = [message(f"k{c}", i) for c in range(4) for i in range(150)]
    src = work / "kill-in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    clean = work / "kill-clean"
    assert memstream(clean, "ingest", str(src), "--embedder", "none").returncode == 0
    data = work / "kill-data"
    for _ in range(kills):
        proc = subprocess.Popen([*CLI, "ingest", str(src), "--data-dir", str(data), "--embedder", "none"], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(1.5, 6.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert memstream(data, "ingest", str(src), "--embedder", "none").returncode == 0
    (want, want_mem), (got, got_mem) = stored_ids(clean), stored_ids(data)
    return {"n": kills, "lost": len(set(want) - set(got)), "duplicated": len(got) - len(set(got)),
            "memories_differ": len(set(want_mem) ^ set(got_mem))}


def kill_serve(work: Path, kills: int, rng: random.Random) -> dict:
    data = work / "serve-kill"
    key = make_key(data, "--name", "writer", "--scope", "write", "--chat", "*")
    accepted: set[tuple[str, str]] = set()
    i = 0
    for _ in range(kills):
        server = Server(data).start()
        deadline = time.time() + rng.uniform(1.0, 4.0)
        with httpx.Client(base_url=server.url, headers={"X-API-Key": key}, timeout=10) as client:
            while time.time() < deadline:
                batch = [message(f"s{i % 3}", i + j) for j in range(20)]
                i += 20
                try:
                    r = client.post("/v1/messages", json={"messages": batch, "wait": False})
                    if r.status_code == 202:
                        accepted |= {(m["chat_id"], m["message_id"]) for m in batch}
                except httpx.HTTPError:
                    break
        server.kill()
    server = Server(data).start()  # drains what the killed ones accepted
    time.sleep(1)
    deadline = time.time() + 900  # a waited-for write answers once the whole backlog is processed
    with httpx.Client(base_url=server.url, headers={"X-API-Key": key}, timeout=120) as client:
        while time.time() < deadline:
            try:
                if client.post("/v1/messages", json={"messages": [message("s-end", 0)], "wait": True}).status_code == 202:
                    break
            except httpx.TimeoutException:  # a long backlog on a loaded machine: ask again
                continue
    server.stop()
    got, _ = stored_ids(data)
    return {"n": kills, "accepted": len(accepted), "lost": len(accepted - set(got)),
            "duplicated": len(got) - len(set(got))}


def kill_serve_workers(work: Path, kills: int, rng: random.Random, workers: int = 2) -> dict:
    """``serve --workers`` with a random worker SIGKILLed ``kills`` times while batches are POSTed (each on a
    new connection, so both workers take them); the supervisor restarts it and the other takes processing
    over when the killed one held it. Then a waited-for write, and lost/duplicated against what was accepted."""
    data = work / "serve-workers-kill"
    key = make_key(data, "--name", "writer", "--scope", "write", "--chat", "*")
    accepted: set[tuple[str, str]] = set()
    server = Server(data, workers).start()
    i, killed = 0, []
    try:
        for _ in range(kills):
            deadline = time.time() + rng.uniform(1.0, 4.0)
            while time.time() < deadline:
                batch = [message(f"w{i % 3}", i + j) for j in range(20)]
                i += 20
                try:
                    r = httpx.post(f"{server.url}/v1/messages", json={"messages": batch, "wait": False},
                                   headers={"X-API-Key": key}, timeout=10)  # fmt: skip
                    if r.status_code == 202:
                        accepted |= {(m["chat_id"], m["message_id"]) for m in batch}
                except httpx.HTTPError:
                    pass
            victim = rng.choice(server.pids()[1:])
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)
        deadline = time.time() + 900
        while time.time() < deadline:  # answers once the processing worker consumed the whole backlog
            try:
                r = httpx.post(f"{server.url}/v1/messages", json={"messages": [message("w-end", 0)], "wait": True},
                               headers={"X-API-Key": key}, timeout=120)  # fmt: skip
                if r.status_code == 202:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
    finally:
        server.stop()
    got, _ = stored_ids(data)
    return {"n": kills, "workers": workers, "accepted": len(accepted), "lost": len(accepted - set(got)),
            "duplicated": len(got) - len(set(got))}


def kill_kafka_worker(work: Path, kills: int, rng: random.Random) -> dict:
    """A Faust worker SIGKILLed at random points over a Tansu broker vs a clean run (bench/reliability_kafka.py)."""
    from bench.reliability_kafka import kill_faust_worker

    return kill_faust_worker(work, kills, rng)


# ---- load -------------------------------------------------------------------------------------------

def seed_load_chats(server: Server, key: str) -> None:
    """Something to read during the load test: 80 messages in each of 7 chats, processed."""
    with httpx.Client(base_url=server.url, headers={"X-API-Key": key}, timeout=600) as client:
        for c in range(7):
            batch = {"messages": [message(f"load{c}", i) for i in range(80)], "flush": True}
            client.post("/v1/messages", json=batch).raise_for_status()


async def run_load(server: Server, rps: int, seconds: float, key: str, workers: int | None = None,
                   mode: str | None = "bm25") -> dict:  # fmt: skip
    """Open-loop mixed read/write (4:1) at ``rps`` for ``seconds`` (:mod:`bench.reliability_load`)."""
    from bench.reliability_load import run_load as load

    return await load(server, rps, seconds, key, message, workers=workers, mode=mode)


def load_steps(data: Path, rates: list[int], seconds: float, workers: int, embedder: str | None) -> list[dict]:
    """The load step on a fresh server of its own (``embedder`` None: the default one, whose retrievals
    are asked in the served default mode; ``none``: BM25 retrievals, as in the runs before it had both)."""
    key = make_key(data, "--name", "admin", "--scope", "admin", "--chat", "*")
    server = Server(data, workers, embedder).start()
    try:
        seed_load_chats(server, key)
        mode = "bm25" if embedder == "none" else None
        return [{**asyncio.run(run_load(server, rps, seconds, key, mode=mode)), "embedder": embedder or "default"}
                for rps in rates]  # fmt: skip
    finally:
        server.stop()


# ---- leaks, deletion --------------------------------------------------------------------------------

def app_routes(app) -> list[tuple[str, str]]:
    """Every (method, path) ``app`` serves (HEAD left out), through included routers of any FastAPI."""
    out: set[tuple[str, str]] = set()

    def walk(routes, prefix: str = "") -> None:
        for r in routes:
            inner = getattr(r, "original_router", None)  # FastAPI >= 0.16x keeps included routers whole
            if inner is not None:
                walk(inner.routes, prefix + (getattr(r.include_context, "prefix", "") or ""))
            elif getattr(r, "methods", None):
                out.update((m, prefix + r.path) for m in r.methods if m != "HEAD")

    walk(app.routes)
    return sorted(out)


BODIES = {"/v1/retrieve": {"chat_id": "{c}", "query": "canary"}, "/v1/context": {"chat_id": "{c}", "query": "canary"},
          "/v1/messages": {"messages": [message("{c}", 999)]}, "/ui/chats/{chat_id}/query": {"query": "canary"}}
NO_CHAT = {"/healthz", "/metrics", "/v1/audit", "/ui", "/ui/", "/ui/static/{name}", "/ui/chats", "/openapi.json",
           "/docs", "/docs/oauth2-redirect", "/redoc"}  # no chat named: open without data, admin, or filtered


def chat_endpoints(app) -> list[tuple[str, str, dict | None]]:
    """(method, path with ``{c}`` for the chat, body) for every route of ``app`` that names a chat; a new
    route naming no chat that is not in ``NO_CHAT`` is probed too (and counts as a leak unless it is a 403)."""
    out = []
    for method, path in app_routes(app):
        if path in NO_CHAT:
            continue
        body = BODIES.get(path) if method == "POST" else None
        concrete = path.replace("{chat_id}", "{c}").replace("{message_id}", "m1").replace("{sender}", "zed")
        out.append((method, concrete, body if body is not None or method != "POST" else {}))
    return out


def probe_leaks(server: Server, keys: dict[str, str], chats: int = 12) -> dict:
    admin = {"X-API-Key": keys["admin"]}
    cross_chat = cross_key = probes = 0
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for c in range(chats):
            batch = [message(f"leak{c}", i, f"the secret canary word is canary{c}x{i} for project") for i in range(6)]
            client.post("/v1/messages", json={"messages": batch, "flush": True}, headers=admin)
        for c in range(chats):
            for mode in ("bm25", "routed", "hybrid"):
                r = client.post("/v1/retrieve", headers=admin, json={"chat_id": f"leak{c}", "mode": mode,
                                                                     "query": "what is the secret canary word?"})
                others = [f"canary{o}x" for o in range(chats) if o != c]
                cross_chat += any(o in r.text for o in others)
                probes += 1
        from memstream.api import create_app
        from memstream.settings import Settings

        endpoints = chat_endpoints(create_app(Settings(data_dir=server.data)))
        for method, path, body in endpoints:
            p = path.replace("{c}", "leak1")
            b = json.loads(json.dumps(body).replace("{c}", "leak1")) if body is not None else None
            r = client.request(method, p, json=b, headers={"X-API-Key": keys["leak0"]})
            cross_key += r.status_code != 403 or "canary1x" in r.text
            probes += 1
    return {"probes": probes, "endpoints": len(endpoints), "cross_chat": cross_chat, "cross_key": cross_key}


def deleted_after_replay(work: Path) -> dict:
    data = work / "delete-replay"
    rows = [message("d1", i, f"zebracanary{i} said {i}" if i % 3 == 0 else None) for i in range(60)]
    src = work / "delete-in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert memstream(data, "ingest", str(src), "--embedder", "none").returncode == 0
    assert memstream(data, "delete", "--chat", "d1", "--user", "alice").returncode == 0
    assert memstream(data, "replay", "--yes").returncode == 0
    out = memstream(data, "query", "d1", "zebracanary", "--mode", "bm25", "--json", "--k", "50")
    items = json.loads(out.stdout)["items"]
    with sqlite3.connect(data / "memstream.db") as db:  # and anywhere in the store, not only the top 50
        rows = db.execute("SELECT COUNT(*) FROM docs WHERE text LIKE '%zebracanary%'").fetchone()[0]
    return {"deleted_returned": sum("zebracanary" in it["text"] for it in items) + rows, "backend": "sqlite"}
