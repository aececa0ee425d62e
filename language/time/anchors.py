"""What a date rule resolves against (pure): the :class:`Context` of one sentence, the :class:`Resolved`
result, and the *anchors* a relative expression belongs to — a week, month or year reference next to it
(``next week ... Wednesday``), or a weekday before it that names its week (``下周三 ... 周四``). The rules
themselves are in :mod:`language.time.rules`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, time
from typing import NamedTuple

from language.time.words import WEEKDAYS, DateMention

__all__ = ["ADJACENT", "Context", "Resolved", "anchor", "named_week", "week_named_weekday"]

STOP = re.compile(r"[.!?;。！？；\n]")
ADJACENT = re.compile(r"\s*(?:,\s*)?(?:(?:of|in|on)\s+)?(?:the\s+)?(?:的)?\s*$", re.I)


class Resolved(NamedTuple):
    day: date
    grain: str
    approx: bool = False
    replaces: DateMention | None = None  # an anchor mention (``next week``) this one makes redundant
    explicit: bool = False  # the words state the date in full ("May 2023", "2023年"): nothing to annotate


@dataclass
class Context:
    ref: date  # the message's local date
    sentence: str
    cjk: bool
    found: list[DateMention]  # mentions resolved by earlier rules (anchors for weekdays, days, months)
    week_of: date | None = None  # a day of the week the conversation just named ("下周三…" before "周四可以")
    yearless_ref: date | None = None  # what a date said without its year is read against (default ``ref``)
    at: time | None = None  # the message's local time of day

    @property
    def calendar(self) -> date:
        return self.yearless_ref or self.ref


def anchor(ctx: Context, m: re.Match[str], grains: tuple[str, ...]) -> DateMention | None:
    """The mention of one of ``grains`` right after ``m`` (only ``of``/``in``/spaces between), else the
    nearest one before it in the same sentence (no sentence stop between)."""
    after = [d for d in ctx.found if d.grain in grains and d.start >= m.end()]
    for d in sorted(after, key=lambda d: d.start):
        if ADJACENT.match(ctx.sentence[m.end() : d.start]):
            return d
    before = [d for d in ctx.found if d.grain in grains and d.end <= m.start()]
    for d in sorted(before, key=lambda d: d.end, reverse=True):
        if not STOP.search(ctx.sentence[d.end : m.start()]):
            return d
    return None


WEEK_NAMED = re.compile(rf"^(?:(?:上上|上|下下|下|这|本)(?:个)?(?:周|星期|礼拜)|(?:last|this|next|coming|past)\s+(?:{'|'.join(WEEKDAYS)})\b)",
                         re.I)  # fmt: skip


def week_named_weekday(ctx: Context, m: re.Match[str]) -> DateMention | None:
    """The nearest weekday before ``m`` in the same sentence that names its week (``下周三``, ``next
    Wednesday``; not a bare one): a bare weekday after it is of that week."""
    before = [d for d in ctx.found if d.grain == "day" and d.end <= m.start()
              and WEEK_NAMED.match(ctx.sentence[d.start : d.end])]  # fmt: skip
    for d in sorted(before, key=lambda d: d.end, reverse=True):
        if not STOP.search(ctx.sentence[d.end : m.start()]):
            return d
    return None


def named_week(sentence: str, mentions: list[DateMention]) -> date | None:
    """A day of the last week ``sentence`` names explicitly (``下周三``, ``next Wednesday``, ``next week``),
    for the bare weekdays of the sentences and replies that follow (``周四可以``); None if it names none."""
    for d in sorted(mentions, key=lambda d: d.start, reverse=True):
        if d.grain == "week" or (d.grain == "day" and WEEK_NAMED.match(sentence[d.start : d.end])):
            return d.day
    return None
