"""Clock times said in a sentence: ``3pm``, ``5:30 pm``, ``at 14:30``, ``at 7 from next week``, ``7 o'clock``, ``noon``, ``下午三点``, ``三点半``, ``十点一刻``.

Without an explicit a.m./p.m. the part of the day said nearby decides (``tonight at 7``, ``明晚…七点`` ->
19:00); with none, a bare 1–6 o'clock is in the afternoon (``三点开会``, ``at 3:30`` -> 15:00, ``3:30``), 7–12
is read as said. Pure; nothing here reads a clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time

from language.lazy_re import lazy
from language.time.words import parse_number

__all__ = ["Clock", "find_clocks"]


@dataclass(frozen=True)
class Clock:
    start: int
    end: int
    at: time


_EN = lazy(
    r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>am|pm|a\.m\.|p\.m\.)(?![a-z])"
    r"|\b(?P<h2>\d{1,2}):(?P<m2>\d{2})\b"
    r"|\bat (?P<h3>\d{1,2})(?: o'clock)?(?=\s*(?:$|[.,!?;)]|tonight|tomorrow|today|this\b|on\b|in the\b|next\b|from\b"
    r"|instead\b|then\b|sharp\b|every\b|each\b|again\b|now\b))"
    r"|\b(?P<h4>\d{1,2}) o'clock\b"
    r"|\b(?P<noon>noon|midday|midnight)\b",
    re.I,
)
_ZH_N = "[零一二两三四五六七八九十]{1,3}"
_ZH = lazy(
    rf"(?P<p>凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|夜里|半夜)?(?P<h>\d{{1,2}}|{_ZH_N})点钟?"
    rf"(?:(?P<half>半)|(?P<q>一刻|三刻)|(?P<m>\d{{1,2}}|{_ZH_N})分?)?(?!建议|意见|原因|要求|看法|内容|理由|想法|问题|注意)"
    r"|(?P<noon>中午|正午)(?![\d零一二两三四五六七八九十])"
)
_PERIODS = [
    (
        lazy(
            r"tonight|this evening|tomorrow night|tomorrow evening|last night|evening|at night|今晚|明晚|昨晚|晚上|傍晚|夜里",
            re.I,
        ),
        "evening",
    ),
    (lazy(r"afternoon|下午", re.I), "afternoon"),
    (lazy(r"morning|凌晨|半夜|早上|早晨|上午|今早|明早", re.I), "morning"),
    (lazy(r"中午|正午", re.I), "noon"),
]
_CLAUSE = lazy(r"[,;!?。，；！？\n]")


def _period_near(sentence: str, start: int, end: int) -> str | None:
    """The part of the day said in the clause around ``sentence[start:end]``, nearest first."""
    left = max((m.end() for m in _CLAUSE.finditer(sentence, 0, start)), default=0)
    right_m = _CLAUSE.search(sentence, end)
    right = right_m.start() if right_m else len(sentence)
    best: tuple[int, str] | None = None
    for pattern, period in _PERIODS:
        for m in pattern.finditer(sentence, left, right):
            if start <= m.start() < end:
                continue
            distance = start - m.end() if m.end() <= start else m.start() - end
            if best is None or distance < best[0]:
                best = (distance, period)
    return best[1] if best else None


def _hour(hour: int, period: str | None) -> int:
    if period in ("evening", "afternoon"):
        return 0 if hour == 12 and period == "evening" else hour + 12 if hour < 12 else hour
    if period == "noon":
        return hour + 12 if hour < 6 else hour
    if period == "morning":
        return 0 if hour == 12 else hour
    return hour + 12 if 1 <= hour <= 6 else hour


def _en_clock(m: re.Match[str], sentence: str) -> time | None:
    if m.group("noon"):
        return time(0, 0) if m.group("noon").lower() == "midnight" else time(12, 0)
    hour = int(m.group("h") or m.group("h2") or m.group("h3") or m.group("h4"))
    minute = int(m.group("m") or m.group("m2") or 0)
    ap = (m.group("ap") or "").lower().replace(".", "")
    if ap:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ap == "pm" else 0)
    elif hour <= 12:
        hour = _hour(hour, _period_near(sentence, m.start(), m.end()))
    return time(hour, minute) if hour < 24 and minute < 60 else None


def _zh_clock(m: re.Match[str], sentence: str) -> time | None:
    if m.group("noon"):
        return time(12, 0)
    hour = parse_number(m.group("h"))
    minute = 30 if m.group("half") else {"一刻": 15, "三刻": 45}.get(m.group("q") or "", 0)
    if m.group("m"):
        minute = parse_number(m.group("m")) or 0
    if hour is None or (
        m.group("h") == "一" and not (m.group("p") or m.group("half") or m.group("q") or m.group("m"))
    ):
        return None  # "快一点", "好一点": a little, not one o'clock
    period_word = m.group("p")
    period = (
        next((p for pattern, p in _PERIODS if pattern.fullmatch(period_word)), None)
        if period_word
        else _period_near(sentence, m.start(), m.end())
    )
    hour = _hour(hour, period) if hour <= 12 else hour
    return time(hour, minute) if hour < 24 and minute < 60 else None


def find_clocks(sentence: str) -> list[Clock]:
    """Every clock time of ``sentence`` with its span, in order."""
    out: list[Clock] = []
    for pattern, read in ((_EN, _en_clock), (_ZH, _zh_clock)):
        for m in pattern.finditer(sentence):
            if any(c.start < m.end() and m.start() < c.end for c in out):
                continue
            at = read(m, sentence)
            if at is not None:
                out.append(Clock(m.start(), m.end(), at))
    return sorted(out, key=lambda c: c.start)
