"""Segmentation commands: ``resegment`` (batch re-segmentation, versions, rollback) and ``topics``.

``register(app)`` adds them to a typer app (``memstream/cli.py`` does).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from memstream.cli_common import DataDir, EmbedderOpt, check_chat, fail, out, run, settings_from

if TYPE_CHECKING:  # loaded when a command runs, not for `memstream --help`
    from agents.config import SegmenterConfig
    from memstream.settings import Settings


def _when(value: str | None, name: str) -> datetime | None:
    """ISO date or date-time; without a zone it is taken as UTC."""
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError as exc:
        raise fail(
            f"{name} {value!r} is not an ISO date or date-time (e.g. 2024-03-04T09:00:00+08:00)"
        ) from exc
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _segmenter(base: SegmenterConfig, pairs: list[str]) -> SegmenterConfig:
    """``base`` with ``KEY=VALUE`` overrides (validated like the settings)."""
    from agents.config import SegmenterConfig

    update: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key.strip() not in SegmenterConfig.model_fields:
            known = ", ".join(sorted(SegmenterConfig.model_fields))
            raise fail(f"--set {pair!r}: expected KEY=VALUE with KEY one of: {known}")
        update[key.strip()] = value.strip()
    try:
        return SegmenterConfig.model_validate({**base.model_dump(), **update})
    except Exception as exc:
        raise fail(f"--set: {exc}") from exc


async def _with_clients(settings: Settings, job, *, embedder: bool = True):
    from memstream.clients import build_clients
    from streams.segmentation_ledger import open_ledger

    clients = await build_clients(settings, **({} if embedder else {"embedder": None}))
    ledger = await open_ledger(settings.data_dir)
    try:
        return await job(clients, ledger)
    finally:
        await ledger.close()
        await clients.close()


def _run(coro):
    from memstream.resegment import SegmentationError

    try:
        return run(coro)
    except SegmentationError as exc:
        raise fail(str(exc)) from exc


def resegment(
    chat: Annotated[str, typer.Option("--chat", help="The chat to re-segment (one chat at a time).",
                                      callback=check_chat)],
    since: Annotated[
        str | None,
        typer.Option(
            help="Start of the range (ISO; no zone = UTC). Topics that overlap the range are taken whole."
        ),
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="End of the range, exclusive (default: the last message).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only report what would change.")] = False,
    rollback: Annotated[
        bool, typer.Option("--rollback", help="Roll back the newest active version.")
    ] = False,
    to: Annotated[
        int | None, typer.Option("--to", help="With --rollback: roll back every version above this one.")
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the chat's segmentation versions.")] = False,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Segmenter setting for this run, KEY=VALUE (repeatable), e.g. --set threshold=1.2."
        ),
    ] = None,
    reason: Annotated[str, typer.Option(help="Why (kept in the versions ledger).")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Re-segment a chat's stored messages with the current segmenter settings as a new version.

    New topics are distilled; summaries of the topics they supersede are hidden; facts are kept.

    Examples:

      memstream resegment --chat team-alpha --since 2024-03-01 --dry-run

      memstream resegment --chat team-alpha --since 2024-03-01 --set threshold=1.2

      memstream resegment --chat team-alpha --list

      memstream resegment --chat team-alpha --rollback [--to 1]
    """
    from memstream import resegment as ops

    if sum([list_, rollback, since is not None]) != 1:
        raise fail("give exactly one of --since (re-segment), --rollback or --list")
    if to is not None and not rollback:
        raise fail("--to goes with --rollback")
    settings = settings_from(data_dir, embedder)
    if list_:
        entries = _run(
            _with_clients(settings, lambda c, led: ops.list_versions(c, led, chat), embedder=False)
        )
        return _print_versions(entries, as_json)
    if rollback:
        report = _run(
            _with_clients(settings, lambda c, led: ops.rollback(c, led, chat, to=to, reason=reason))
        )
        return _print_rollback(report, as_json)
    cfg = _segmenter(settings.segmenter, set_ or [])
    start, end = _when(since, "--since"), _when(until, "--until")
    from memstream.cli_progress import progress_bars as _progress_bars

    progress, close = _progress_bars()

    async def job(c, led):
        try:
            return await ops.resegment(c, led, chat, start, end, cfg=cfg, dry_run=dry_run, reason=reason,
                                       progress=progress)  # fmt: skip
        finally:
            close()

    _print_resegment(_run(_with_clients(settings, job)), as_json)


def _print_resegment(r, as_json: bool) -> None:
    if as_json:
        data = {k: v for k, v in vars(r).items() if k not in ("diff", "stats")}
        data["diff"] = r.diff.model_dump(mode="json")
        out.print_json(json.dumps(data, default=str))
        return
    d = r.diff
    from rich.table import Table  # here, not at import: rich.table slows every command's start-up

    table = Table("change", "old topics", "new topics", "messages", "moved", title=f"chat {escape(r.chat_id)}")
    for c in d.changes:
        if c.kind != "unchanged":
            table.add_row(c.kind, "\n".join(c.old), "\n".join(c.new), str(c.messages), str(c.moved))
    out.print(table)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(d.counts.items()))
    out.print(f"{d.messages} messages: {d.topics_before} topics -> {d.topics_after} ({counts}); "
              f"{d.moved_messages} moved; agreement one-to-one {d.one_to_one:.1f}%, VI {d.vi:.1f}")  # fmt: skip
    if r.skipped_active:
        out.print(f"{r.skipped_active} messages left out: their topic is still active")
    if r.applied:
        out.print(f"[green]version {r.version} applied[/green]: {len(r.created)} new topics, {len(r.superseded)} "
                  f"superseded; {r.summaries_invalidated} summaries/titles hidden, {r.memories_created} "
                  f"memory records written, {r.memories_invalidated} invalidated")  # fmt: skip
    elif not d.changed:
        out.print("nothing changed: no version written")
    else:
        out.print(f"dry run: would write version {r.version}")


def _print_rollback(r, as_json: bool) -> None:
    if as_json:
        out.print_json(json.dumps(vars(r)))
        return
    out.print(f"[green]rolled back version(s) {', '.join(map(str, r.rolled_back))}[/green] of chat {r.chat_id}: "
              f"{r.topics_restored} topics restored, {r.topics_hidden} hidden; {r.records_restored} memory "
              f"records restored, {r.records_hidden} hidden. Current version: {r.current_version}")  # fmt: skip


def _print_versions(entries, as_json: bool) -> None:
    if as_json:
        out.print_json(json.dumps([e.model_dump(mode="json", exclude={"diff"}) for e in entries]))
        return
    from rich.table import Table  # here, not at import: rich.table slows every command's start-up

    table = Table("version", "kind", "status", "range", "new", "superseded", "created", "reason")
    for e in entries:
        span = f"{e.since:%Y-%m-%d %H:%M} … {e.until:%Y-%m-%d %H:%M}" if e.until else (
            f"{e.since:%Y-%m-%d %H:%M} …" if e.since else "")  # fmt: skip
        table.add_row(str(e.version), e.kind, e.status, span, str(len(e.new_topic_ids)),
                      str(len(e.superseded_topic_ids)), f"{e.created_at:%Y-%m-%d %H:%M}",
                      e.rollback_reason or e.reason)  # fmt: skip
    out.print(table)


def topics(
    chat: Annotated[str, typer.Option("--chat", help="The chat.", callback=check_chat)],
    version: Annotated[
        int | None,
        typer.Option(
            "--version", help="Only topics made by this segmentation version, whatever their state."
        ),
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Include merged, superseded and rolled-back topics.")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """List a chat's topics: the current view (active and closed) unless --version or --all."""
    from memstream import resegment as ops
    from memstream.cli_checks import require_chat, require_data

    settings = settings_from(data_dir, "none")
    require_data(settings)

    async def job(c, _):
        await require_chat(c.store, chat, settings)
        if all_:
            return await c.store.list_topics(chat)
        return await ops.topics_view(c, chat, version)

    items = _run(_with_clients(settings, job, embedder=False))
    from rich.table import Table  # here, not at import: rich.table slows every command's start-up

    table = Table("topic", "state", "version", "started", "last active", "messages", "participants")
    for t in items:
        table.add_row(t.topic_id, t.state, str(t.segmentation_version), f"{t.started_at:%Y-%m-%d %H:%M}",
                      f"{t.last_active_at:%Y-%m-%d %H:%M}", str(len(t.message_ids)), ", ".join(t.participants))  # fmt: skip
    out.print(table)


def register(app: typer.Typer) -> typer.Typer:
    """Add ``resegment`` and ``topics`` to ``app`` (once)."""
    names = {c.name for c in app.registered_commands}
    if "resegment" not in names:
        app.command("resegment")(resegment)
    if "topics" not in names:
        app.command("topics")(topics)
    return app
