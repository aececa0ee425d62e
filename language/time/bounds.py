"""Overflow-proof arithmetic for query time windows (used by :mod:`retrieval.router.timeparse`).

Every window is kept inside [0001-01-02, 9999-12-30] UTC: one day inside the ``datetime`` range, so any zone
conversion (a store's ``astimezone(UTC)``) or padding (:func:`retrieval.router.timeparse.widen`) stays valid.
Pure; no I/O.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

__all__ = ["HIGH", "LOW", "Span", "bounded_int", "clamp", "day_of", "safe", "shift"]

Span = tuple[datetime, datetime]
LOW = datetime(1, 1, 2, tzinfo=UTC)
HIGH = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
_MAX_DIGITS = 9  # no date is that many days away (and int() refuses more than 4300 digits)


def shift(d: datetime, delta: timedelta) -> datetime:
    """``d + delta``, saturating at the bounds instead of overflowing."""
    low, high = LOW.astimezone(d.tzinfo), HIGH.astimezone(d.tzinfo)
    try:
        return min(max(d + delta, low), high)
    except OverflowError:
        return high if delta > timedelta(0) else low


def clamp(span: Span) -> Span | None:
    """``span`` within the bounds; None when nothing of it is left."""
    since, until = span
    since, until = max(since, LOW.astimezone(since.tzinfo)), min(until, HIGH.astimezone(until.tzinfo))
    return (since, until) if since <= until else None


def safe(make: Callable[[], Span]) -> Span | None:
    """The window ``make`` computes, clamped; None when it falls outside the ``datetime`` range."""
    try:
        return clamp(make())
    except (ValueError, OverflowError):
        return None


def bounded_int(digits: str) -> int | None:
    """Digits as an int; None beyond nine digits."""
    return int(digits) if len(digits.lstrip("0")) <= _MAX_DIGITS else None


def day_of(year: int, month: int, day: int) -> int:
    """``day`` capped at the month's length ("31 June" -> 30, "29 Feb 2023" -> 28); ValueError for day 0."""
    if day < 1:
        raise ValueError("day 0 of a month")
    return min(day, calendar.monthrange(year, month)[1])
