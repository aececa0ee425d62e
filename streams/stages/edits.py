"""Edits and retractions of messages already seen (the segment stage's part; I/O through the store).

A message whose (chat, message id) is stored already is not a new turn: with the same text it changes
nothing; with another text — or ``metadata.retracted`` — it is an edit. The stored message and its turn
take the new text (the old one is kept in ``metadata.edit_history``), and a closed topic holding it is
distilled again with ``edited_message_ids`` set, so the consolidator supersedes what the old text produced
(UPDATE of a changed slot, DELETE of what the new text no longer says). A still-active topic needs nothing
more: it is distilled from the stored messages when it closes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from schemas import ChatMessage, DistillJob, stable_id
from streams.clients import Clients
from streams.stages.io import StageOutput, embed
from streams.topics import DISTILL_JOBS

__all__ = ["apply_edit", "as_edited", "split_edits"]


async def split_edits(
    clients: Clients, msgs: Sequence[ChatMessage]
) -> tuple[list[ChatMessage], list[ChatMessage]]:
    """(messages for the segmenter, edits) of a batch, in order."""
    stored: dict[tuple[str, str], str] = {}
    if msgs:  # the batch's chats in one read
        for old in await clients.store.get_messages_in([(m.chat_id, m.message_id) for m in msgs]):
            stored[(old.chat_id, old.message_id)] = _body(old)
    new: list[ChatMessage] = []
    edits: list[ChatMessage] = []
    for m in msgs:
        key = (m.chat_id, m.message_id)
        if key in stored and stored[key] != _body(m):
            stored[key] = _body(m)
            edits.append(m)
        else:  # new, or re-sent unchanged: the segmenter's own idempotency window decides (redelivery)
            stored.setdefault(key, _body(m))
            new.append(m)
    return new, edits


def as_edited(messages: Sequence[ChatMessage], edited: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``messages`` as this batch's edits leave them (retracted ones dropped): a topic that closes in the
    batch that also edits one of its messages is distilled from the new text, not the old."""
    latest = {(m.chat_id, m.message_id): m for m in edited}
    out = []
    for m in messages:
        e = latest.get((m.chat_id, m.message_id))
        if e is not None:
            m = m.model_copy(update={"text": _body(e)})
        if m.text.strip():
            out.append(m)
    return out


def _body(m: ChatMessage) -> str:
    return "" if m.retracted else m.text


def _edited_at(m: ChatMessage, old: ChatMessage) -> datetime:
    raw = m.metadata.get("edited_at")
    if isinstance(raw, str):
        try:
            at = datetime.fromisoformat(raw.replace("Z", "+00:00"))
            if at.tzinfo is not None:
                return max(at, old.ts)
        except ValueError:
            pass
    return max(m.ts, old.ts)


async def apply_edit(clients: Clients, m: ChatMessage, out: StageOutput) -> bool:
    """Store the new version of ``m`` and re-distil its closed topic; False if the message is unknown."""
    found = await clients.store.get_messages(m.chat_id, [m.message_id])
    if not found:
        return False
    old = found[0]
    at = _edited_at(m, old)
    history = [*old.metadata.get("edit_history", []), {"text": old.text, "replaced_at": at.isoformat()}]
    text = "" if m.retracted else m.text
    new = old.model_copy(
        update={"text": text, "metadata": {**old.metadata, **m.metadata, "edit_history": history}}
    )
    vectors = await embed(clients, [text]) if text.strip() else None
    await clients.store.replace_message(new, None if vectors is None else vectors[0])
    for topic in await clients.store.list_topics(m.chat_id):
        if topic.state != "closed" or m.message_id not in topic.message_ids:
            continue
        messages = await clients.store.get_messages(m.chat_id, topic.message_ids)
        job = DistillJob(
            job_id=stable_id("job", "edit", m.chat_id, topic.topic_id, m.message_id, text),
            chat_id=m.chat_id,
            topic_id=topic.topic_id,
            messages=[x for x in messages if x.text.strip()],
            at=at,
            edited_message_ids=[m.message_id],
        )
        out.emit(DISTILL_JOBS, job.chat_id, job.job_id, job)
    return True
