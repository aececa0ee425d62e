"""``memstream bench throughput --out DIR``: the pipeline's rates next to the machine's embedding limit.

Writes ``DIR/throughput.json`` (and ``DIR/throughput.png`` with ``--chats-sweep``): raw embedding rate of the
default embedder on the input's texts (``embed_only_msgs_per_s``), embedded ingest with the default embedder and
with none, replay, Kafka + Faust with 1/2/4 workers, routed/hybrid/bm25 latency at LoCoMo size and at
``--large-docs`` documents in one chat, ``memstream query`` wall time, RSS growth per 100k messages, the ratios
and a pass/fail per target of issue 12. Every run that needs a process of its own gets one (ingest, replay,
Kafka workers, the CLI). Other load on the machine is recorded (load average before/after): the rates are
only as clean as the machine was idle.

The input is LoCoMo's turns (the conversations interleaved as live traffic), the first ``--messages``.
"""

from __future__ import annotations

import asyncio
import json
import os
import pstats
import statistics
import tempfile
from pathlib import Path
from typing import Any

# issue 12's acceptance targets: (key in the flat figures, comparison, bound)
TARGETS = {
    "ingest_msgs_per_s >= 800": ("ingest_msgs_per_s", ">=", 800.0),
    "ingest >= 0.8 x embed_only": ("ingest_vs_embed_only", ">=", 0.8),
    "routed p95 <= 15 ms (LoCoMo size)": ("routed_p95_locomo_ms", "<=", 15.0),
    "routed p95 <= 30 ms (large chat)": ("routed_p95_large_ms", "<=", 30.0),
    "kafka (1 worker) >= embedded": ("kafka_1_vs_embedded", ">=", 1.0),
    "cli query <= 1.5 s": ("cli_query_seconds", "<=", 1.5),
}


def judge(flat: dict[str, float | None]) -> dict[str, dict]:
    """Each target with its measured value and pass/fail (None when it was not measured)."""
    out = {}
    for name, (key, op, bound) in TARGETS.items():
        value = flat.get(key)
        ok = None if value is None else (value >= bound if op == ">=" else value <= bound)
        out[name] = {"value": value, "bound": bound, "pass": ok}
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def paired_ratio(pairs: list[dict] | None, key: str = "ratio") -> float | None:
    """The median of the pairs' ratios (``key``; None without a measured pair)."""
    ratios = [p[key] for p in pairs or () if p.get(key) is not None]
    return round(statistics.median(ratios), 3) if ratios else None


def top_stages(profile: Path, n: int = 15) -> list[dict]:
    """The ``n`` functions with the most cumulative time in a cProfile dump, under the repo's packages."""
    stats = pstats.Stats(str(profile))
    rows = []
    for (file, line, func), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        where = file.replace(os.sep, "/")
        if any(f"/{pkg}/" in where for pkg in ("streams", "language", "agents", "retrieval", "backends", "memstream")):
            short = where[where.rfind("/", 0, where.rfind("/")) + 1 :]
            rows.append({"function": f"{short}:{line}({func})", "calls": calls, "tottime_s": round(tottime, 2),
                         "cumtime_s": round(cumtime, 2)})  # fmt: skip
    rows.sort(key=lambda r: -r["cumtime_s"])
    return rows[:n]


EMBED_PASSES = 3  # the model alone, best of this many passes: one pass moved by ~18% between runs (472 / 558)


async def _embed_only(texts: list[str], embedder: str) -> dict:
    """The model's own rate on the ingest's texts: the best of :data:`EMBED_PASSES` (the hardware's limit;
    the ratios against it can only come out lower than against a slow pass)."""
    from bench.throughput_embed import embed_rate, raw_embedder

    rates, _ = await embed_rate(raw_embedder(embedder, 64), texts, repeats=EMBED_PASSES)
    return {**rates, "texts": len(texts), "passes": EMBED_PASSES}


def _retrieval(work: Path, emb_dir: Path, embedder: str, locomo: Path, cfg: dict) -> dict:
    from backends.embed.embedder import CachedEmbedder
    from bench.throughput_embed import locomo_turns, raw_embedder
    from bench.throughput_retrieval import at_locomo_size, at_scale, locomo_questions

    small = asyncio.run(at_locomo_size(emb_dir, embedder, locomo, cfg["questions"]))
    large = None
    if cfg["large_docs"]:
        questions = [q for _, q in locomo_questions(locomo)][: cfg["questions"]]
        model = CachedEmbedder(raw_embedder(embedder, 64)) if embedder != "none" else None
        large = asyncio.run(at_scale(cfg["large_docs"], model, locomo_turns(locomo), questions, work))
    return {"locomo": small, "large": large}


def run_throughput(locomo: Path, out_dir: Path, *, messages: int | None = 2000, embedder: str = "minilm",
                   large_docs: int = 100_000, questions: int = 200, kafka_workers: tuple[int, ...] = (1, 2, 4),
                   cli_runs: int = 3, chats_sweep: bool = False, profile: bool = False, kafka_pairs: int = 3,
                   short: Path | None = None, console: Any = None) -> dict:  # fmt: skip
    """Run everything; write and return throughput.json's content. ``kafka_pairs``: Kafka (1 worker) against
    the embedded runner is judged on the median ratio of this many pairs: the two main runs, then each
    further pair an embedded ingest and a Kafka run right after each other (one run of each can land either
    side of 1 on a busy 2-core box). ``short``: a folder of IRC disentanglement files, whose lines are
    ingested too (``short_messages``: the embedding-only and ingest rates on short IM lines)."""
    from bench.throughput_ingest import input_file, run_child
    from bench.throughput_kafka import kafka_rate
    from bench.throughput_retrieval import cli_query_seconds, locomo_questions, served_cli_query_seconds

    extra_pairs = max(0, kafka_pairs - 1) if 1 in kafka_workers else 0
    steps = 7 + len(kafka_workers) + extra_pairs + int(chats_sweep) - int(embedder == "none") + int(short is not None)
    say = _steps(console.print if console is not None else None, steps)
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = {"messages": messages, "embedder": embedder, "large_docs": large_docs, "questions": questions,
           "kafka_workers": list(kafka_workers), "cli_runs": cli_runs, "kafka_pairs": kafka_pairs}  # fmt: skip
    result: dict[str, Any] = {"config": cfg, "machine": {"cpus": len(os.sched_getaffinity(0)),
                                                          "loadavg_start": list(os.getloadavg())}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="memstream-tput-") as tmp:
        work = Path(tmp)
        data = work / "input.jsonl"
        shape = input_file(locomo, data, messages=messages)
        result["input"] = {"source": str(locomo), **shape}
        texts = [json.loads(line)["text"] for line in data.read_text(encoding="utf-8").splitlines()]
        if embedder != "none":
            say(f"embedding only ({shape['messages']} messages of {shape['chats']} chats) …")
            result["embed_only"] = asyncio.run(_embed_only(texts, embedder))
        say("ingest (default embedder) …")
        emb = result["ingest"] = _ingest_profiled(work, data, embedder, out_dir) if profile else run_child(
            "ingest", work / "emb", embedder, data=data)
        result.update(emb.pop("profile", {}))
        say("ingest (no embedder) …")
        bare = result["ingest_no_embedder"] = run_child("ingest", work / "none", "none", data=data)
        say("replay …")
        result["replay"] = run_child("replay", work / "emb", embedder)
        say("retrieval latency …")
        result["retrieval"] = _retrieval(work, work / "emb", embedder, locomo, cfg)
        first_chat = json.loads(data.read_text(encoding="utf-8").split("\n", 1)[0])["chat_id"]
        chat, question = locomo_questions(locomo, {first_chat})[0]
        say("memstream query (CLI), alone and with a server running …")
        result["cli_query"] = cli_query_seconds(work / "emb", chat, question, runs=cli_runs)
        result["cli_query_served"] = served_cli_query_seconds(work / "emb", chat, question, runs=cli_runs)
        result["kafka"] = {}
        for n in kafka_workers:
            say(f"kafka + faust, {n} worker(s) …")
            result["kafka"][str(n)] = kafka_rate(data, n, embedder)
        pairs = [(emb, result["kafka"].get("1", {}))] if extra_pairs else []
        for i in range(extra_pairs):
            say(f"embedded, then kafka + faust with 1 worker (pair {i + 2} of {kafka_pairs}) …")
            pairs.append((run_child("ingest", work / f"pair-{i}", embedder, data=data), kafka_rate(data, 1, embedder)))
        if pairs:
            result["kafka_1_pairs"] = [_pair(e, k) for e, k in pairs]
        say("memory growth: the ingest, then two more passes in the same process …")
        result["ingest_rss"] = run_child("ingest", work / "rss", embedder, data=data, rss_rounds=2)
        if short is not None:
            say("short messages: embedding only and ingest …")
            result["short_messages"] = _short(short, work, messages, embedder)
        if chats_sweep:
            say("ingest with one chat per session (rate vs. chats) …")
            result["rate_vs_chats"] = _sweep(locomo, work, messages, embedder, shape, emb, bare)
    result["machine"]["loadavg_end"] = list(os.getloadavg())
    say(None)
    _headline(result)
    (out_dir / "throughput.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if result.get("rate_vs_chats"):
        plot(result["rate_vs_chats"], out_dir / "throughput.png")
    return result


def _steps(print_: Any, total: int) -> Any:
    """``say(what)`` announces the next of ``total`` steps with the time so far and a rough ETA (the mean
    step so far); ``say(None)`` reports the end."""
    import time

    start, done = time.perf_counter(), [0]

    def say(what: str | None) -> None:
        if print_ is None:
            return
        took = time.perf_counter() - start
        eta = f", ETA ~{took / done[0] * (total - done[0]):.0f}s" if done[0] and what else ""
        if what is None:
            print_(f"[{total}/{total}] done in {took:.0f}s")
            return
        done[0] += 1
        print_(f"[{done[0]}/{total}] {took:.0f}s{eta}: {what}")

    return say


def _ingest_profiled(work: Path, data: Path, embedder: str, out_dir: Path) -> dict:
    """The default ingest under py-spy (every thread: the model runs off the event loop) when installed,
    else cProfile (the event-loop thread only); the summary goes under ``profile``."""
    import shutil

    from bench.throughput_ingest import run_child
    from bench.throughput_profile import summarise

    if shutil.which("py-spy"):
        raw = out_dir / "ingest.pyspy.txt"
        run = run_child("ingest", work / "emb", embedder, data=data, spy=raw)
        if raw.exists():
            run["profile"] = {"ingest_profile": summarise(raw)}
        return run
    prof = out_dir / "ingest.prof"
    run = run_child("ingest", work / "emb", embedder, data=data, profile=prof)
    if prof.exists():
        run["profile"] = {"ingest_profile_top": top_stages(prof)}
    return run


def _short(irc_dir: Path, work: Path, messages: int | None, embedder: str) -> dict:
    """IM-length lines (IRC) through the same embedded ingest, beside the model's rate on the same lines."""
    from bench.throughput_ingest import run_child, short_input_file

    data = work / "short.jsonl"
    shape = short_input_file(irc_dir, data, messages=messages)
    texts = [json.loads(line)["text"] for line in data.read_text(encoding="utf-8").splitlines()]
    out: dict[str, Any] = {"input": {"source": str(irc_dir), **shape}}
    if embedder != "none":
        out["embed_only"] = asyncio.run(_embed_only(texts, embedder))
    out["ingest"] = run_child("ingest", work / "short", embedder, data=data)
    out["ingest_no_embedder"] = run_child("ingest", work / "short-none", "none", data=data)
    out["ingest_msgs_per_s"] = out["ingest"].get("msgs_per_s")
    out["embed_only_msgs_per_s"] = out.get("embed_only", {}).get("msgs_per_s")
    out["ingest_vs_embed_only"] = ratio(out["ingest_msgs_per_s"], out["embed_only_msgs_per_s"])
    return out


def _sweep(locomo: Path, work: Path, messages: int | None, embedder: str, shape: dict, emb: dict,
           bare: dict) -> list[dict]:  # fmt: skip
    """The same turns as one chat per session (many more, shorter chats): rate with and without embedder."""
    from bench.throughput_ingest import input_file, run_child

    data = work / "sessions.jsonl"
    many = input_file(locomo, data, messages=messages, per_session=True)
    rows = [{"chats": shape["chats"], "embedder": embedder, "msgs_per_s": emb.get("msgs_per_s")},
            {"chats": shape["chats"], "embedder": "none", "msgs_per_s": bare.get("msgs_per_s")}]  # fmt: skip
    for name in (embedder, "none"):
        run = run_child("ingest", work / f"sweep-{name}", name, data=data)
        rows.append({"chats": many["chats"], "embedder": name, "msgs_per_s": run.get("msgs_per_s")})
    return rows


def _headline(r: dict) -> None:
    """The flat keys of the issue, the ratios and the targets, from the detailed results."""
    ingest = r.get("ingest", {}).get("msgs_per_s")
    r["embed_only_msgs_per_s"] = r.get("embed_only", {}).get("msgs_per_s")
    r["ingest_msgs_per_s"] = ingest
    r["ingest_msgs_per_s_no_embedder"] = r.get("ingest_no_embedder", {}).get("msgs_per_s")
    n, secs = r.get("ingest", {}).get("messages"), r.get("replay", {}).get("seconds")
    r["replay_msgs_per_s"] = round(n / secs, 1) if n and secs else None
    r["kafka_msgs_per_s"] = {k: v.get("msgs_per_s") for k, v in r.get("kafka", {}).items()}
    ret = r.get("retrieval", {})
    r["retrieval_ms"] = {size: {m: ret[size][m] for m in ("routed", "hybrid", "bm25")}
                         for size in ("locomo", "large") if ret.get(size)}  # fmt: skip
    r["cli_query_seconds"] = r.get("cli_query", {}).get("median")
    r["cli_query_served_seconds"] = (r.get("cli_query_served") or {}).get("median")  # a `memstream serve` runs
    grow = (r.get("ingest", {}).get("rss_peak_mb", 0) or 0) - (r.get("ingest", {}).get("rss_base_mb", 0) or 0)
    r["rss_growth_mb"] = round(grow, 1)  # peak - base of the run: start-up caches and arenas included
    naive = round(grow / n * 100_000, 1) if n else None
    # the warm process's growth (a run of its own: its extra passes would grow the data dir the others read),
    # else the first run's slope over its second half, which still includes its caches filling
    steady = (r.get("ingest_rss") or {}).get("rss_mb_per_100k_msgs_steady")
    r["rss_mb_per_100k_msgs"] = steady if steady is not None else r.get("ingest", {}).get(
        "rss_mb_per_100k_msgs_marginal", naive)
    flat = {
        "ingest_msgs_per_s": ingest,
        "ingest_vs_embed_only": ratio(ingest, r["embed_only_msgs_per_s"]),
        "routed_p95_locomo_ms": ret.get("locomo", {}).get("routed", {}).get("p95"),
        "routed_p95_large_ms": (ret.get("large") or {}).get("routed", {}).get("p95"),
        "kafka_1_vs_embedded": paired_ratio(r.get("kafka_1_pairs")) or ratio(r["kafka_msgs_per_s"].get("1"), ingest),
        "cli_query_seconds": r["cli_query_seconds"],
    }
    r["ratios"] = {k: flat[k] for k in ("ingest_vs_embed_only", "kafka_1_vs_embedded")}
    # the same ratio in messages per CPU-second (less disturbed by other load), and how many texts the
    # pipeline embeds per message (messages, memory records, graph nodes/edges: embed_only embeds one each)
    emb = r.get("embed_only", {})
    r["ratios"]["ingest_vs_embed_only_cpu"] = ratio(r.get("ingest", {}).get("msgs_per_cpu_s"), emb.get("msgs_per_cpu_s"))
    r["ratios"]["kafka_1_vs_embedded_cpu"] = paired_ratio(r.get("kafka_1_pairs"), "ratio_cpu") or ratio(
        (r.get("kafka", {}).get("1") or {}).get("msgs_per_worker_cpu_s"), r.get("ingest", {}).get("msgs_per_cpu_s"))
    texts = r.get("ingest", {}).get("embedded_texts")
    r["ratios"]["ingest_embedded_texts_per_msg"] = round(texts / n, 2) if texts and n else None
    short = r.get("short_messages") or {}
    if short:  # the same ingest on IM-length lines (IRC), beside the model's rate on them
        r["short_ingest_msgs_per_s"] = short.get("ingest_msgs_per_s")
        r["short_embed_only_msgs_per_s"] = short.get("embed_only_msgs_per_s")
        r["ratios"]["short_ingest_vs_embed_only"] = short.get("ingest_vs_embed_only")
    r["targets"] = judge(flat)


def _pair(embedded: dict, kafka: dict) -> dict:
    """One pair of runs: each rate, their ratio, and the same ratio in messages per CPU-second of the pipeline's
    own processes (the broker not counted: steadier than wall time on a busy machine)."""
    e, k = embedded.get("msgs_per_s"), kafka.get("msgs_per_s")
    cpu = ratio(kafka.get("msgs_per_worker_cpu_s"), embedded.get("msgs_per_cpu_s"))
    return {"embedded": e, "kafka": k, "ratio": ratio(k, e), "ratio_cpu": cpu}


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name in dict.fromkeys(r["embedder"] for r in rows):
        pts = sorted((r["chats"], r["msgs_per_s"]) for r in rows if r["embedder"] == name and r["msgs_per_s"])
        if pts:
            ax.plot(*zip(*pts, strict=True), marker="o", label=f"embedder {name}")
    ax.set_xscale("log")
    ax.set_xlabel("chats in the input (same messages)")
    ax.set_ylabel("ingest messages / s")
    ax.set_title("Embedded ingest rate vs. number of chats")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
