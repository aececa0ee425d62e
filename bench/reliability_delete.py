"""Deletion under crashes, checked by bytes (``memstream bench reliability``'s deletion steps, or alone:
``python -m bench.reliability_delete --out DIR [--kills 20]``).

- kill_during_delete: a real ``memstream serve`` on a copy of one ingested data dir is sent
  ``DELETE /v1/chats/{chat}/users/{user}`` and SIGKILLed at a random moment after the deletion is in the
  ledger (0-``max_after`` s: anywhere from the first step to after the last); then it is started again, and
  nothing else is asked of it: no delete is sent again. After the restart, the user's canaries must be in no
  answer (export, retrieval) and in no byte of the data dir, and the ledger must hold no pending deletion.
- byte_scan: each delete path (CLI and API, a user and a whole chat) on a fresh copy, no replay, then every
  file of the data dir scanned for the deleted canaries. The Kafka paths the same way, each on its own
  Tansu broker: ``memstream worker`` (Faust; working memory in the local Redis, SQLite store in the data
  dir) processes a shorter chat, is stopped, then ``memstream kafka delete`` (``kafka_*``) or ``memstream
  delete`` with the Kafka log URL (``kafka_plain_*``) runs, and the data dir is scanned.
The chat is generated here (a team planning chat; one member's messages carry canary words no one else
says).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path

import httpx

from bench.reliability import CLI, T0, Server, memstream

CHAT, USER = "crew", "victor"
SENDERS = ("ines", "omar", "petra", "victor", "yusuf")
TOPICS = ("the van rental for the gig", "rehearsal slots at the studio", "the merch order", "who brings the cables",
          "the setlist for Saturday", "splitting the fuel money")  # fmt: skip


def canary(i: int) -> str:
    return f"vq{i:03d}xylo"


def chat_rows(n: int = 240, seed: int = 3) -> list[dict]:
    """A five-person chat; every message of ``USER`` carries a canary word only he writes."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        sender = SENDERS[i % len(SENDERS)] if rng.random() < 0.8 else rng.choice(SENDERS)
        topic = TOPICS[i // 20 % len(TOPICS)]
        text = (f"about {topic}: my code word is {canary(i)} and I can do Thursday after {rng.randint(5, 9)}pm"
                if sender == USER else f"about {topic}: I think we should decide by {rng.choice(['Friday', 'Monday'])}")
        rows.append({"chat_id": CHAT, "message_id": f"m{i}", "sender": sender, "sender_name": sender.title(),
                     "ts": (T0 + timedelta(minutes=3 * i)).isoformat(), "text": text})  # fmt: skip
    return rows


def canaries(rows: list[dict]) -> list[bytes]:
    return [canary(i).encode() for i, r in enumerate(rows) if r["sender"] == USER]


def remnants(data: Path, words: list[bytes]) -> dict[str, int]:
    """Files of the data dir holding any canary (relative path -> how many)."""
    out = {}
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        n = sum(w in raw for w in words)
        if n:
            out[str(path.relative_to(data))] = n
    return out


def ledger(data: Path) -> tuple[int, int]:
    """(deletions in the ledger, of which pending)."""
    try:
        with sqlite3.connect(f"file:{data / 'log' / 'log.db'}?mode=ro", uri=True, timeout=10) as con:
            total = con.execute("SELECT COUNT(*) FROM deletion_ledger").fetchone()[0]
            done = con.execute("SELECT COUNT(*) FROM deletion_done").fetchone()[0]
    except sqlite3.OperationalError:
        return 0, 0
    return total, total - done


def answers_hold(server: Server, words: list[bytes]) -> int:
    """How many of the user's canaries the server's answers still show (export and retrieval)."""
    texts = [httpx.get(f"{server.url}/v1/chats/{CHAT}/export", timeout=60).text]
    for q in ("what is victor's code word?", "when can Victor come?", "the van rental"):
        texts.append(httpx.post(f"{server.url}/v1/retrieve", json={"chat_id": CHAT, "query": q}, timeout=60).text)
    blob = "\n".join(texts).encode()
    return sum(w in blob for w in words)


def template(work: Path) -> tuple[Path, list[bytes]]:
    rows = chat_rows()
    src = work / "crew.jsonl"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    data = work / "template"
    shutil.rmtree(data, ignore_errors=True)
    out = memstream(data, "ingest", str(src), "--embedder", "none")
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return data, canaries(rows)


def _copy(tmpl: Path, dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(tmpl, dest, ignore=shutil.ignore_patterns("*.lock", "served.json"))
    return dest


def kill_during_delete(work: Path, kills: int, rng: random.Random, max_after: float = 0.6) -> dict:
    tmpl, words = template(work)
    runs = []
    for i in range(kills):
        data = _copy(tmpl, work / f"kill-{i}")
        server = Server(data).start()
        sent = threading.Thread(target=_delete_quietly, args=(server,), daemon=True)
        sent.start()
        deadline = time.monotonic() + 60
        while ledger(data)[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.002)
        after = rng.uniform(0, max_after)
        time.sleep(after)
        server.kill()
        pending_at_kill = ledger(data)[1]
        server = Server(data).start()  # nothing else asked: it finishes what is pending before it answers
        try:
            shown = answers_hold(server, words)
        finally:
            server.stop()
        left = remnants(data, words)
        runs.append({"after_s": round(after, 3), "pending_at_kill": pending_at_kill, "pending_after": ledger(data)[1],
                     "answers_with_canary": shown, "files_with_canary": left})  # fmt: skip
        shutil.rmtree(data, ignore_errors=True)
    return {"kills": kills, "killed_midway": sum(r["pending_at_kill"] > 0 for r in runs),
            "remnants": sum(bool(r["files_with_canary"]) or r["answers_with_canary"] > 0 or r["pending_after"] > 0
                            for r in runs),
            "deletes_sent_again": 0, "runs": runs}  # fmt: skip


def _delete_quietly(server: Server) -> None:
    try:
        httpx.delete(f"{server.url}/v1/chats/{CHAT}/users/{USER}", timeout=120)
    except httpx.HTTPError:
        pass  # the server was killed under it


def byte_scan(work: Path) -> dict:
    """{path: {ok, files_with_canary}, remnants}: the embedded paths, then the Kafka ones (:func:`kafka_byte_scan`)."""
    tmpl, words = template(work)
    out = {}
    for path in ("cli_user", "cli_chat", "api_user", "api_chat"):
        data = _copy(tmpl, work / f"scan-{path}")
        user = ["--user", USER] if path.endswith("user") else []
        if path.startswith("cli"):
            res = memstream(data, "delete", "--chat", CHAT, *user)
            ok = res.returncode == 0
        else:
            server = Server(data).start()
            try:
                url = f"{server.url}/v1/chats/{CHAT}" + (f"/users/{USER}" if user else "")
                ok = httpx.delete(url, timeout=120).status_code == 200
            finally:
                server.stop()
        out[path] = {"ok": ok, "files_with_canary": remnants(data, words + _chat_words(user))}
        shutil.rmtree(data, ignore_errors=True)
    out.update(kafka_byte_scan(work / "kafka"))
    out["remnants"] = sum(bool(v.get("files_with_canary")) for v in out.values() if isinstance(v, dict))
    return out


def _chat_words(user: list[str]) -> list[bytes]:
    return [t.encode() for t in TOPICS] if not user else []  # a chat deletion: everyone's words go


# the Kafka delete paths: `memstream kafka delete` (memstream.kafka_replay.delete_data), and `memstream delete`
# with MEMSTREAM_LOG_URL=kafka://… (the embedded delete over the Kafka log)
KAFKA_DELETE = ("kafka", "delete", "--embedder", "none")
KAFKA_PATHS = {"kafka_user": KAFKA_DELETE, "kafka_chat": KAFKA_DELETE,
               "kafka_plain_user": ("delete",), "kafka_plain_chat": ("delete",)}  # fmt: skip


def kafka_byte_scan(work: Path, n: int = 60) -> dict:
    """Each Kafka delete path on its own broker, Redis prefix and data dir: a worker processes ``n``
    messages of the chat, then the path deletes and the data dir is scanned. Skipped without Redis."""
    import redis

    from bench.reliability_kafka import GROUP, REDIS_URL, faust_over_tansu
    from memstream.kafka_admin import produce_file, wait_idle

    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except redis.RedisError as exc:
        return {"kafka_skipped": f"no Redis at {REDIS_URL} for the workers' working memory: {exc}"}
    rows = chat_rows(n)
    src, words = work / "crew.jsonl", canaries(rows)
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    out = {}
    for path, command in KAFKA_PATHS.items():
        data, logs = work / path, work / f"{path}-logs"
        shutil.rmtree(data, ignore_errors=True)
        logs.mkdir(parents=True, exist_ok=True)
        user = ["--user", USER] if path.endswith("user") else []
        with faust_over_tansu(logs, data, data / "memstream.db", batch=16, prefix="bench-erase") as (hosts, worker):
            produce_file(hosts, src, exact_offsets=True)
            worker.start()
            wait_idle(hosts, GROUP, timeout_s=300, poll_s=0.3)
            worker.stop()
            found = remnants(data, words + _chat_words(user))
            done = subprocess.run([*CLI, *command, "--chat", CHAT, *user], env=worker.env, capture_output=True,
                                  text=True)  # fmt: skip
        if done.returncode != 0:
            (logs / "delete.err").write_text(done.stderr, encoding="utf-8")
        out[path] = {"ok": done.returncode == 0, "files_with_canary_before": found,
                     "files_with_canary": remnants(data, words + _chat_words(user))}  # fmt: skip
        shutil.rmtree(data, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    work = a.out / "deletion-work"
    res = {"kill_during_delete": kill_during_delete(work, a.kills, random.Random(a.seed)), "byte_scan": byte_scan(work)}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "reliability_delete.json").write_text(json.dumps(res, indent=1), encoding="utf-8")
    k, b = res["kill_during_delete"], res["byte_scan"]
    print(f"kill during delete: {k['kills']} kills, {k['killed_midway']} midway, {k['remnants']} with remnants")
    print(f"byte scan: {b['remnants']} delete paths with remnants " + json.dumps({p: v for p, v in b.items() if p != 'remnants'}))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
