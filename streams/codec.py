"""The one decode boundary: bytes/str -> typed models. Everything past it is typed."""

from __future__ import annotations

import json

from pydantic import BaseModel, ValidationError

from streams.topics import TopicSpec


class DecodeError(ValueError):
    """A payload that does not match its topic's contract; the caller dead-letters it."""


def encode(model: BaseModel) -> str:
    return model.model_dump_json()


def describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


def decode(spec: TopicSpec, payload: str | bytes) -> BaseModel:
    """Validate ``payload`` against the topic's value types (first match wins)."""
    text = payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else payload
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
        return model_type.model_validate_json(text)
    except ValidationError as exc:
        raise DecodeError(f"{model_type.__name__} invalid: {describe(exc)}") from exc
