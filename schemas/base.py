"""Shared base for every contract: versioned, frozen, strict about unknown fields."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from schemas.ids import ID_MAX, check_id, check_text  # the contract's checks, pydantic-free

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


Id = Annotated[str, Field(min_length=1, max_length=ID_MAX), AfterValidator(check_id)]
CleanText = Annotated[str, AfterValidator(check_text)]
AwareDatetime = Annotated[datetime, AfterValidator(ensure_aware)]


def to_utc(value: datetime) -> datetime:
    return ensure_aware(value).astimezone(UTC)


