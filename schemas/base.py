"""Shared base for every contract: versioned, frozen, strict about unknown fields."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


class Contract(BaseModel):
    """Base of all event and record models.

    Every model carries ``schema_version`` so a consumer can tell which contract a payload was written
    against; unknown fields are rejected at the decode boundary so typos surface as dead letters.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_version: int = SCHEMA_VERSION


def stable_id(*parts: object, prefix: str = "") -> str:
    """Deterministic id from parts: the same inputs always give the same id (idempotent effects)."""
    digest = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=10).hexdigest()
    return f"{prefix}{digest}"


def ensure_aware(value: datetime) -> datetime:
    """Timestamps must carry a zone; naive ones are rejected rather than guessed."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must include a time zone (e.g. 2024-05-01T10:00:00+08:00 or ...Z)")
    return value


# The input contract for identifiers (chat, message, sender ids), the same on the CLI, the API and Kafka:
# 1-256 characters, no control characters (``\x1f`` separates key parts), no ``/`` (ids are URL path
# segments of the API), no leading/trailing whitespace, valid Unicode (no lone surrogates).
_ID_BAD = re.compile(r"[\x00-\x1f\x7f/]")


def check_text(value: str) -> str:
    """Text must be encodable as UTF-8: a lone surrogate (``"\\ud800"`` in JSON) is rejected."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("contains an unpaired UTF-16 surrogate (invalid Unicode)") from None
    return value


def check_id(value: str) -> str:
    check_text(value)
    if _ID_BAD.search(value):
        raise ValueError("must not contain '/' or control characters")
    if value != value.strip():
        raise ValueError("must not start or end with whitespace")
    return value


Id = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(check_id)]
CleanText = Annotated[str, AfterValidator(check_text)]
AwareDatetime = Annotated[datetime, AfterValidator(ensure_aware)]


def to_utc(value: datetime) -> datetime:
    return ensure_aware(value).astimezone(UTC)


