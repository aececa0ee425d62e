"""``memstream keys``: create, list and revoke API keys; query the access audit log. ``register(app)``."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from memstream.cli_common import check_chat, fail, run

console = Console(stderr=True)
out = Console()
keys_app = typer.Typer(help="API keys (hashed at rest) scoped to chats and to read/write/delete/admin; the "
                       "access audit log.", no_args_is_help=True)

DataDir = Annotated[Path | None, typer.Option("--data-dir", help="The data dir [env MEMSTREAM_DATA_DIR].")]
SCOPE_HELP = "read | write | delete | admin (repeatable; admin implies the others and reads the audit log)."


def _data_dir(data_dir: Path | None) -> Path:
    from memstream.settings import Settings

    return data_dir if data_dir is not None else Settings().data_dir


def _keystore(data_dir: Path | None, *, create: bool = False):
    """The data dir's key store; only ``keys create`` makes a data dir that is not there."""
    from memstream.cli_checks import missing_data
    from memstream.keys import KeyStore

    where = _data_dir(data_dir)
    if not create and not where.exists():
        raise fail(missing_data(where, False, "keys.db"))
    store = KeyStore(where / "keys.db")
    run(store.open())
    return store


def _fail(msg: str) -> None:
    raise fail(msg)


@keys_app.command("create")
def create(
    name: Annotated[str, typer.Option(help="Who the key is for (shown in the audit log).")],
    scope: Annotated[list[str], typer.Option("--scope", help=SCOPE_HELP)],
    chat: Annotated[list[str] | None, typer.Option("--chat", help="A chat id the key reaches "
                                                   "(repeatable; '*' = every chat).")] = None,
    prefix: Annotated[list[str] | None, typer.Option("--prefix", help="A chat-id prefix the key reaches "
                                                     "(a tenant, e.g. 'acme:'; repeatable).")] = None,
    data_dir: DataDir = None,
) -> None:
    """Create a key and print it once (only its hash is stored)."""
    from memstream.keys import SCOPES

    bad = [s for s in scope if s not in SCOPES]
    if bad:
        _fail(f"unknown scope {bad[0]!r} (known: {', '.join(SCOPES)})")
    store = _keystore(data_dir, create=True)
    try:
        info, token = store.create(name, scope, chat or [], prefix or [])  # type: ignore[arg-type]
    except ValueError as exc:
        _fail(str(exc))
    finally:
        run(store.close())
    console.print(f"created key [bold]{info.key_id}[/bold] ({', '.join(info.scopes)}) for "
                  f"{', '.join(info.chats + [p + '*' for p in info.prefixes])}; store it now, it is not shown again:")
    out.print(token, soft_wrap=True)


@keys_app.command("list")
def list_keys(
    revoked: Annotated[bool, typer.Option("--revoked", help="Include revoked keys.")] = False,
    data_dir: DataDir = None,
) -> None:
    """The keys (never their secrets)."""
    store = _keystore(data_dir)
    try:
        keys = store.list_keys(include_revoked=revoked)
    finally:
        run(store.close())
    from rich.table import Column, Table  # here, not at import: rich.table slows every command's start-up

    # the id is what `keys revoke` takes: never cut, whatever the terminal's width; the rest wraps, never cut
    dates = ("created", "revoked") if revoked else ("created",)
    table = Table(Column("key id", no_wrap=True, min_width=max((len(k.key_id) for k in keys), default=6)),
                  *(Column(h, overflow="fold") for h in ("name", "scopes", "chats", "prefixes")),
                  *(Column(h, no_wrap=True, min_width=10) for h in dates))  # fmt: skip
    for k in keys:
        when = [f"{k.created_at:%Y-%m-%d}", f"{k.revoked_at:%Y-%m-%d}" if k.revoked_at else ""][: len(dates)]
        table.add_row(k.key_id, k.name, ", ".join(k.scopes), "\n".join(k.chats), "\n".join(k.prefixes), *when)
    out.print(table)


@keys_app.command("revoke")
def revoke(key_id: Annotated[str, typer.Argument(help="The key id from `memstream keys list`, or the start of "
                                                 "it that only one key id has.")],
           data_dir: DataDir = None) -> None:  # fmt: skip
    """Revoke a key (a running server stops accepting it within a second)."""
    from memstream.keys import match_key

    store = _keystore(data_dir)
    try:
        keys = store.list_keys(include_revoked=True)
        try:
            key = match_key(key_id, [k for k in keys if k.revoked_at is None])
        except ValueError as exc:
            gone = [k for k in keys if k.revoked_at is not None and k.key_id.startswith(key_id.strip())]
            _fail(f"key {gone[0].key_id} ({gone[0].name}) was revoked on {gone[0].revoked_at:%Y-%m-%d %H:%M}"
                  if len(gone) == 1 else str(exc))  # fmt: skip
        store.revoke(key.key_id)
    finally:
        run(store.close())
    console.print(f"revoked {key.key_id} ({key.name})")


@keys_app.command("audit")
def audit(
    chat: Annotated[str | None, typer.Option("--chat", help="Only this chat.", callback=check_chat)] = None,
    key: Annotated[str | None, typer.Option("--key", help="Only this key id.")] = None,
    action: Annotated[str | None, typer.Option(help="read | write | export | delete | admin")] = None,
    denied: Annotated[bool, typer.Option("--denied", help="Only refused calls.")] = False,
    since: Annotated[str | None, typer.Option(help="ISO time with a zone, e.g. 2024-05-01T00:00:00Z.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many entries (newest first).")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    data_dir: DataDir = None,
) -> None:
    """The access audit log: who (key) read, wrote, exported or deleted which chat, when."""
    from pydantic import ValidationError

    from memstream.audit_log import AuditLog, AuditQuery

    try:
        q = AuditQuery(chat_id=chat, key_id=key, action=action, outcome="denied" if denied else None,
                       since=datetime.fromisoformat(since.replace("Z", "+00:00")) if since else None, limit=limit)
    except (ValidationError, ValueError) as exc:
        _fail(f"bad filter: {str(exc).splitlines()[0]}")
    path = _data_dir(data_dir) / "access-log.db"
    if not path.exists():
        console.print("no access log yet (the API writes it)")
        return
    log = run(AuditLog(path).open())
    try:
        entries = log.query(q)
    finally:
        run(log.close())
    if as_json:
        for e in entries:
            out.print(json.dumps(e.model_dump(mode="json"), ensure_ascii=False), soft_wrap=True)
        return
    from rich.table import Table  # here, not at import: rich.table slows every command's start-up

    table = Table("at", "key", "action", "chat", "endpoint", "outcome")
    for e in entries:
        table.add_row(f"{e.at:%Y-%m-%d %H:%M:%S}", e.key_id, e.action, e.chat_id or "", e.endpoint, e.outcome)
    out.print(table)


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
