"""Weekdays: their names and chat short forms, and how a weekday said in a message resolves to a day (the
conventions are documented in :mod:`language.time.rules`)."""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

from language.lazy_re import lazy
from language.time.anchors import Context, Resolved, anchor, week_named_weekday
from language.time.clock import find_clocks
from language.time.words import WEEKDAYS, clause_of, tense_of, week_start

__all__ = ["TIME_AFTER", "WD", "WD_ABBR", "WD_ANY", "WD_SHORT", "bare_weekday", "en_weekday", "weekday_index"]

WD = "|".join(WEEKDAYS)
WD_ABBR = r"tues?|thu(?:rs?)?|fri|weds"  # chat short forms that are no other word: "see you thurs", "next tues"
WD_SHORT = r"mon|wed|sat|sun"  # short forms that are also words ("sat down", "the sun"): only beside a day cue
WD_ANY = f"{WD}|{WD_ABBR}|{WD_SHORT}"
TIME_AFTER = r"(?=\s*(?:\d|morning|afternoon|evening|night|noon|arvo|am\b|pm\b))"


def weekday_index(name: str) -> int:
    """Monday = 0 for a weekday's name or chat short form ("thurs", "sat")."""
    return ("mo", "tu", "we", "th", "fr", "sa", "su").index(name[:2].lower())


# the day of the month said next to a weekday: "Thursday the 15th", "Thursday, 15th", "周四15号", "15号周四"
_EN_DOM_AFTER = lazy(r"(?i)^,?\s*(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)\b")
_ZH_DOM_AFTER = lazy(r"^[，,]?\s*(?P<d>\d{1,2})[号日]")
_ZH_DOM_BEFORE = lazy(r"(?<![月\d])(?P<d>\d{1,2})[号日][，,]?\s*$")


def _weekday_with_day(wd: int, m: re.Match[str], ctx: Context) -> date | None:
    """The date a weekday and a day of the month name together, the one nearest the message (a weekday
    never outweighs the number: "Thursday the 15th" is the 15th, whatever the tense around it)."""
    hit = (_ZH_DOM_AFTER if ctx.cjk else _EN_DOM_AFTER).match(ctx.sentence[m.end() :]) or (
        _ZH_DOM_BEFORE.search(ctx.sentence[: m.start()]) if ctx.cjk else None)  # fmt: skip
    if hit is None:
        return None
    dom, ref = int(hit["d"]), ctx.ref
    months = [((ref.year * 12 + ref.month - 1 + k) // 12, (ref.month - 1 + k) % 12 + 1) for k in (-1, 0, 1)]
    days = [date(y, mo, dom) for y, mo in months if 1 <= dom <= calendar.monthrange(y, mo)[1]]
    return min(days, key=lambda d: (d.weekday() != wd, abs((d - ref).days), d < ref)) if days else None


def bare_weekday(wd: int, m: re.Match[str], ctx: Context) -> Resolved:
    with_day = _weekday_with_day(wd, m, ctx)
    if with_day is not None:
        return Resolved(with_day, "day")
    # a bare weekday goes back only when its own clause says so ("we climbed on Friday"), never for a past
    # verb elsewhere in the sentence ("it got moved, Thursday now")
    ref, tense = ctx.ref, tense_of(ctx.sentence, m.start(), m.end(), ctx.cjk, clause_only=True)
    week = anchor(ctx, m, ("week",))
    this_week = week_start(ref)
    if week is not None and not (
        (week.day < this_week and tense == "future") or (week.day > this_week and tense == "past")
    ):
        return Resolved(week.day + timedelta(days=wd), "day", False, week)
    named = week_named_weekday(ctx, m)  # "下周三的聚餐改到周四": that week's Thursday, if the tense allows
    week_of = named.day if named is not None else ctx.week_of  # else the week the conversation just named
    day = week_start(week_of) + timedelta(days=wd) if week_of is not None else None
    if day is not None and (day < ref if tense == "past" else day >= ref):
        return Resolved(day, "day")
    if tense == "past":
        return Resolved(ref - timedelta(days=(ref.weekday() - wd) % 7 or 7), "day")
    ahead = (wd - ref.weekday()) % 7 or (7 if _hour_gone(m, ctx) else 0)
    return Resolved(ref + timedelta(days=ahead), "day")


def _hour_gone(m: re.Match[str], ctx: Context) -> bool:
    """Today's weekday said with a clock time its message is already past ("能不能挪到周日上午十点？" said on a
    Sunday evening, "saturday at 9am then" on a Saturday afternoon): the next one."""
    if ctx.at is None:
        return False
    a, b = clause_of(ctx.sentence, m.start(), m.end())
    return any(c.at < ctx.at for c in find_clocks(ctx.sentence[a:b]))


def en_weekday(which: str, wd: int, m: re.Match[str], ctx: Context) -> date:
    ref = ctx.ref
    if which in ("last", "past"):
        return ref - timedelta(days=(ref.weekday() - wd) % 7 or 7)
    if which == "this":
        day = week_start(ref) + timedelta(days=wd)
        past = tense_of(ctx.sentence, m.start(), m.end(), ctx.cjk) == "past"
        return day + timedelta(days=7) if day < ref and not past else day
    if which == "next":
        return week_start(ref) + timedelta(days=7 + wd)
    return ref + timedelta(days=(wd - ref.weekday()) % 7 or 7)  # coming
