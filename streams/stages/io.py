"""What every stage adapter shares: its output (records to produce, dead letters) and the decode loop."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from schemas import ChatMessage, DeadLetter, MemoryDecision, stable_id
from streams.clients import Clients
from streams.codec import DecodeError, Tombstone, decode, encode
from streams.log import Produce, Record
from streams.sensitive import SensitivePolicy, screen_records
from streams.topics import DEAD_LETTERS, RAW_MESSAGES, TopicSpec

__all__ = ["StageOutput", "decode_all", "embed", "for_each_item", "is_deleted", "kept_decisions", "sender_deleted",
           "turn_texts"]

log = logging.getLogger("memstream.stages")


@dataclass
class StageOutput:
    produced: list[Produce] = field(default_factory=list)
    dead: int = 0
    processed: int = 0
    metrics: dict[str, float] = field(default_factory=dict)

    def emit(self, spec: TopicSpec, key: str, record_id: str, model) -> None:
        self.produced.append(Produce(spec.name, key, record_id, encode(model)))

    def dead_letter(self, stage: str, record: Record, error: str, chat_id: str | None = None) -> None:
        dl = DeadLetter(
            dead_letter_id=stable_id(stage, record.topic, record.record_id, prefix="dl-"),
            stage=stage,
            topic=record.topic,
            offset=record.offset,
            error=error,
            payload=record.value,
            chat_id=chat_id,
            at=datetime.now(UTC),
        )
        self.emit(DEAD_LETTERS, chat_id or "-", dl.dead_letter_id, dl)
        self.dead += 1
        log.warning("dead-lettered", extra={"stage": stage, "offset": record.offset, "error": error})


def decode_all(spec: TopicSpec, stage: str, records: list[Record], out: StageOutput) -> list:
    """Decoded records; a malformed one is dead-lettered, an erased one (a deletion's tombstone) skipped."""
    items = []
    for record in records:
        try:
            item = decode(spec, record.value)
        except DecodeError as exc:
            out.dead_letter(stage, record, str(exc))
            continue
        if not isinstance(item, Tombstone):
            items.append(item)
    return items


async def for_each_item(
    spec: TopicSpec, stage: str, label: str, records: list[Record], out: StageOutput, handle
) -> None:
    """Decode each record and ``await handle(item)``; a failure dead-letters that record, the rest go on."""
    for record in records:
        for item in decode_all(spec, stage, [record], out):
            try:
                await handle(item)
            except Exception as exc:  # one bad item must not stop the chat
                out.dead_letter(stage, record, f"{label} failed: {exc!r}", getattr(item, "chat_id", None))
                continue
            out.processed += 1


async def embed(clients: Clients, texts: list[str]) -> np.ndarray | None:
    if clients.embedder is None or not texts:
        return None
    return await clients.embedder.embed(texts)


def is_deleted(deleted: Collection[tuple[str, str]], chat_id: str, sender: str | None = None,
               senders: Mapping[str, list[str]] | None = None) -> bool:  # fmt: skip
    """The chat, or this sender in it, is in the deletion ledger ``deleted`` ((chat, sender id | "*")). A
    record's speaker is a display name: it matches a ledgered id case-insensitively ("Ann" for "ann"), or
    through ``senders`` (a distill result's display name -> sender ids: "Tomek Nowak" is ``tomek``)."""
    if (chat_id, "*") in deleted:
        return True
    if sender is None:
        return False
    ids = {sender.casefold(), *(i.casefold() for i in (senders or {}).get(sender, ()))}
    return any(c == chat_id and s.casefold() in ids for c, s in deleted)


def kept_decisions(decisions: list[MemoryDecision], deleted: Collection[tuple[str, str]],
                   senders: Mapping[str, list[str]] | None = None) -> list[MemoryDecision]:  # fmt: skip
    """Of one result's ``decisions``, those whose chat and speaker the deletion ledger ``deleted`` does not
    hold (``senders``: the result's display name -> sender ids): a user deleted while the result was in
    flight gets no record, in either runtime."""
    if not deleted:
        return decisions
    return [d for d in decisions
            if not is_deleted(deleted, d.chat_id, d.record.speaker if d.record else None, senders)]  # fmt: skip


def sender_deleted(deleted: Collection[tuple[str, str]], msg: ChatMessage) -> bool:
    """The message's chat, or its sender (by id) in that chat, is in the deletion ledger ``deleted``: the
    segmenter drops it, and ingest does not keep it (:func:`memstream.ops.withhold`)."""
    return (msg.chat_id, "*") in deleted or (msg.chat_id, msg.sender) in deleted


def turn_texts(records: list[Record], deleted: set[tuple[str, str]], sensitive: SensitivePolicy) -> list[str]:
    """The texts of raw records that the segmenter will embed (for embedding them ahead of it): decodable
    messages with text, screened as it screens them (``sensitive``), not of a chat or sender in the deletion
    ledger ``deleted`` (it drops those)."""
    records = screen_records(records, sensitive)
    msgs = decode_all(RAW_MESSAGES, "segment", records, StageOutput())  # errors: reported by the segmenter
    return [m.text for m in msgs if isinstance(m, ChatMessage) and m.text.strip()
            and not sender_deleted(deleted, m)]  # fmt: skip
