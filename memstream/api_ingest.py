"""``POST /v1/messages``: a batch is judged message by message, like a line of ``memstream ingest``.

Each message is accepted (new in the log), a duplicate (the same chat, id and text were already there),
dead-lettered with the reason (kept whole in the dead-letter topic; nothing else in the batch is affected) or
withheld: its chat, or its sender in that chat, was deleted, so it is not kept (the pipeline would drop it).
:func:`judge` is pure; :func:`append_batch` is the thin part that writes.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from memstream.formats import Parsed
from memstream.ops import IngestReport, screen, to_records
from schemas import ChatMessage
from streams.codec import describe
from streams.log import Produce
from streams.sensitive import SensitivePolicy
from streams.stages.io import sender_deleted

Status = Literal["accepted", "duplicate", "dead_lettered", "withheld"]


class IngestBatch(BaseModel):
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=5000)
    flush: bool = False  # close the batch's chats' open topics (end of an import) so they are distilled
    wait: bool = True  # answer after the batch is processed (false: as soon as it is in the durable log)


class MessageResult(BaseModel):
    index: int
    chat_id: str | None = None
    message_id: str | None = None
    status: Status
    reason: str | None = None


class IngestAccepted(BaseModel):
    accepted: int  # new or duplicate (in the log either way)
    new: int
    dead_lettered: int = 0
    withheld: int = 0  # of a deleted chat or sender: not kept
    processed: dict[str, int] = Field(default_factory=dict)
    results: list[MessageResult] = Field(default_factory=list)


def _short(value: Any) -> str | None:
    return value[:256].encode("utf-8", "replace").decode() if isinstance(value, str) else None


def judge(items: list[dict[str, Any]]) -> list[Parsed]:
    """Validate every message on its own (a reject keeps its original payload and the reason). The
    sensitive-information policy is applied by :func:`append_batch`, after the deletion ledger."""
    out = []
    for i, item in enumerate(items):
        try:
            out.append(Parsed(message=ChatMessage.model_validate(item), where=f"api:{i}"))
        except ValidationError as exc:
            raw = json.dumps(item, ensure_ascii=False, default=str).encode("utf-8", "replace").decode()
            out.append(Parsed(raw=raw, error=f"message {i}: {describe(exc)}"[:500], where=f"api:{i}"))
    return out


def claimed_chats(items: list[dict[str, Any]]) -> set[str]:
    """The chat ids a batch writes to (as strings), valid or not: the key must reach each of them."""
    return {c for c in (item.get("chat_id") for item in items) if isinstance(c, str)}


WITHHELD = "its chat, or its sender in this chat, was deleted: the message is not kept"


def results_of(items: list[dict[str, Any]], parsed: list[Parsed], flags: list[bool],
               held: list[bool] | None = None) -> list[MessageResult]:  # fmt: skip
    """Per-message results from the append flags of their records (same order as ``items``; ``held``: the
    messages withheld, which have no record and no flag)."""
    results, it = [], iter(flags)
    for i, (item, p) in enumerate(zip(items, parsed, strict=True)):
        if held is not None and held[i]:
            results.append(MessageResult(index=i, chat_id=p.message.chat_id, message_id=p.message.message_id,
                                         status="withheld", reason=WITHHELD))  # fmt: skip
            continue
        new = next(it, True)
        if p.message is None:
            results.append(MessageResult(index=i, chat_id=_short(item.get("chat_id")),
                                         message_id=_short(item.get("message_id")), status="dead_lettered",
                                         reason=p.error))
        else:
            results.append(MessageResult(index=i, chat_id=p.message.chat_id, message_id=p.message.message_id,
                                         status="accepted" if new else "duplicate"))
    return results


async def append_batch(
    log: Any, batch: IngestBatch, parsed: list[Parsed], policy: SensitivePolicy | None = None
) -> IngestAccepted:
    """Append the batch's records in one transaction: one per message (the message, or its dead letter),
    in input order, then the flush controls (see :func:`memstream.ops.to_records`). A message of a deleted
    chat or sender is withheld first (nothing of it is written, not even a dead letter of a message the
    sensitive-information ``policy`` would drop); the policy screens the rest."""
    deleted = await log.deletions() if hasattr(log, "deletions") else set()
    held = [p.message is not None and sender_deleted(deleted, p.message) for p in parsed]
    screened = iter(screen([p for p, h in zip(parsed, held, strict=True) if not h], policy))
    parsed = [p if h else next(screened) for p, h in zip(parsed, held, strict=True)]  # one out per one in
    kept = [p for p, h in zip(parsed, held, strict=True) if not h]
    records: list[Produce] = list(to_records(kept, IngestReport(), flush=batch.flush, source="api"))
    if hasattr(log, "append_each"):
        flags = (await log.append_each(records))[: len(kept)]
    else:  # Kafka: appended; the consumers de-duplicate by record id
        await log.append(records)
        flags = [True] * len(kept)
    results = results_of(batch.messages, parsed, flags, held)
    new = sum(r.status == "accepted" for r in results)
    dead = sum(r.status == "dead_lettered" for r in results)
    withheld = sum(held)
    return IngestAccepted(accepted=len(results) - dead - withheld, new=new, dead_lettered=dead, withheld=withheld,
                          results=results)  # fmt: skip
