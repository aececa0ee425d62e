"""Relative and absolute date expressions (English and Chinese), resolved against the message's own time.

Nothing here reads a clock: ``yesterday`` said on 2023-05-08 is 2023-05-07 however late the topic is
distilled. Relative expressions are resolved on the message's *local* date, in the zone of its timestamp
(or ``tz`` when given): ``tomorrow`` said at 2024-03-08T23:30-05:00 (a Friday there, Saturday in UTC) is
2024-03-09. The conventions for ``this/next/last Friday``, bare weekdays (``周六``, ``on Friday``), and weekdays
or days of the month anchored to a week or month (``下周我们周三见``, ``next month 5号``) are documented in
:mod:`language.time.rules`; clock times (``下午三点``, ``5:30pm``) in :mod:`language.time.clock`.

Never raises on extreme input: an expression whose date falls outside years 1..9999 (``tomorrow`` said on
9999-12-31, ``999999999 days ago``) is left unresolved.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date, datetime, time, tzinfo

from language.text import has_cjk
from language.time.clock import find_clocks
from language.time.rules import ABSOLUTE_RULES, EN_RULES, TAIL_RULES, ZH_RULES, Context, resolve
from language.time.words import MONTHS, WEEKDAYS, DateMention

__all__ = [
    "MONTHS",
    "WEEKDAYS",
    "ZH_DATE_TAIL",
    "ZH_DATE_WORD",
    "DateMention",
    "annotate_dates",
    "find_dates",
    "find_time",
    "local_time",
    "resolve_when",
]

_DAY_GRAINS = ("day", "absolute", "weekend")
# Every English, absolute and tail rule needs one of these (a digit, or a word the rule spells out: weekday
# names end in "day" and their short forms start with one of three letters, "weekend" holds "week");
# case-insensitive like the rules. A sentence without any
# (most chat lines) has no date, so its ~20 rule scans are skipped. ``tests/unit/agents/test_prechecks.py`` checks it.
_DATE_WORDS = ("day", "week", "month", "year", "night", "tomorrow", "morning", "afternoon", "evening", "spring",
               "summer", "fall", "autumn", "winter", "tue", "thu", "fri", "wed", "mon", "sat", "sun", *MONTHS)  # fmt: skip
_MAY_HAVE_DATE = re.compile(r"\d|" + "|".join(_DATE_WORDS) + "|号", re.I)
_ASCII_DIGIT = re.compile(r"[0-9]")


def _may_have_date(sentence: str) -> bool:
    """``_MAY_HAVE_DATE`` finds something; on ASCII text (where \\d is 0-9 and ignoring case is ASCII case)
    the same test is a few substring checks, several times faster than the alternation."""
    if sentence.isascii():
        low = sentence.lower()
        return any(w in low for w in _DATE_WORDS) or _ASCII_DIGIT.search(sentence) is not None
    return _MAY_HAVE_DATE.search(sentence) is not None


def local_time(ref: datetime, tz: tzinfo | None = None) -> datetime:
    """``ref`` in ``tz`` (default: its own zone); ``ref`` itself when the conversion leaves the datetime range."""
    if tz is None:
        return ref
    try:
        return ref.astimezone(tz)
    except (OverflowError, ValueError):
        return ref


def find_dates(
    sentence: str,
    ref: datetime,
    tz: tzinfo | None = None,
    *,
    week_of: date | None = None,
    yearless_ref: date | None = None,
) -> list[DateMention]:
    """Relative and absolute date expressions of ``sentence``, resolved against ``ref`` (the message time).

    Days are computed on ``ref``'s local date in its own zone, or in ``tz`` when given. A clock time said with
    a day-level expression is attached to it (``DateMention.clock``). ``week_of``: a day of the week the
    conversation just named (:func:`language.time.anchors.named_week`); a bare weekday with no anchor of
    its own is of that week when the tense allows (``下周三聚餐改到周四`` -> reply ``周四可以``).
    ``yearless_ref``: the day a date said without its year or month (``March 4``, ``三月``, ``8号``) is read
    against instead of ``ref``'s, and the last it can be in a past sentence (a question: what was said is
    never after its asking day, nor after a silent chat's last day).
    """
    cjk = has_cjk(sentence)
    if not cjk and not _may_have_date(sentence):
        return []
    found: list[DateMention] = []
    replaced: set[int] = set()
    local = local_time(ref, tz)
    ctx = Context(local.date(), sentence, cjk, found, week_of, yearless_ref, local.time())
    taken: list[tuple[int, int]] = []
    for pattern, kind in (ZH_RULES if cjk else []) + EN_RULES + ABSOLUTE_RULES + TAIL_RULES:
        for m in pattern.finditer(sentence):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            try:
                resolved = resolve(kind, m, ctx)
            except (ValueError, OverflowError):
                resolved = None  # outside years 1..9999, or not a calendar date (Feb 30)
            if resolved is None:
                continue
            season = m.groupdict().get("season")
            found.append(
                DateMention(
                    m.start(),
                    m.end(),
                    resolved.day,
                    resolved.grain,
                    resolved.approx,
                    season.lower() if season else None,
                    explicit=resolved.explicit,
                )
            )
            taken.append((m.start(), m.end()))
            if resolved.replaces is not None:
                replaced.add(id(resolved.replaces))
    mentions = sorted((d for d in found if id(d) not in replaced), key=lambda d: d.start)
    return _with_clocks(sentence, mentions) if mentions else []  # clocks only attach to a mention


def _with_clocks(sentence: str, mentions: list[DateMention]) -> list[DateMention]:
    """Each clock time goes to the nearest day-level mention before it (``明天下午三点``), else after it
    (``at 3pm tomorrow``), with no other date mention in between."""
    out = list(mentions)
    for clock in find_clocks(sentence):
        if any(d.start < clock.end and clock.start < d.end for d in out):
            continue
        before = [i for i, d in enumerate(out) if d.end <= clock.start]
        after = [i for i, d in enumerate(out) if d.start >= clock.end]
        for i in ([before[-1]] if before else []) + ([after[0]] if after else []):
            if out[i].grain in _DAY_GRAINS and out[i].clock is None:
                d = out[i]
                out[i] = replace(d, clock=clock.at)
                break
    return out


def resolve_when(sentence: str, ref: datetime, tz: tzinfo | None = None) -> datetime | None:
    """The first day-level date of ``sentence`` at the clock time said with it (else midnight), in the
    message's zone; a clock time alone is on the message's own local day. None when neither is said."""
    local = local_time(ref, tz)
    mentions = [d for d in find_dates(sentence, ref, tz) if d.grain in _DAY_GRAINS]
    if mentions:
        day, clock = mentions[0].day, mentions[0].clock or time(0, 0)
    else:
        clocks = find_clocks(sentence)
        if not clocks:
            return None
        day, clock = local.date(), clocks[0].at
    return datetime(day.year, day.month, day.day, clock.hour, clock.minute, tzinfo=local.tzinfo)


def annotate_dates(sentence: str, mentions: list[DateMention]) -> str:
    """``sentence`` with the absolute date inserted after each relative expression: ``yesterday (on 2023-05-07)``."""
    cjk = has_cjk(sentence)
    out = sentence
    for mention in sorted(mentions, key=lambda d: d.end, reverse=True):
        label = mention.label(cjk)
        if label:
            end = mention.end + (2 if out[mention.end : mention.end + 2] == "'s" else 0)
            out = f"{out[:end]}{label if cjk else ' ' + label}{out[end:]}"
    return out


def find_time(sentence: str) -> time | None:
    """The first clock time mentioned in ``sentence`` (``3pm``, ``at 14:30``, ``下午3点``, ``十点一刻``), if any."""
    clocks = find_clocks(sentence)
    return clocks[0].at if clocks else None


# ------------------------------------------------------------------------------------- Chinese date words

ZH_DATE_WORD = re.compile(
    r"(?:上上|上|下下|下|这|本)个?(?:周|星期|礼拜)[一二三四五六日天末]?|大?[前昨今明后]天|[去今明前后]年|(?:上|下|这)个月|"
    r"\d{1,2}月\d{1,2}[日号]?|(?:周|星期|礼拜)[一二三四五六日天]|[早晚]上|[上中下]午|刚才|今晚|昨晚|明早|\d+[天周年]前"
)
ZH_DATE_TAIL = re.compile(f"(?:{ZH_DATE_WORD.pattern})$")
