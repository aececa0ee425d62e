"""What kind of value a question asks for, and whether a line states one (pure): a quantity ("how much",
"多少"), a time ("when"), a clock time ("几点") or a day of the week ("星期几"). A newer line that states no value of the asked kind cannot be a newer
statement of the asked value, whatever else it changes: "new account for rent, I switched banks" is no new
rent, "the curry got cancelled" is no new time of anything. Read by the read-time supersession
(:func:`retrieval.router.respond.newest_statements`) to keep such lines from replacing the answer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from language.extract.entities import entity_type, find_entities
from language.lazy_re import lazy
from language.text import text_cache
from language.time.clock import find_clocks
from language.time.dates import find_dates
from language.time.weekdays import WD, WD_ABBR, WD_SHORT
from retrieval.router.scoring import time_mention_spans

__all__ = ["Kind", "asked_kind", "lacks_kind", "states_kind", "time_spans", "value_kinds"]

Kind = Literal["quantity", "time", "clock", "weekday", "place"]
_REF = datetime(2000, 1, 1, tzinfo=UTC)  # where a date is said is all that is read, not which day it is

_QUANTITY = lazy(r"(?i)\bhow (?:much|many|long|far|old|big|often)\b|\bwhat(?:'s| is| are)? the (?:price|cost|fee|rent|"
                 r"total|budget|number|amount)\b|多少|几[个岁号天年月次位块元级本张人]|多大|多久|多长|多远|价格|费用")
_TIME = lazy(r"(?i)\bwhen\b|\bwhat time\b|\bdeadline\b|截止|\b(?:which|what) (?:day|date|evening|night|morning|weekday)\b|什么时候|几点|"
             r"哪天|几号|星期几|周几|哪一天")
# a day of the week, asked and said: a weekly slot's new day is a weekday; a new monthly due date ("每月5号") is
# a time, but no new day of the week for a weekly reminder
_WEEKDAY_Q = lazy(r"(?i)星期几|周几|礼拜几|\b(?:what|which) day of the week\b|\b(?:what|which) weekday\b")
_WEEKDAY_NAMES = rf"\b(?:{WD})s?\b|周[一二三四五六日天末]|星期[一二三四五六日天]"
_WEEKDAY = lazy(rf"(?i){_WEEKDAY_NAMES}|\b(?:{WD_ABBR}|{WD_SHORT})\b|礼拜[一二三四五六日天]|weekend")
_CLOCK = lazy(r"(?i)\bwhat time\b|\bat what hour\b|几点|什么时间点|几时")
# a question about how long or how often counts days and weeks; any other quantity is no time ("19:30-20:30" is
# no new price, "缴费日挪到每月5号" no new rent)
_DURATION = lazy(r"(?i)\bhow (?:long|often)\b|多久|多长|几[天年月周]|(?:how many|多少)\s*(?:days|weeks|months|years|hours|minutes|天|周|个?月|年|小时|分钟)")
_NUMBER = lazy(r"(?i)\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
               r"fifty|hundred|thousand|dozen|half|a couple)\b|[一二两三四五六七八九十百千万半$€£¥￥]")
# a bare ordinal is left to the date reader ("the 8th" is a day, "the 3rd floor" is not)
_DAY = lazy(r"(?i)" + _WEEKDAY_NAMES + r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
            r"[a-z]*\.? \d|\b(?:noon|midnight|morning|evening|tonight|weekend)\b|[上下]午|晚上|早上|中午")


_ORDINAL = lazy(r"\b\d{1,2}(?:st|nd|rd|th)\b")


def _ordinal_dates(text: str) -> list[tuple[int, int]]:
    """The spans of the ordinals that the date reader reads as days ("the 8th", not "the 3rd floor"); it is
    asked only when there is an ordinal (it costs a third of a millisecond a text)."""
    if not _ORDINAL.search(text):
        return []
    return [(d.start, d.end) for d in find_dates(text, _REF) if _ORDINAL.search(text, d.start, d.end)]


# where, or which place or organisation: answered by a named place or organisation (``entities.entity_type``)
_PLACE_Q = lazy(r"(?i)\bwhere\b|\b(?:which|what) (?:city|town|country|venue|place|office|school|hospital|restaurant|"
                r"gym|bar|pub|caf[eé]|hotel|company|firm|shop|store|studio|club|campus|neighbou?rhood|area|suburb)\b|"
                r"哪里|哪儿|在哪|去哪|哪[个家座所间](?:城市|地方|国家|区|学校|医院|店|公司|小区|健身房|餐厅|酒店)?")
_PLACE_TYPES = ("place", "organisation")

_WORD = lazy(r"[A-Za-z]+|\d+")  # words a question names; Chinese keeps its time words (几号, 周六) apart anyway


def asked_kind(question: str) -> Kind | None:
    """The kind of value the question asks for (None: another, or it cannot tell): a clock time ("what time",
    "几点") is a kind of its own, since a new day of a meeting says nothing of its hour."""
    if _CLOCK.search(question):
        return "clock"
    if _WEEKDAY_Q.search(question):
        return "weekday"
    if _TIME.search(question):
        return "time"
    if _QUANTITY.search(question):
        return "quantity"
    if _PLACE_Q.search(question):
        return "place"
    return None


def time_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` names a clock time, a date or a day."""
    return [(c.start, c.end) for c in find_clocks(text)] + time_mention_spans(text) + [
        m.span() for m in _DAY.finditer(text)] + _ordinal_dates(text)


def states_kind(text: str, kind: Kind, asked: str = "") -> bool:
    """Whether ``text`` states a value of ``kind`` (a number; a clock time, a date or a day), other than what
    the question ``asked`` itself names: "april book is Piranesi" states no time of "When is the April
    meeting?", "push april to the 8th" does."""
    said = _values(text, kind, kind == "quantity" and _DURATION.search(asked) is not None)
    if not asked:
        return bool(said)
    if kind == "place":  # a place the question names is not its answer ("Which venue is the Montreal show at?")
        return any(" ".join(sorted(w)) not in asked.casefold() for w in said)
    named = _named(asked)
    return any(not words or not words <= named for words in said)  # a Chinese or symbol value always counts


def lacks_kind(text: str, kind: Kind, asked: str = "") -> bool:
    """``text`` states no value of ``kind`` (other than ``asked`` names). A place is read only where it is named,
    so a line lacks one only when it gives a time instead: "pushed to 8pm" is no new place, "held in room 210"
    may be one."""
    if states_kind(text, kind, asked):
        return False
    return kind != "place" or states_kind(text, "time", asked)


_KINDS: tuple[Kind, ...] = ("time", "quantity")


@text_cache(1 << 13)
def value_kinds(text: str) -> frozenset[Kind]:
    """The kinds of value a line states, a time or an amount (places are read only where named). The
    supersession model reads whether either line of a pair states one: what people change in a chat is mostly
    a time or an amount (leave one chat out on truth-dev, docs/BENCHMARKS.md)."""
    return frozenset(k for k in _KINDS if states_kind(text, k))


@text_cache(1 << 14)
def _values(text: str, kind: Kind, duration: bool) -> tuple[frozenset[str], ...]:
    """The words of each value of ``kind`` in ``text``, read once per text (a chat's questions find many of the
    same items, and ranking reads every candidate): ``duration``, a question about how long or how often,
    whose days and weeks are quantities too."""
    if kind == "quantity":
        times = [] if duration else time_spans(text)
        spans = [m.span() for m in _NUMBER.finditer(text) if not any(a <= m.start() < b for a, b in times)]
    elif kind == "place":
        return tuple(frozenset([name.casefold()]) for name in find_entities(text, frozenset())
                     if entity_type(name, context=text)[0] in _PLACE_TYPES)
    elif kind == "weekday":
        spans = [m.span() for m in _WEEKDAY.finditer(text)]
    else:
        spans = [(c.start, c.end) for c in find_clocks(text)] if kind == "clock" else time_spans(text)
    return tuple(frozenset(w.casefold() for w in _WORD.findall(text[a:b])) for a, b in spans)


@text_cache(1 << 10)
def _named(asked: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(asked))
