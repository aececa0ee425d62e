"""What a command checks before it reads or deletes a chat's data.

A read (``query``, ``memories``, ``export``, ``topics``, ``dead-letters``): that the data dir holds data, and
that the chat asked about is one of its chats. A typo in ``--data-dir`` or ``--chat`` is then one line
``error: …`` naming what does exist, with exit status 2 — never an empty answer with status 0, and a read
never creates the directory it was pointed at.

A deletion (``delete``): that the chat, or the user in it, was ever seen. Deleting someone who never wrote
there still records the deletion, which withholds their future messages; a typo would do that silently,
so it needs ``--force``.

:func:`missing_data`, :func:`unknown_chat` and :func:`unseen_target` are pure (they word the problem);
:func:`require_data` and :func:`require_chat` are the thin checks the commands call.
"""

from __future__ import annotations

from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING

from memstream.cli_common import fail, run

if TYPE_CHECKING:
    from memstream.settings import Settings

SHOWN_CHATS = 10  # a data dir of thousands of chats is not listed whole on one error line


def missing_data(data_dir: Path, exists: bool, store_file: str) -> str:
    """Why a read has nothing to read: no directory at all, or a directory without a store."""
    if not exists:
        return (f"no data dir at {data_dir} (check --data-dir or MEMSTREAM_DATA_DIR; "
                f"`memstream ingest FILE --data-dir {data_dir}` makes one)")
    return f"{data_dir} holds no memstream data (no {store_file}; ingest into it first: `memstream ingest FILE`)"


def unknown_chat(chat_id: str, chats: list[str], where: str) -> str:
    """``chat_id`` is not among ``chats`` (the chats of ``where``): the ones that exist, the likeliest first."""
    if not chats:
        return f"no chat {chat_id!r} in {where}: it holds no chat yet"
    close = get_close_matches(chat_id, chats, n=3, cutoff=0.6)
    rest = [c for c in chats if c not in close]
    shown = close + rest[: max(0, SHOWN_CHATS - len(close))]
    more = f" and {len(chats) - len(shown)} more" if len(chats) > len(shown) else ""
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"no chat {chat_id!r} in {where}{hint}; its chats: {', '.join(shown)}{more}"


def unseen_target(chat_id: str, user: str | None, chats: list[str], senders: list[str],
                  ledgered: set[tuple[str, str]], where: str) -> str | None:  # fmt: skip
    """Why deleting ``user`` in ``chat_id`` (or the whole chat: ``user`` None) needs ``--force``, else None:
    the chat is not among ``chats`` (of the data dir ``where``), or ``user`` is not among the chat's
    ``senders``. A deletion already in
    the ledger (``ledgered``: ``(chat, sender)``, ``"*"`` for a whole chat) may be run again."""
    if (chat_id, user or "*") in ledgered:
        return None
    if user is None:
        if chat_id in chats:
            return None
        return (unknown_chat(chat_id, chats, where) + "; --force records the deletion anyway (any later "
                f"message of {chat_id!r} will not be kept)")
    if user in senders:
        return None
    close = get_close_matches(user, senders, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    who = f"its senders: {', '.join(senders[:SHOWN_CHATS])}" + (
        f" and {len(senders) - SHOWN_CHATS} more" if len(senders) > SHOWN_CHATS else "")
    return (f"no message of {user!r} in chat {chat_id!r}{hint}; {who if senders else 'it has no message'}; "
            f"--force records the deletion anyway ({user}'s later messages in {chat_id!r} will not be kept)")


async def check_delete(clients, chat_id: str, user: str | None) -> None:
    """Fail (status 2) when :func:`unseen_target` finds the chat or user never seen."""
    chats = await clients.store.chats()
    senders = sorted({m.sender for m in await clients.store.list_messages(chat_id)}) if user is not None else []
    where = str(clients.settings.data_dir)
    why = unseen_target(chat_id, user, chats, senders, await clients.log.deletions(), where)
    if why is not None:
        raise fail(why)


def require_data(settings: Settings) -> None:
    """Fail (status 2) when the embedded store the settings name is not there; a store elsewhere (``es://``)
    is left to :func:`require_chat`."""
    from memstream.clients import sqlite_path

    url = settings.resolved_store_url
    if not url.startswith("sqlite:///"):
        return
    store = sqlite_path(url)
    if not store.exists():
        raise fail(missing_data(settings.data_dir, settings.data_dir.exists(), store.name))


async def require_chat(store, chat_id: str, settings: Settings) -> None:
    """Fail (status 2) when ``store`` holds nothing of ``chat_id``, naming the chats it holds."""
    chats = await store.chats()
    if chat_id not in chats:
        raise fail(unknown_chat(chat_id, chats, str(settings.data_dir)))


def check_chat_on_disk(settings: Settings, chat_id: str) -> None:
    """:func:`require_data` and :func:`require_chat` with a store opened for just this (a server answered,
    so the command has no store of its own)."""
    from memstream.clients import open_store

    require_data(settings)

    async def main() -> None:
        store = await open_store(settings, None)
        try:
            await require_chat(store, chat_id, settings)
        finally:
            await store.close()

    run(main())
