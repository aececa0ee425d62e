"""The input contract's checks of identifiers and text, with no pydantic: :mod:`schemas.base` builds its
``Id`` and ``CleanText`` types from them, and the CLI checks ``--chat`` with :func:`valid_id` without loading
pydantic (a command such as a served ``memstream query`` starts ~0.1 s sooner)."""

from __future__ import annotations

import re

__all__ = ["ID_MAX", "check_id", "check_text", "valid_id"]

# The input contract for identifiers (chat, message, sender ids), the same on the CLI, the API and Kafka:
# 1-256 characters, no control characters (``\x1f`` separates key parts), no ``/`` (ids are URL path
# segments of the API), no leading/trailing whitespace, valid Unicode (no lone surrogates).
ID_MAX = 256
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


def valid_id(value: str) -> str:
    """``value`` if it is an id of the contract (what ``schemas.base.Id`` accepts), else ``ValueError``."""
    if not 1 <= len(value) <= ID_MAX:
        raise ValueError(f"must be 1 to {ID_MAX} characters")
    return check_id(value)
