"""The time windows a question names, as closed intervals ``[since, until]`` in the asker's zone (pure).

A window is the span of a date the question mentions, grounded by the same rules as a date said in a
message (:func:`language.time.dates.find_dates`): ``yesterday`` / ``昨天`` is a day, ``last week`` / ``上周``
a week (Monday..Sunday), ``last May`` / ``去年五月`` / ``May 2023`` a month, ``in 2022`` / ``前年`` a year,
``2 weeks ago`` / ``两周前`` the week of that day, ``on Friday`` / ``上周五`` a day. Read here only:
``recently`` / ``最近`` (the last 30 days: no date of its own) and a shift before or after a date (``the week
before August 3``: the seven days up to it). When the question states a date (``March 4``, ``May 2023``),
its windows are the stated ones: ``last weekend before April 10`` counts from that date, not from today.
A window counted from today that starts after ``now`` is left out: a question's window is when something
was said, and nothing was said in a day still ahead.

Nothing raises on extreme input: a date out of the ``datetime`` range is never a mention, and windows are
clamped to [0001-01-02, 9999-12-30] UTC (:mod:`language.time.bounds`) so that converting or padding them
(:func:`widen`) cannot overflow.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, tzinfo

from pydantic import BaseModel, ConfigDict

from language.time.bounds import Span, safe, shift
from language.time.dates import find_dates, local_time
from language.time.words import DateMention, add_months

__all__ = ["TimeWindow", "time_windows", "widen"]

_QUIET = timedelta(days=31)  # a chat silent for longer anchors yearless dates at its last activity
_RECENT = re.compile(r"(?i)\brecently\b|\blately\b|\bthese days\b|最近(?!一次)|近来|这段时间")
_SHIFTED = re.compile(r"(?i)\bthe (day|weekend|week|month) (before|after)\s+(?:on\s+)?$")
_SHIFT_SIZE = {"day": timedelta(days=1), "weekend": timedelta(days=3), "week": timedelta(days=7),
               "month": timedelta(days=31)}  # fmt: skip
_TICK = timedelta(microseconds=1)


class TimeWindow(BaseModel):
    model_config = ConfigDict(frozen=True)

    since: datetime
    until: datetime
    label: str


def _start(d: date, tz: tzinfo | None) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=tz)


def _span(mention: DateMention, tz: tzinfo | None) -> Span:
    """The interval a mention stands for: its day, week, weekend, month, season or year."""
    d, grain = mention.day, mention.grain
    if grain in ("day", "absolute") and mention.approx:
        grain, d = "week", d - timedelta(days=d.weekday())  # "2 weeks ago", "a few days ago": that week
    if grain in ("day", "absolute"):
        return _start(d, tz), _start(d, tz) + timedelta(days=1) - _TICK
    if grain in ("week", "weekend"):
        start = _start(d, tz)
        return start, shift(start, timedelta(days=7 if grain == "week" else 2)) - _TICK
    if grain in ("month", "season"):
        last = add_months(d, 3 if grain == "season" else 1) - timedelta(days=1)
        return _start(d.replace(day=1), tz), _start(last, tz) + timedelta(days=1) - _TICK
    return _start(date(d.year, 1, 1), tz), _start(date(d.year, 12, 31), tz) + timedelta(days=1) - _TICK


def _stated(mention: DateMention) -> bool:
    """A date the words state (``March 4``, ``May 2023``, ``2022年``), not one counted from today."""
    return mention.grain == "absolute" or mention.explicit


def time_windows(
    text: str, now: datetime, tz: tzinfo | None = None, *, latest: datetime | None = None
) -> list[TimeWindow]:
    """The windows of the dates ``text`` (a question asked at ``now``, tz-aware) names, in order.

    Local to ``tz`` when given (the asker's zone), else to ``now``'s own zone. A date said without its year
    or month ("March 4", "3月4号", "in July", "8号") is read against ``latest`` (the chat's last activity)
    when the chat has been silent for over a month: asked in November 2026 about a chat that ended in March
    2025, "March 4" is 2025's — the year the chat can remember.
    """
    now = local_time(now, tz)
    if latest is not None and latest.tzinfo is None:
        latest = latest.replace(tzinfo=now.tzinfo)  # a naive time is read in now's zone
    quiet = latest is not None and now - latest > _QUIET
    calendar_day = local_time(latest, now.tzinfo).date() if quiet else now.date()
    mentions = find_dates(text, now, yearless_ref=calendar_day)
    shifted = {id(d): s for d in mentions if (s := _SHIFTED.search(text[: d.start]))}
    inside = [(s.start(), d.start) for d in mentions if (s := shifted.get(id(d)))]
    stated = [d for d in mentions if _stated(d)]
    out: list[TimeWindow] = []
    for d in stated or mentions:  # with a date stated, "last Friday" and "that weekend" are relative to it
        if any(a <= d.start and d.end <= b for a, b in inside):
            continue  # "the week before" of "the week before August 3": the shift below reads it
        span, label = safe(lambda d=d: _span(d, now.tzinfo)), text[d.start : d.end].strip()
        s = shifted.get(id(d))
        if span is not None and s is not None:
            size, before = _SHIFT_SIZE[s[1].lower()], s[2].lower() == "before"
            span = (shift(span[0], -size), span[0]) if before else (span[1], shift(span[1], size))
            label = f"{s.group(0).strip()} {label}"
        if span is not None and (span[0] <= now or _stated(d)):
            out.append(TimeWindow(since=span[0], until=span[1], label=label))
    for m in _RECENT.finditer(text):
        span = safe(lambda: (now - timedelta(days=30), now))
        if span is not None:
            out.append(TimeWindow(since=span[0], until=span[1], label=m.group(0)))
    return out


def widen(window: TimeWindow, *, before: timedelta, after: timedelta) -> TimeWindow:
    """A window padded on both sides: chats mention events some time after (or before) they happen.

    Saturates at the window bounds (0001-01-02 / 9999-12-30 UTC) rather than overflowing.
    """
    since, until = shift(window.since, -before), shift(window.until, after)
    return TimeWindow(since=since, until=until, label=window.label)
