"""Relative and absolute date expressions (English and Chinese), resolved against the message's own time.

Nothing here reads a clock: ``yesterday`` said on 2023-05-08 is 2023-05-07 however late the topic is distilled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from dateutil.relativedelta import relativedelta

from retrieval.text import has_cjk

__all__ = [
    "MONTHS",
    "WEEKDAYS",
    "ZH_DATE_TAIL",
    "ZH_DATE_WORD",
    "DateMention",
    "annotate_dates",
    "find_dates",
    "find_time",
]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = tuple(
    "january february march april may june july august september october november december".split()
)
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
_NUMBER_WORDS = dict(
    zip(
        "a an one two three four five six seven eight nine ten eleven twelve 一 两 二 三 四 五 六 七 八 九 十 几".split(),
        [1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3],
        strict=True,
    )
) | {"a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3}
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11), "winter": (12, 2)}
_EN_NUM = r"(?P<n>\d+|a couple of|a couple|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_ZH_NUM = r"(?P<n>\d+|[一两二三四五六七八九十几])"
_WD = "|".join(WEEKDAYS)
_MONTH_RE = "january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
_EN_FUTURE = re.compile(r"\b(will|'ll|going to|gonna|plan|planning|next|tomorrow|shall|upcoming)\b", re.I)
_ZH_FUTURE = re.compile(r"要|会|打算|准备|计划|将|下周|明天")


@dataclass(frozen=True)
class DateMention:
    """A date expression found in a sentence, resolved against the message time."""

    start: int
    end: int
    day: date
    grain: str  # day | week | weekend | month | year | season | absolute
    approx: bool = False
    season: str | None = None

    def label(self, cjk: bool) -> str | None:
        d = self.day
        if self.grain == "absolute":
            return None
        if cjk:
            return {
                "day": f"({'约' if self.approx else ''}{d.isoformat()})",
                "week": f"({d.isoformat()}当周)",
                "weekend": f"({d.isoformat()}周末)",
                "month": f"({d.year}年{d.month}月)",
                "year": f"({d.year}年)",
                "season": f"({d.year}年{self.season})",
            }[self.grain]
        return {
            "day": f"({'around' if self.approx else 'on'} {d.isoformat()})",
            "week": f"(week of {d.isoformat()})",
            "weekend": f"(weekend of {d.isoformat()})",
            "month": f"(in {MONTHS[d.month - 1].title()} {d.year})",
            "year": f"(in {d.year})",
            "season": f"(in {self.season} {d.year})",
        }[self.grain]


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _en_weekday(which: str, wd: int, ref: date, sentence: str) -> date | None:
    if which in ("last", "past"):
        return ref - timedelta(days=(ref.weekday() - wd) % 7 or 7)
    if which == "this":
        return _week_start(ref) + timedelta(days=wd)
    if which == "next":
        return _week_start(ref) + timedelta(days=7 + wd)
    if which == "coming":
        return ref + timedelta(days=(wd - ref.weekday()) % 7 or 7)
    # Bare "on Friday": only with a clear tense cue.
    if _EN_FUTURE.search(sentence):
        return ref + timedelta(days=(wd - ref.weekday()) % 7 or 7)
    if re.search(r"\b(went|was|were|did|had|got|saw|met|took|came|made|\w+ed)\b", sentence, re.I):
        return ref - timedelta(days=(ref.weekday() - wd) % 7 or 7)
    return None


def _shift(which: str) -> int:
    return {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}[which]


def _season_start(season: str, year: int) -> date:
    return date(year, _SEASONS[season][0], 1)


def _en_season(which: str, season: str, ref: date) -> date:
    start_this = _season_start(season, ref.year)
    if which in ("last", "past"):
        end_m = _SEASONS[season][1]
        # The most recent season of that name that has ended before the reference date.
        year = ref.year if (ref.month > end_m and season != "winter") else ref.year - 1
        return _season_start(season, year)
    if which == "next":
        return start_this if ref < start_this else _season_start(season, ref.year + 1)
    return start_this


def _num(token: str) -> int:
    token = token.lower().strip()
    return int(token) if token.isdigit() else _NUMBER_WORDS.get(token, 1)


_EN_DATE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(the )?day before yesterday\b", re.I), "d-2"),
    (re.compile(r"\b(the )?day after tomorrow\b", re.I), "d+2"),
    (re.compile(r"\b(yesterday|last night)\b", re.I), "d-1"),
    (re.compile(r"\b(today|tonight|this (morning|afternoon|evening))\b", re.I), "d+0"),
    (re.compile(r"\btomorrow\b", re.I), "d+1"),
    (re.compile(rf"\b(?P<w>last|this|next|coming|past) (?P<wd>{_WD})\b", re.I), "weekday"),
    (re.compile(r"\b(?P<w>last|this|next|coming|past) weekend\b", re.I), "weekend"),
    (re.compile(r"\b(?P<w>last|this|next|coming|past|previous) (?P<unit>week|month|year)\b", re.I), "unit"),
    (
        re.compile(r"\b(?P<w>last|this|next|past) (?P<season>spring|summer|fall|autumn|winter)\b", re.I),
        "season",
    ),
    (re.compile(rf"\b{_EN_NUM} (?P<unit>day|week|month|year)s? ago\b", re.I), "ago"),
    (re.compile(rf"\bin {_EN_NUM} (?P<unit>day|week|month|year)s?\b", re.I), "in"),
    # A weekday followed by an explicit date ("Friday March 8", "Friday, 8 March") is that date: leave it to
    # the absolute rules instead of guessing a week from the tense.
    (
        re.compile(
            rf"\b(?:on )?(?P<wd>{_WD})\b(?!,?\s+(?:the\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?(?:{_MONTH_RE})\b)(?!,?\s+\d{{1,2}}[/.-]\d)",
            re.I,
        ),
        "bare_weekday",
    ),
]
_ZH_DATE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"大前天"), "d-3"),
    (re.compile(r"大后天"), "d+3"),
    (re.compile(r"前天"), "d-2"),
    (re.compile(r"后天"), "d+2"),
    (re.compile(r"昨天|昨日|昨晚|昨儿"), "d-1"),
    (re.compile(r"今天|今日|今晚|今早|今儿"), "d+0"),
    (re.compile(r"明天|明日|明晚|明早|明儿"), "d+1"),
    (
        re.compile(r"(?P<w>上上|上|下下|下|这|本)个?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天末])"),
        "zh_weekday",
    ),
    (re.compile(r"(?P<w>上上|上|下下|下|这|本)个?(?:周|星期|礼拜)"), "zh_week"),
    (re.compile(r"(?P<w>上上|上|下下|下|这|本)个月"), "zh_month"),
    (re.compile(r"(?P<y>前|去|今|明|后)年"), "zh_year"),
    (
        re.compile(rf"{_ZH_NUM}(?P<unit>天|周|个星期|个礼拜|个月|年)(?P<dir>前|以前|之前|后|以后|之后)"),
        "zh_offset",
    ),
    (re.compile(r"(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"), "zh_bare_weekday"),
]
_ABSOLUTE_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(?P<y>(?:19|20)\d{2})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"), "iso"),
    (re.compile(r"(?:(?P<y>(?:19|20)\d{2})年)?(?P<m>\d{1,2})月(?P<d>\d{1,2})[日号]"), "iso"),
    (
        re.compile(
            rf"\b(?P<mon>{'|'.join(MONTHS)})\.? (?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:,? (?P<y>(?:19|20)\d{{2}}))?\b",
            re.I,
        ),
        "md",
    ),
    (
        re.compile(
            rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<mon>{'|'.join(MONTHS)})(?:,? (?P<y>(?:19|20)\d{{2}}))?\b",
            re.I,
        ),
        "md",
    ),
]
_ZH_OFFSET_UNIT = {
    "天": "day",
    "周": "week",
    "个星期": "week",
    "个礼拜": "week",
    "个月": "month",
    "年": "year",
}
_ZH_SHIFT = {"上上": -2, "上": -1, "下下": 2, "下": 1, "这": 0, "本": 0}
_ZH_YEAR = {"前": -2, "去": -1, "今": 0, "明": 1, "后": 2}


def _resolve(kind: str, m: re.Match[str], ref: date, sentence: str) -> tuple[date, str, bool] | None:
    g = m.groupdict()
    if kind.startswith("d") and kind[1] in "+-":
        return ref + timedelta(days=int(kind[1:])), "day", False
    if kind == "weekday":
        return _en_weekday(g["w"].lower(), WEEKDAYS.index(g["wd"].lower()), ref, sentence), "day", False
    if kind == "bare_weekday":
        day = _en_weekday("", WEEKDAYS.index(g["wd"].lower()), ref, sentence)
        return (day, "day", False) if day else None
    if kind == "weekend":
        which = g["w"].lower()
        offset = -2 if which in ("last", "past") else 5 + 7 * _shift(which)
        return _week_start(ref) + timedelta(days=offset), "weekend", False
    if kind == "unit":
        unit, k = g["unit"].lower(), _shift(g["w"].lower())
        if unit == "week":
            return _week_start(ref) + timedelta(days=7 * k), "week", False
        if unit == "month":
            return ref.replace(day=1) + relativedelta(months=k), "month", False
        return date(ref.year + k, 1, 1), "year", False
    if kind == "season":
        return _en_season(g["w"].lower(), g["season"].lower(), ref), "season", False
    if kind in ("ago", "in", "zh_offset"):
        n = _num(g["n"])
        unit = _ZH_OFFSET_UNIT[g["unit"]] if kind == "zh_offset" else g["unit"].lower()
        sign = -1 if kind == "ago" or (kind == "zh_offset" and "前" in g["dir"]) else 1
        if unit in ("day", "week"):
            approx = unit == "week" or g["n"].lower() in ("a few", "few", "several", "几")
            return ref + timedelta(days=sign * n * (7 if unit == "week" else 1)), "day", approx
        if unit == "month":
            return ref.replace(day=1) + relativedelta(months=sign * n), "month", False
        return date(ref.year + sign * n, 1, 1), "year", False
    if kind == "zh_weekday":
        k = _ZH_SHIFT[g["w"]]
        if g["wd"] == "末":
            return _week_start(ref) + timedelta(days=5 + 7 * k), "weekend", False
        return _week_start(ref) + timedelta(days=7 * k + _ZH_WEEKDAY[g["wd"]]), "day", False
    if kind == "zh_week":
        return _week_start(ref) + timedelta(days=7 * _ZH_SHIFT[g["w"]]), "week", False
    if kind == "zh_month":
        return ref.replace(day=1) + relativedelta(months=_ZH_SHIFT[g["w"]]), "month", False
    if kind == "zh_year":
        return date(ref.year + _ZH_YEAR[g["y"]], 1, 1), "year", False
    if kind == "zh_bare_weekday":
        wd = _ZH_WEEKDAY[g["wd"]]
        if _ZH_FUTURE.search(sentence):
            return ref + timedelta(days=(wd - ref.weekday()) % 7 or 7), "day", False
        if "了" in sentence or "过" in sentence:
            return ref - timedelta(days=(ref.weekday() - wd) % 7 or 7), "day", False
        return None
    return _resolve_absolute(g, ref)


def _resolve_absolute(g: dict[str, str | None], ref: date) -> tuple[date, str, bool] | None:
    month = MONTHS.index(g["mon"].lower()) + 1 if g.get("mon") else int(g["m"] or 0)
    try:
        return date(int(g["y"] or ref.year), month, int(g["d"] or 0)), "absolute", False
    except ValueError:
        return None


def find_dates(sentence: str, ref: datetime) -> list[DateMention]:
    """Relative and absolute date expressions of ``sentence``, resolved against ``ref`` (the message time)."""
    ref_day = ref.date()
    rules = (_ZH_DATE_RULES if has_cjk(sentence) else []) + _EN_DATE_RULES + _ABSOLUTE_RULES
    found: list[DateMention] = []
    taken: list[tuple[int, int]] = []
    for pattern, kind in rules:
        for m in pattern.finditer(sentence):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            resolved = (
                _resolve(kind, m, ref_day, sentence)
                if kind not in ("iso", "md")
                else _resolve_absolute(m.groupdict(), ref_day)
            )
            if resolved is None:
                continue
            day, grain, approx = resolved
            season = m.group("season").lower() if "season" in m.groupdict() and m.group("season") else None
            if kind == "season" and season:
                grain = "season"
            found.append(DateMention(m.start(), m.end(), day, grain, approx, season))
            taken.append((m.start(), m.end()))
    return sorted(found, key=lambda d: d.start)


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


_EN_TIME = re.compile(
    r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>am|pm|a\.m\.|p\.m\.)|\bat (?P<h2>\d{1,2}):(?P<m2>\d{2})\b",
    re.I,
)
_ZH_TIME = re.compile(
    r"(?P<p>上午|早上|中午|下午|晚上|傍晚)?(?P<h>\d{1,2}|[一二三四五六七八九十]{1,3})[点:：](?P<half>半)?(?:(?P<m>\d{1,2})分?)?"
)


def find_time(sentence: str) -> time | None:
    """A clock time mentioned in ``sentence`` (``3pm``, ``at 14:30``, ``下午3点``), if any."""
    m = _EN_TIME.search(sentence)
    if m:
        hour, minute = int(m.group("h") or m.group("h2")), int(m.group("m") or m.group("m2") or 0)
        ap = (m.group("ap") or "").lower().replace(".", "")
        hour = hour % 12 + (12 if ap == "pm" else 0) if ap else hour
        return time(hour % 24, minute % 60)
    m = _ZH_TIME.search(sentence)
    if m:
        raw = m.group("h")
        hour = int(raw) if raw.isdigit() else _zh_int(raw)
        if m.group("p") in ("下午", "晚上", "傍晚") and hour < 12:
            hour += 12
        minute = 30 if m.group("half") else int(m.group("m") or 0)
        return time(hour % 24, minute % 60)
    return None


def _zh_int(raw: str) -> int:
    if raw == "十":
        return 10
    if raw.startswith("十"):
        return 10 + _NUMBER_WORDS.get(raw[1:], 0)
    if "十" in raw:
        tens, _, ones = raw.partition("十")
        return _NUMBER_WORDS.get(tens, 1) * 10 + _NUMBER_WORDS.get(ones, 0)
    return _NUMBER_WORDS.get(raw, 0)


# ------------------------------------------------------------------------------------- Chinese date words

ZH_DATE_WORD = re.compile(
    r"(?:上上|上|下下|下|这|本)个?(?:周|星期|礼拜)[一二三四五六日天末]?|大?[前昨今明后]天|[去今明前后]年|(?:上|下|这)个月|"
    r"\d{1,2}月\d{1,2}[日号]?|(?:周|星期|礼拜)[一二三四五六日天]|[早晚]上|[上中下]午|刚才|今晚|昨晚|明早|\d+[天周年]前"
)
ZH_DATE_TAIL = re.compile(f"(?:{ZH_DATE_WORD.pattern})$")
