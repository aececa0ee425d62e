"""Dates stated by the calendar (pure): in full (``March 5, 2024``, ``May 2023``, ``in 2022``, ``2022年``),
or without their year (``March 4``, ``3月4号``) or month (``8号``), which the sentence's tense places
around the day they are read against (:attr:`language.time.anchors.Context.calendar`). Used by the rules
of :mod:`language.time.rules`; may raise ``ValueError`` for no such date (the caller drops it).
"""

from __future__ import annotations

import calendar
import re
from datetime import date

from language.lazy_re import lazy
from language.time.anchors import Context, Resolved
from language.time.words import MONTHS, add_months, clause_of, tense_of

__all__ = ["bare_dom", "capped", "day_alone", "stated", "yearless_day"]

_HALF_YEAR = 183  # days


def capped(year: int, month: int, day: int) -> date:
    """``day`` of the month, capped at its length ("31 June" -> 30); ValueError for no day of any month."""
    if not 1 <= day <= 31:
        raise ValueError(f"day {day} of a month")
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))


def _by_tense(days: list[date], m: re.Match[str], ctx: Context) -> date:
    """Of ``days`` (last, this and next year's or month's), the first not before the calendar day unless the
    date's own clause is past: a date said without its year or month is never before the message unless the
    words say so. In a past clause the latest not after it: in a message, when that is within half a year
    (further back, the past verb is another act's: "航班改签了 11月3号走" said on October 20), else the
    nearest; for a ``yearless_ref`` (a question's day, or a silent chat's last) always, as nothing said is
    after it."""
    ref = ctx.calendar
    a, b = clause_of(ctx.sentence, m.start(), m.end())
    end = m.end() + (
        2 if ctx.sentence.startswith("那天", m.end()) else 0
    )  # "12月20日那天": that day, no tense
    clause = f"{ctx.sentence[a : m.start()]} {ctx.sentence[end:b]}"
    if tense_of(clause, m.start() - a, m.start() - a + 1, ctx.cjk) == "past":
        if ctx.yearless_ref is not None:
            return max((d for d in days if d <= ref), default=days[0])
        back = max((d for d in days if d <= ref), default=days[0])
        return back if (ref - back).days <= _HALF_YEAR else min(days, key=lambda d: abs((d - ref).days))
    return min((d for d in days if d >= ref), default=days[-1])


def yearless_day(month: int, dom: int, m: re.Match[str], ctx: Context) -> Resolved:
    """``March 4``, ``3月4号``: the year by the sentence's tense around the calendar day (``Context.calendar``)."""
    ref = ctx.calendar
    days = [capped(y, month, dom) for y in (ref.year - 1, ref.year, ref.year + 1)]
    return Resolved(_by_tense(days, m, ctx), "absolute")


def bare_dom(dom: int, m: re.Match[str], ctx: Context) -> Resolved | None:
    """``8号`` with no month said: the month by the sentence's tense around the calendar day."""
    if any(
        d.grain == "day" and (0 <= d.start - m.end() <= 1 or 0 <= m.start() - d.end <= 1) for d in ctx.found
    ):
        return None  # "23号周六": the weekday said with it already stands for that day
    ref = ctx.calendar
    days = [capped(d.year, d.month, dom) for d in (add_months(ref, k) for k in (-1, 0, 1))]
    return Resolved(_by_tense(days, m, ctx), "absolute")


def _month_number(name: str) -> int:
    """'March', 'mar', 'Sept' -> 3, 3, 9."""
    return next(i for i, full in enumerate(MONTHS, 1) if full.startswith(name[:3].lower()))


def stated(kind: str, m: re.Match[str], ctx: Context) -> Resolved:
    """A date stated with its month: ``2024-03-05``, ``March 5(, 2024)``, ``May 2023``, ``in 2022``, ``2022年``."""
    g = m.groupdict()
    if kind == "year":
        return Resolved(date(int(g["y"]), 1, 1), "year", explicit=True)
    month = _month_number(g["mon"]) if g.get("mon") else int(g["m"] or 0)
    if kind == "month_year":
        return Resolved(date(int(g["y"]), month, 1), "month", explicit=True)
    if not g["y"]:
        return yearless_day(month, int(g["d"] or 0), m, ctx)
    return Resolved(capped(int(g["y"]), month, int(g["d"] or 0)), "absolute")


# "the 19th" names a day when nothing follows it or a word that cannot be its noun ("the 19th century", "the
# 19th floor" and "the 19th hole" are not days): a clause word, a time of day, an answer
_EN_WORD_AFTER = lazy(r"^\s*(?P<w>[A-Za-z']+)")
_NOT_ITS_NOUN = frozenset(
    "at or and instead then is was works work would will for to in if so but too as with because cause bc ok okay "
    "now rather maybe right still please pls again already it we i you he she they that this the a on by from "
    "until till before after morning afternoon evening night am pm could can should might isn't wasn't "
    "won't doesn't does do did".split()
)


def day_alone(m: re.Match[str], ctx: Context) -> bool:
    """An English day of the month (``the 19th``) said alone, not as an ordinal of a noun."""
    nxt = _EN_WORD_AFTER.match(ctx.sentence[m.end() :])
    return nxt is None or nxt["w"].lower() in _NOT_ITS_NOUN
