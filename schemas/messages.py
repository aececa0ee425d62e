"""Raw chat messages and dead-letter records."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from schemas.base import CleanText, Contract, Id, check_text, ensure_aware

Mention = Annotated[CleanText, Field(min_length=1, max_length=256)]


class ChatMessage(Contract):
    """One message of a group or private chat, as the platform delivered it.

    ``chat_id`` is the isolation boundary: every topic is keyed by it and every query is filtered by it.
    This model is the input contract of every entry point (CLI readers, ``POST /v1/messages``, the Kafka
    raw topic): ids per :data:`schemas.base.Id`, a zoned ``ts``, non-blank ``text`` (only a retraction may
    be empty), bounded names and mentions, valid Unicode everywhere.
    """

    chat_id: Id
    message_id: Id
    sender: Id
    sender_name: Annotated[CleanText, Field(max_length=256)] | None = None
    ts: datetime
    text: Annotated[CleanText, Field(max_length=100_000)]
    reply_to: Id | None = None
    mentions: list[Mention] = Field(default_factory=list, max_length=256)
    chat_type: Literal["group", "private"] = "group"
    platform: Annotated[CleanText, Field(max_length=64)] = "generic"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("ts")
    @classmethod
    def _aware(cls, v: datetime) -> datetime:
        return ensure_aware(v)

    @field_validator("metadata")
    @classmethod
    def _clean_metadata(cls, v: dict[str, Any]) -> dict[str, Any]:
        check_text(repr(v))  # nested strings (and keys) must be valid Unicode too
        return v

    @model_validator(mode="after")
    def _not_blank(self) -> ChatMessage:
        if not self.text.strip() and not self.metadata.get("retracted"):
            raise ValueError("text must not be blank (only a retraction, metadata.retracted, may be empty)")
        return self

    @property
    def key(self) -> str:
        return f"{self.chat_id}\x1f{self.message_id}"

    @property
    def revision_key(self) -> str:
        """The log record id of this version: the same message re-sent with the same text is the same
        record (a no-op); with another text, or retracted, it is a new record (an edit)."""
        body = f"{self.text}\x1f{bool(self.metadata.get('retracted'))}"
        return f"{self.key}\x1f{hashlib.blake2b(body.encode(), digest_size=8).hexdigest()}"

    @property
    def retracted(self) -> bool:
        return bool(self.metadata.get("retracted"))

    @property
    def display_name(self) -> str:
        return self.sender_name or self.sender

    @property
    def parent_id(self) -> str | None:
        """The message this one answers: the explicit ``reply_to``, else the segmenter's inferred reply
        (``metadata["inferred_reply_to"]``, set when the message is stored)."""
        return self.reply_to or self.metadata.get("inferred_reply_to")

    def untied_from(self, deleted: Collection[str]) -> ChatMessage | None:
        """This message with each reply field that names a deleted message replaced by :data:`DELETED_REPLY`
        (None when it names none): a deletion leaves no id of the deleted messages in anyone else's."""
        explicit = self.reply_to in deleted
        inferred = self.metadata.get("inferred_reply_to") in deleted
        if not (explicit or inferred):
            return None
        meta = {**self.metadata, "inferred_reply_to": DELETED_REPLY} if inferred else self.metadata
        return self.model_copy(update={"reply_to": DELETED_REPLY if explicit else self.reply_to, "metadata": meta})


DELETED_REPLY = "deleted"  # what a reply field names once the message it named was deleted


class DeadLetter(Contract):
    """A payload that could not be processed, kept whole with the reason, so nothing is lost."""

    dead_letter_id: str
    stage: str
    topic: str
    offset: int | None = None
    error: str
    payload: str
    chat_id: str | None = None
    at: datetime


class StreamControl(Contract):
    """An in-band control record on the raw topic (kept in the log so replay reproduces it).

    ``flush`` closes every active topic of ``chat_id`` (or of all chats) at event time ``at``: used at the
    end of a finite input such as a file import, so its last topics are distilled.
    """

    control: Literal["flush"]
    chat_id: str | None = None
    at: datetime

    @field_validator("at")
    @classmethod
    def _aware(cls, v: datetime) -> datetime:
        return ensure_aware(v)
