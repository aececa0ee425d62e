"""The one decode boundary: bytes/str -> typed models. Everything past it is typed.

A record erased by a deletion keeps its offset but its payload becomes a :class:`Tombstone` (or is empty,
Kafka's null value): :func:`decode` returns a ``Tombstone`` for it, which no stage handles, so it is skipped
rather than dead-lettered (the segmenter ignores anything that is neither a message nor a control).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from language.text import parse_json
from streams.topics import TopicSpec


class DecodeError(ValueError):
    """A payload that does not match its topic's contract; the caller dead-letters it."""


class Tombstone(BaseModel):
    """What is left of an erased record: which chat and which deletion erased it, never its content."""

    model_config = ConfigDict(frozen=True)

    tombstone: Literal[True] = True
    chat_id: str | None = None
    deletion_id: str | None = None


_TOMBSTONE_PREFIX = '{"tombstone":'


def tombstone_value(chat_id: str | None, deletion_id: str | None) -> str:
    """The payload an erased record is rewritten to (starts with ``{"tombstone":``)."""
    return Tombstone(chat_id=chat_id, deletion_id=deletion_id).model_dump_json()


def is_tombstone(payload: str | bytes | None) -> bool:
    """An erased record: a tombstone payload, or no payload at all (a Kafka null value)."""
    if payload is None:
        return True
    text = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else payload
    return not text or text.startswith(_TOMBSTONE_PREFIX)


def encode(model: BaseModel) -> str:
    return model.model_dump_json()


def describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


def decode(spec: TopicSpec, payload: str | bytes) -> BaseModel:
    """Validate ``payload`` against the topic's value types (first match wins); an erased record decodes
    to a :class:`Tombstone` on every topic."""
    text = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else payload
    if is_tombstone(text):
        try:
            return Tombstone.model_validate_json(text) if text else Tombstone()
        except ValidationError as exc:
            raise DecodeError(f"Tombstone invalid: {describe(exc)}") from exc
    if len(spec.value_types) > 1:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DecodeError(f"invalid JSON: {exc.msg} at position {exc.pos}") from exc
        if not isinstance(obj, dict):
            raise DecodeError("payload must be a JSON object")
        if "control" in obj:
            kinds = [t for t in spec.value_types if "control" in t.model_fields]
        else:
            kinds = [t for t in spec.value_types if "control" not in t.model_fields]
        model_type = kinds[0] if kinds else spec.value_types[0]
    else:
        model_type = spec.value_types[0]
    try:
        if spec.read_twice:  # the look-ahead's parse serves its stage too
            return parse_json(model_type, text)
        return model_type.model_validate_json(text)
    except ValidationError as exc:
        raise DecodeError(f"{model_type.__name__} invalid: {describe(exc)}") from exc
