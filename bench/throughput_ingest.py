"""One measured ingest (or replay) in a process of its own, for ``bench throughput``.

    python -m bench.throughput_ingest ingest --data FILE --data-dir DIR --embedder minilm [--profile OUT]
    python -m bench.throughput_ingest replay --data-dir DIR --embedder minilm

Prints one JSON object: messages, wall seconds, msgs_per_s, CPU seconds (this process, all threads), the RSS
once the model is loaded (``rss_base_mb``; the load is outside the clock, ``model_load_s``) and at the end
(peak, ``rss_peak_mb``), and how many distinct texts the data dir's vector cache holds (``embedded_texts``). A process per run keeps one run's
model, caches and heap out of the next one's memory figure. ``--profile`` writes cProfile stats of the run.

:func:`input_file` writes the bench input: LoCoMo turns as JSON Lines, optionally one chat per session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def interleave(chats: list[list[Any]]) -> list[Any]:
    """Several chats' messages in the order live traffic brings them: the first of each, then the second, …"""
    longest = max((len(c) for c in chats), default=0)
    return [c[i] for i in range(longest) for c in chats if i < len(c)]


def input_file(locomo: Path, out: Path, *, messages: int | None = None, per_session: bool = False) -> dict:
    """LoCoMo -> JSON Lines: the conversations interleaved turn by turn (as live traffic of several chats
    would arrive), cut after ``messages``; ``per_session`` makes each session its own chat (more, shorter chats
    from the same turns). Returns {messages, chats}."""
    from memstream.formats import read_locomo

    by_chat: dict[str, list] = {}
    for p in read_locomo(locomo):
        if p.message is not None:
            by_chat.setdefault(p.message.chat_id, []).append(p.message)
    msgs = interleave(list(by_chat.values()))
    if messages:
        msgs = msgs[:messages]
    chats = set()
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for m in msgs:
            if per_session:
                m = m.model_copy(update={"chat_id": f"{m.chat_id}-s{m.metadata.get('session', 0)}"})
            chats.add(m.chat_id)
            fh.write(m.model_dump_json() + "\n")
    return {"messages": len(msgs), "chats": len(chats)}


def shifted(lines: list[str], r: int) -> list[str]:
    """Round ``r`` of the input: the same messages with new ids, ``r + 1`` years later (same chats)."""
    out = []
    for line in lines:
        o = json.loads(line)
        o["message_id"] = f"{o['message_id']}-r{r}"
        o["ts"] = str(int(o["ts"][:4]) + r + 1) + o["ts"][4:]
        out.append(json.dumps(o))
    return out


def short_input_file(irc_dir: Path, out: Path, *, messages: int | None = None) -> dict:
    """IRC disentanglement lines (one chat per file, interleaved line by line) -> JSON Lines: the short
    messages of a busy IM group (mean ~56 characters against LoCoMo's ~138). Returns {messages, chats,
    mean_chars}."""
    from bench.irc_data import read_irc_dir, to_message

    msgs = interleave([[to_message(f, ln) for ln in f.lines] for f in read_irc_dir(irc_dir)])
    msgs = msgs[:messages] if messages else msgs
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for m in msgs:
            fh.write(m.model_dump_json() + "\n")
    mean = sum(len(m.text) for m in msgs) / len(msgs) if msgs else 0.0
    return {"messages": len(msgs), "chats": len({m.chat_id for m in msgs}), "mean_chars": round(mean, 1)}


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    """This process's own RSS high-water mark (VmHWM). ``getrusage(RUSAGE_SELF).ru_maxrss`` is not: Linux
    carries it across fork + exec, so a child of a big bench parent reported the parent's peak."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _run(args: argparse.Namespace) -> dict:
    from backends.embed.base import warm_up
    from memstream.clients import build_clients
    from memstream.ops import ingest, replay
    from memstream.settings import Settings

    settings = Settings(data_dir=args.data_dir, embedder=args.embedder)
    clients = await build_clients(settings, reindex=args.command == "replay")
    load = await warm_up(clients.embedder)  # the model loads outside the clock and the memory baseline
    base = _rss_mb()
    samples: list[tuple[int, float]] = []  # (records consumed by every stage so far, RSS MB)

    def progress(stage: str, n: int, lag: int) -> None:
        samples.append(((samples[-1][0] if samples else 0) + n, _rss_mb()))

    cpu0, t0 = time.process_time(), time.perf_counter()
    steady = None
    try:
        if args.command == "ingest":
            report = await ingest(clients, args.data, progress=progress)
            n = report.read - report.rejected
        else:
            stats = await replay(clients, progress)
            n = stats.processed.get("segmenter", 0)  # the messages (and one flush control per chat)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        if args.command == "ingest" and args.rss_rounds:
            steady = await steady_rss(clients, args.data, args.rss_rounds, args.data_dir)
    finally:
        await clients.close()
    return {"command": args.command, "embedder": args.embedder, "messages": n, "seconds": round(seconds, 3),
            "msgs_per_s": round(n / max(seconds, 1e-9), 1), "cpu_seconds": round(cpu, 3),
            "msgs_per_cpu_s": round(n / max(cpu, 1e-9), 1), "rss_base_mb": round(base, 1),
            "rss_peak_mb": round(_peak_mb(), 1), "rss_mb_per_100k_msgs_marginal": marginal_rss(samples, n),
            "model_load_s": round(load, 2), "embedded_texts": _cached_vectors(args.data_dir / "embed-cache.db"),
            **({"rss_mb_per_100k_msgs_steady": steady} if steady is not None else {})}  # fmt: skip


async def steady_rss(clients: Any, data: Path, rounds: int, work: Path) -> float:
    """RSS growth per 100k messages once the process is warm: after the timed ingest, ``rounds`` more passes of
    the same input into the same chats (new ids, a year later each: :func:`shifted`, as in bench.long_chat), the RSS
    read after each; the least-squares slope over them. The first 2,000 messages fill the process's bounded
    caches, so a slope over them (``rss_mb_per_100k_msgs_marginal``) read ~3x what the process keeps growing by
    (LoCoMo, MiniLM: ~1,450 against ~480 MB per 100k over 12,000 turns, bench.long_chat). The passes repeat the
    texts, so they are embedded from the cache: what grows is what the messages add (store caches, vectors)."""
    from memstream.ops import ingest

    lines = data.read_text(encoding="utf-8").splitlines()
    samples = [(0, _rss_mb())]
    for r in range(rounds):
        part = work.parent / f"{work.name}-rss-round-{r}.jsonl"
        part.write_text("\n".join(shifted(lines, r)) + "\n", encoding="utf-8")
        try:
            await ingest(clients, part)
        finally:
            part.unlink()
        samples.append(((r + 1) * len(lines), _rss_mb()))
    return round(_slope(samples) * 100_000, 1)


def _slope(points: list[tuple[int, float]]) -> float:
    """The least-squares slope of y on x over ``points`` (at least two distinct x), floored at 0."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / max(sum((x - mx) ** 2 for x in xs), 1e-9)
    return max(slope, 0.0)


def marginal_rss(samples: list[tuple[int, float]], messages: int) -> float | None:
    """RSS growth per 100k messages over the second half of the run (least squares of RSS on the records the
    stages consumed, scaled by records per message): what the process keeps growing by once its caches,
    arenas and model buffers are warm, unlike (peak - base) / messages of a short run."""
    if len(samples) < 4 or not messages:
        return None
    total = samples[-1][0]
    half = [(x, y) for x, y in samples if x >= total / 2]
    if len(half) < 2 or half[-1][0] == half[0][0]:
        return None
    return round(_slope(half) * total / messages * 100_000, 1)


def _cached_vectors(path: Path) -> int:
    """How many distinct texts have a vector in the data dir's cache (what the ingest embedded)."""
    import sqlite3

    if not path.exists():
        return 0
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
    finally:
        conn.close()


def run_child(command: str, data_dir: Path, embedder: str, *, data: Path | None = None,
              profile: Path | None = None, spy: Path | None = None, rss_rounds: int = 0,
              timeout: float = 3600) -> dict:  # fmt: skip
    """:func:`main` in a subprocess (same interpreter); its JSON result, or {"error": ...}. ``profile``: cProfile
    stats of the run; ``spy``: py-spy samples of every thread (raw format) when py-spy is installed."""
    cmd = [sys.executable, "-m", "bench.throughput_ingest", command, "--data-dir", str(data_dir),
           "--embedder", embedder]  # fmt: skip
    if data is not None:
        cmd += ["--data", str(data)]
    if profile is not None:
        cmd += ["--profile", str(profile)]
    if rss_rounds:
        cmd += ["--rss-rounds", str(rss_rounds)]
    if spy is not None and shutil.which("py-spy"):
        cmd = [str(shutil.which("py-spy")), "record", "--threads", "--idle", "-r", "50", "-f", "raw", "-o", str(spy),
               "--", *cmd]  # fmt: skip
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "MEMSTREAM_LOG_LEVEL": "WARNING"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-600:]}"}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["ingest", "replay"])
    ap.add_argument("--data", type=Path)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--profile", type=Path, help="write cProfile stats here")
    ap.add_argument("--rss-rounds", type=int, default=0, help="after the timed ingest, this many more passes of "
                    "the input (new ids) for rss_mb_per_100k_msgs_steady")  # fmt: skip
    args = ap.parse_args(argv)
    if args.command == "ingest" and args.data is None:
        ap.error("ingest needs --data")
    if args.profile:
        import cProfile

        prof = cProfile.Profile()
        result = prof.runcall(asyncio.run, _run(args))
        prof.dump_stats(str(args.profile))
    else:
        result = asyncio.run(_run(args))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
