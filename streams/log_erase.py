"""Erasing a deleted user's (or chat's) records from the embedded log (``log.db``).

Offsets stay dense and record ids stay (so a redelivered original is still recognised as seen): only the
payload is rewritten, to a tombstone (:func:`streams.codec.tombstone_value`) that every reader skips.

- raw messages: every record of the chat sent by the user (or every record of the chat);
- derived topics (topic segments, distillation jobs and results, memory decisions): every record of the
  chat whose payload carries one of the deleted message ids or texts (or every record of the chat) — they
  are recomputed from raw by a replay, which skips the deleted sender;
- dead letters: rewritten to a dead letter without payload ("erased by deletion"), so listings still work.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from pydantic import ValidationError

from schemas import ChatMessage, DeadLetter
from streams.codec import DecodeError, decode, encode, is_tombstone, tombstone_value
from streams.log import FileLog, Record
from streams.topics import DEAD_LETTERS, DERIVED_TOPICS, RAW_MESSAGES

__all__ = ["erase_in_log", "messages_in", "needles_of", "raw_messages"]

MIN_TEXT_NEEDLE = 8  # shorter texts ("ok", "好的") would match unrelated records


async def raw_messages(log: FileLog, chat_id: str, sender: str | None) -> list[ChatMessage]:
    """The chat's messages in the raw topic (only ``sender``'s unless None), tombstones skipped."""
    return messages_in(await log.keyed(RAW_MESSAGES.name, chat_id), chat_id, sender)


def messages_in(records: Collection[Record], chat_id: str, sender: str | None) -> list[ChatMessage]:
    """The chat's messages among raw ``records`` (only ``sender``'s unless None; every revision of an edited
    message, in order), tombstones and unreadable records skipped."""
    out = []
    for record in records:
        msg = _message(record)
        if msg is not None and msg.chat_id == chat_id and (sender is None or msg.sender == sender):
            out.append(msg)
    return out


def raw_messages_of_records(records: Collection[Record], chat_id: str, sender: str | None) -> list[Record]:
    """The raw records to erase: ``sender``'s messages in the chat, or (None) every live record of it."""
    out = []
    for record in records:
        if is_tombstone(record.value):
            continue
        msg = _message(record)
        if sender is None or (msg is not None and msg.chat_id == chat_id and msg.sender == sender):
            out.append(record)
    return out


def _message(record: Record) -> ChatMessage | None:
    if is_tombstone(record.value):
        return None
    try:
        item = decode(RAW_MESSAGES, record.value)
    except DecodeError:
        return None
    return item if isinstance(item, ChatMessage) else None


def needles_of(message_ids: Collection[str], texts: Collection[str]) -> list[str]:
    """What a payload carrying the deleted messages contains: their ids as JSON strings (quoted, so ``m1``
    does not match ``m10``) and their texts as JSON string content, also once more escaped (a dead letter
    holds the original payload as a string)."""
    once = [json.dumps(m, ensure_ascii=False) for m in message_ids]
    once += [json.dumps(t, ensure_ascii=False)[1:-1] for t in texts if len(t) >= MIN_TEXT_NEEDLE]
    twice = [json.dumps(n, ensure_ascii=False)[1:-1] for n in once]
    return list(dict.fromkeys(n for n in once + twice if n))


def _mentions(value: str, needles: Collection[str]) -> bool:
    return any(n in value for n in needles)


async def erase_in_log(
    log: FileLog,
    chat_id: str,
    sender: str | None,
    message_ids: Collection[str],
    texts: Collection[str],
    deletion_id: str,
    derived_ids: Collection[str] = (),
    all_derived: bool = False,
) -> int:
    """Tombstone the chat's records that hold the deleted messages (``sender`` None: the whole chat);
    a derived record is also erased when it names one of ``derived_ids`` (the deleted memory records,
    the topics that held the messages: a summary's decision carries the topic's entities, not the ids).
    ``all_derived``: every derived record of the chat goes (finishing a deletion a killed process began: the
    records it had already removed no longer say which derived ones quote them; replay derives them again).
    Returns how many records were rewritten."""
    tomb = tombstone_value(chat_id, deletion_id)
    ids = set(message_ids)
    needles = needles_of(sorted(ids), list(texts))
    derived_needles = [*needles, *needles_of(sorted(derived_ids), [])]
    erased = 0
    raw = {}
    for record in await log.keyed(RAW_MESSAGES.name, chat_id):
        if is_tombstone(record.value):
            continue
        msg = _message(record)
        if sender is None or (msg is not None and (msg.sender == sender or msg.message_id in ids)):
            raw[record.offset] = tomb
        elif msg is not None and (untied := msg.untied_from(ids)) is not None:  # another's reply to theirs
            raw[record.offset] = encode(untied)
    for spec in DERIVED_TOPICS:
        # only what every consumer has committed past: the stages after the segmenter do not expect
        # tombstones (the caller drains the pipeline first, so normally that is every record)
        upto = await log.consumed(spec.name)
        doomed = {r.offset: tomb for r in await log.keyed(spec.name, chat_id)
                  if (upto is None or r.offset < upto) and not is_tombstone(r.value)
                  and (sender is None or all_derived or _mentions(r.value, derived_needles))}  # fmt: skip
        erased += await log.rewrite(spec.name, doomed)
    erased += await _erase_dead_letters(log, chat_id, sender, needles, deletion_id)
    # the raw records last: until they are tombstones they are what a deletion killed midway is finished from
    # (its ids and texts find the derived records again)
    erased += await log.rewrite(RAW_MESSAGES.name, raw)
    return erased


async def _erase_dead_letters(
    log: FileLog, chat_id: str, sender: str | None, needles: list[str], deletion_id: str
) -> int:
    quoted_chat = json.dumps(chat_id, ensure_ascii=False)
    chat_needles = [quoted_chat, json.dumps(quoted_chat, ensure_ascii=False)[1:-1]]
    if sender is not None:  # a rejected line of theirs never got a message id into the log or the store
        needles = [*needles, *needles_of([sender], [])]
    rewrite: dict[int, str] = {}
    for key in (chat_id, "-"):
        for record in await log.keyed(DEAD_LETTERS.name, key):
            if is_tombstone(record.value):
                continue
            try:
                dl = DeadLetter.model_validate_json(record.value)
            except ValidationError:
                continue
            ours = dl.chat_id == chat_id or (dl.chat_id is None and _mentions(dl.payload, chat_needles))
            if not ours or not dl.payload or (sender is not None and not _mentions(record.value, needles)):
                continue
            erased = dl.model_copy(update={"payload": "", "error": f"erased by deletion {deletion_id}"})
            rewrite[record.offset] = erased.model_dump_json()
    return await log.rewrite(DEAD_LETTERS.name, rewrite)
