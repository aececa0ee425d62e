"""The date-expression rules (English and Chinese) and how each resolves against the message's local date.

Conventions (all relative to the message's local date ``ref``; weeks run Monday..Sunday):

- ``this Friday`` is the Friday of the current week; if that day has already passed and the sentence is
  not past tense, the coming one. ``这周五``/``本周五`` is strictly the Friday of the current week.
- ``next Friday`` is the Friday of *next* week, like ``下周五`` (said on Wednesday 2024-03-06 it is
  2024-03-15, not 2024-03-08). This is the calendar-week reading most dictionaries give and the one
  ``下周五`` forces in Chinese; said on a Saturday or Sunday it is the coming Friday. ``coming Friday`` is the
  first Friday after today.
- ``last Friday`` is the most recent Friday before today; ``上周五`` is the Friday of the previous week.
- A bare weekday (``Friday``, ``on Friday``, ``周六``, ``星期六``, ``礼拜六``) follows the tense of its clause
  (then of its sentence): past (``went``, ``了``, ``刚才``) -> the most recent such day before today; otherwise
  (a plan, or no cue) -> the next such day, today included (``周五下午开会`` said on a Friday is today).
  ``every Friday`` / ``每周五`` are habits, not dates.
- A month named alone (``in March``, ``三月``, ``5月底``) is of this year, unless the tense says otherwise
  (past: the latest such month not after this one; future: the first not before it).
- A day of a month said without its year (``March 4``, ``3月4号``), and ``8号`` said without its month, is
  the first such day not before the message, unless the sentence is past (then the nearest, a day ahead
  counting double).
  Years and months said in full (``May 2023``, ``in 2022``, ``2023年5月``) resolve as said, unlabelled.
  A question about a chat long silent reads these against the chat's last day (``Context.calendar``).
- A weekday named after (or right before) a week reference in the same sentence belongs to that week:
  ``from next week on we meet on Wednesday`` / ``下周我们周三见`` -> Wednesday of next week. Likewise a day of
  the month after a month reference (``next month on the 5th``, ``下个月5号``) and a month after a year
  reference (``next year in March``, ``明年三月``). A bare weekday after a weekday that names its week, in
  the same sentence, is of that week: ``下周三的聚餐改到周四`` / ``next Wednesday's call moves to Thursday`` ->
  Thursday of next week.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from language.lazy_re import lazy
from language.time.anchors import ADJACENT, Context, Resolved, anchor
from language.time.stated import bare_dom, capped, day_alone, stated, yearless_day
from language.time.weekdays import (
    TIME_AFTER,
    WD,
    WD_ABBR,
    WD_ANY,
    WD_SHORT,
    bare_weekday,
    en_weekday,
    weekday_index,
)
from language.time.words import (
    MONTHS,
    ZH_NUM,
    ZH_WEEKDAY,
    add_months,
    clause_of,
    month_end,
    parse_number,
    tense_of,
    week_start,
)

__all__ = ["ABSOLUTE_RULES", "EN_RULES", "TAIL_RULES", "ZH_RULES", "Context", "Resolved", "resolve"]


_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11), "winter": (12, 2)}
_EN_NUM = r"(?P<n>\d+|a couple of|a couple|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_ZH_N = (
    r"(?<![\d一两二三四五六七八九十几])(?P<n>\d+|[一两二三四五六七八九十几]+)"  # from the start of a number
)
_MON_FULL = "|".join(MONTHS)
_MON_ANY = f"{_MON_FULL}|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
_SHIFT = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1}
_ZH_SHIFT = {"上上": -2, "上": -1, "下下": 2, "下": 1, "这": 0, "本": 0}
_ZH_YEAR = {"前": -2, "去": -1, "今": 0, "明": 1, "后": 2}
_ZH_UNIT = {"天": "day", "周": "week", "个星期": "week", "个礼拜": "week", "个月": "month", "年": "year"}

EN_RULES: list[tuple[re.Pattern[str], str]] = [
    (lazy(r"\b(the )?day before yesterday\b", re.I), "d-2"),
    (lazy(r"\b(the )?day after tomorrow\b", re.I), "d+2"),
    (lazy(r"\bthe week (?P<dir>before last|after next)\b", re.I), "week2"),
    (
        lazy(r"\b(?:the )?end of (?:the |this )?(?:(?P<w>next|last) )?(?P<unit>month|year)\b", re.I),
        "end",
    ),
    (lazy(r"\b(yesterday|last night)\b", re.I), "d-1"),
    (lazy(r"\b(today|tonight|this (morning|afternoon|evening))\b", re.I), "d+0"),
    (lazy(r"\btomorrow\b", re.I), "d+1"),
    (lazy(rf"\b(?P<w>last|this|next|coming|past) (?P<wd>{WD_ANY})\b", re.I), "weekday"),
    # a week after the coming one: "the friday after next", "a week from friday", "friday week"
    (lazy(rf"\b(?:the )?(?P<wd>{WD_ANY}) after next\b|\b(?:a|one) week (?:from|on) (?P<wd2>{WD_ANY})\b|"
          rf"(?<!every )(?<!each )\b(?P<wd3>{WD}) week\b", re.I), "weekday_after_next"),
    (lazy(r"\b(?P<w>last|this|next|coming|past) weekend\b", re.I), "weekend"),
    (lazy(r"\b(?P<w>last|this|next|coming|past|previous) (?P<unit>week|month|year)\b", re.I), "unit"),
    (
        lazy(r"\b(?P<w>last|this|next|past) (?P<season>spring|summer|fall|autumn|winter)\b", re.I),
        "season",
    ),
    (
        lazy(
            rf"\b(?P<w>last|this|next|in|by|until|since|early|late|mid)(?:\s+|-)(?P<mon>{_MON_FULL})\b(?!\.?\s*\d)",
            re.I,
        ),
        "month",
    ),
    (lazy(rf"\b{_EN_NUM} (?P<unit>day|week|month|year)s? ago\b", re.I), "ago"),
    (lazy(rf"\bin {_EN_NUM} (?P<unit>day|week|month|year)s?\b", re.I), "in"),
    (lazy(rf"\b{_EN_NUM} (?P<unit>day|week|month|year)s? from (?:now|today)\b", re.I), "in"),
    # A weekday followed by an explicit date ("Friday March 8", "Friday, 8 March") is that date: leave it to
    # the absolute rules instead of guessing a week from the tense.
    (
        lazy(
            rf"(?<!every )(?<!each )\b(?:on )?(?P<wd>{WD}|{WD_ABBR})\b(?!,?\s+(?:the\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?(?:{_MON_ANY})\b)(?!,?\s+\d{{1,2}}[/.-]\d)",
            re.I,
        ),
        "bare_weekday",
    ),
    (
        lazy(
            rf"(?<!every )(?<!each )\b(?:(?:on|by|till|til|until|from) (?P<wd>{WD_SHORT})\b|(?P<wd2>{WD_SHORT})\b{TIME_AFTER})",
            re.I,
        ),
        "bare_weekday",
    ),
]
ZH_RULES: list[tuple[re.Pattern[str], str]] = [
    (lazy(r"大前天"), "d-3"),
    (lazy(r"大后天"), "d+3"),
    (lazy(r"前天"), "d-2"),
    (lazy(r"后天"), "d+2"),
    (lazy(r"昨天|昨日|昨晚|昨儿"), "d-1"),
    (lazy(r"今天|今日|今晚|今早|今儿"), "d+0"),
    (lazy(r"明天|明日|明晚|明早|明儿"), "d+1"),
    (
        lazy(r"(?P<w>上上|上|下下|下|这|本)个?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天末])"),
        "zh_weekday",
    ),
    (lazy(r"(?P<w>上上|上|下下|下|这|本)个?(?:周|星期|礼拜)"), "zh_week"),
    (
        lazy(
            rf"(?:(?P<w>上上|上|下下|下|这|本)个?|(?:(?P<y>\d{{4}}|前|去|今|明|后)年)?"
            rf"(?<![\d零一二三四五六七八九十])(?P<m>\d{{1,2}}|{ZH_NUM}))?月(?P<e>底|末|初)"
        ),
        "zh_month_edge",
    ),
    (lazy(r"(?P<y>\d{4}|前|去|今|明|后)?年(?P<e>底|末|初)"), "zh_year_edge"),
    (lazy(rf"(?P<w>上上|上|下下|下|这|本)个?月(?P<d>\d{{1,2}}|{ZH_NUM})[号日]"), "zh_month_day"),
    (lazy(r"(?P<w>上上|上|下下|下|这)个月|(?P<w2>本)月"), "zh_month"),
    (
        lazy(
            rf"(?<![\d零一二三四五六七八九十个几])(?:(?P<y>\d{{4}}|前|去|今|明|后)年)?(?P<m>\d{{1,2}}|{ZH_NUM})月份?(?:(?P<d>\d{{1,2}}|{ZH_NUM})[日号])?"
        ),
        "zh_date",
    ),
    (lazy(r"(?P<y>前|去|今|明|后)年"), "zh_year"),
    (lazy(r"(?<!\d)(?P<y>(?:19|20)\d{2})年(?![\d零一二三四五六七八九十]{1,3}月|底|末|初)"), "year"),
    (
        lazy(rf"{_ZH_N}(?P<unit>天|周|个星期|个礼拜|个月|年)(?P<dir>前|以前|之前|后|以后|之后)"),
        "zh_offset",
    ),
    (lazy(rf"(?<!不)再?过{_ZH_N}(?P<unit>天|周|个星期|个礼拜|个月|年)"), "zh_offset"),
    (lazy(r"(?<!每)(?<!每个)(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])"), "zh_bare_weekday"),
]
_Y = r"(?P<y>(?:19|20)\d{2})"
ABSOLUTE_RULES: list[tuple[re.Pattern[str], str]] = [
    (lazy(rf"\b{_Y}-(?P<m>\d{{1,2}})-(?P<d>\d{{1,2}})\b"), "iso"),
    (lazy(rf"(?:{_Y}年)?(?P<m>\d{{1,2}})月(?P<d>\d{{1,2}})[日号]"), "iso"),
    (lazy(rf"\b(?P<mon>{_MON_ANY})\.? (?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:,? {_Y})?\b", re.I), "md"),
    (lazy(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)? (?:of )?(?P<mon>{_MON_ANY})\.?(?:,? {_Y})?\b", re.I), "md"),
    (lazy(rf"\b(?P<mon>{_MON_ANY})\.?,?\s+(?:of\s+)?{_Y}\b", re.I), "month_year"),
    (lazy(rf"\b(?:in|during|of|since|from|before|after|by|until)\s+{_Y}\b(?![-/.]\d)", re.I), "year"),
]  # fmt: skip
_NOT_A_DAY = "[楼线床房机位门口厅馆店车窗桌选手码球]"  # "3号楼", "2号线", "8号选手": a number, not a day
# Resolved only next to an anchor found by the rules above ("the week before March 8", "next month 5号").
TAIL_RULES: list[tuple[re.Pattern[str], str]] = [
    (lazy(r"\bthe week (?P<dir>before|after)\b", re.I), "week_rel"),
    # a month the rules above left: "the second week of November", "from June", "the October dates"
    (lazy(rf"\b(?:of|from|during|through|throughout|around|till|before|after)\s+(?P<mon>{_MON_FULL})\b(?!\.?\s*\d)", re.I), "month"),
    (lazy(r"\b(?P<mon>January|February|March|April|June|July|August|September|October|November|December)\b(?!\.?\s*\d)"), "month"),
    (lazy(r"\b(?:on )?the (?P<d>\d{1,2})(?:st|nd|rd|th)\b", re.I), "dom"),
    (lazy(rf"(?<![\d月零一二三四五六七八九十])(?P<d>\d{{1,2}}|{ZH_NUM})号(?!{_NOT_A_DAY})"), "dom"),
]


def _month_by_tense(month: int, m: re.Match[str], ctx: Context) -> Resolved:
    """A month named without a year: of the anchoring year if any, else the nearest one in the tense."""
    year_anchor = anchor(ctx, m, ("year",))
    if year_anchor is not None:
        return Resolved(date(year_anchor.day.year, month, 1), "month", False, year_anchor)
    a, b = clause_of(ctx.sentence, m.start(), m.end())  # its own clause's tense: "she got a job, she can get
    ref, tense = ctx.calendar, tense_of(ctx.sentence[a:b], m.start() - a, m.end() - a, ctx.cjk)  # us tickets in may"
    year = ref.year - (tense == "past" and month > ref.month) + (tense == "future" and month < ref.month)
    return Resolved(date(year, month, 1), "month")


# ----------------------------------------------------------------------------------------------- resolvers


def _en_season(which: str, season: str, ref: date) -> date:
    start_this = date(ref.year, _SEASONS[season][0], 1)
    if which in ("last", "past"):
        end_m = _SEASONS[season][1]
        # The most recent season of that name that has ended before the reference date.
        year = ref.year if (ref.month > end_m and season != "winter") else ref.year - 1
        return date(year, _SEASONS[season][0], 1)
    if which == "next":
        return start_this if ref < start_this else date(ref.year + 1, _SEASONS[season][0], 1)
    return start_this


def _offset(kind: str, g: dict[str, str | None], ref: date) -> Resolved | None:
    n = parse_number(g["n"] or "")
    if n is None:
        return None
    unit = _ZH_UNIT[g["unit"] or ""] if kind == "zh_offset" else (g["unit"] or "").lower()
    sign = -1 if kind == "ago" or (kind == "zh_offset" and "前" in (g.get("dir") or "")) else 1
    if unit in ("day", "week"):
        approx = unit == "week" or (g["n"] or "").lower() in ("a few", "few", "several", "几")
        return Resolved(ref + timedelta(days=sign * n * (7 if unit == "week" else 1)), "day", approx)
    if unit == "month":
        return Resolved(add_months(ref, sign * n), "month")
    return Resolved(date(ref.year + sign * n, 1, 1), "year")


def _en(kind: str, m: re.Match[str], ctx: Context) -> Resolved | None:
    g, ref = m.groupdict(), ctx.ref
    if kind == "week2":
        return Resolved(week_start(ref) + timedelta(days=14 if "next" in g["dir"].lower() else -14), "week")
    if kind == "end":
        k = _SHIFT.get((g["w"] or "this").lower(), 0)
        if g["unit"].lower() == "month":
            return Resolved(month_end(add_months(ref, k)), "day", True)
        return Resolved(date(ref.year + k, 12, 31), "day", True)
    if kind == "weekday":
        return Resolved(en_weekday(g["w"].lower(), weekday_index(g["wd"]), m, ctx), "day")
    if kind == "weekday_after_next":
        wd = weekday_index(g.get("wd") or g.get("wd2") or g["wd3"])
        return Resolved(ref + timedelta(days=((wd - ref.weekday()) % 7 or 7) + 7), "day")
    if kind == "weekend":
        which = g["w"].lower()
        offset = -2 if which in ("last", "past") else 5 + 7 * _SHIFT[which]
        return Resolved(week_start(ref) + timedelta(days=offset), "weekend")
    if kind == "unit":
        unit, k = g["unit"].lower(), _SHIFT[g["w"].lower()]
        if unit == "week":
            return Resolved(week_start(ref) + timedelta(days=7 * k), "week")
        if unit == "month":
            return Resolved(add_months(ref, k), "month")
        return Resolved(date(ref.year + k, 1, 1), "year")
    if kind == "season":
        return Resolved(_en_season(g["w"].lower(), g["season"].lower(), ref), "season")
    if kind == "month":
        which, month = (g.get("w") or "").lower(), MONTHS.index(g["mon"].lower()) + 1
        if g["mon"] == "may" and which in ("this", ""):
            return None  # the modal verb ("this may help", "it may rain")
        if which == "last":  # the latest such month before this one
            return Resolved(date(ref.year - (month >= ref.month), month, 1), "month")
        if which == "next":  # the first such month after this one
            return Resolved(date(ref.year + (month <= ref.month), month, 1), "month")
        return (
            Resolved(date(ref.year, month, 1), "month") if which == "this" else _month_by_tense(month, m, ctx)
        )
    if kind in ("ago", "in"):
        return _offset(kind, g, ref)
    if kind == "bare_weekday":
        return bare_weekday(weekday_index(g.get("wd") or g["wd2"]), m, ctx)
    return None


def _zh(kind: str, m: re.Match[str], ctx: Context) -> Resolved | None:
    g, ref = m.groupdict(), ctx.ref
    if kind == "zh_weekday":
        k = _ZH_SHIFT[g["w"]]
        if g["wd"] == "末":
            return Resolved(week_start(ref) + timedelta(days=5 + 7 * k), "weekend")
        return Resolved(week_start(ref) + timedelta(days=7 * k + ZH_WEEKDAY[g["wd"]]), "day")
    if kind == "zh_week":
        return Resolved(week_start(ref) + timedelta(days=7 * _ZH_SHIFT[g["w"]]), "week")
    if kind == "zh_month_edge":
        if g["m"]:
            number = parse_number(g["m"]) or 0
            if not 1 <= number <= 12:
                return None
            y = g["y"]
            if y:
                first = date(int(y) if y.isdigit() else ref.year + _ZH_YEAR[y], number, 1)
            else:
                first = _month_by_tense(number, m, ctx).day
        else:
            first = add_months(ref, _ZH_SHIFT[g["w"]] if g["w"] else 0)
        return Resolved(first if g["e"] == "初" else month_end(first), "day", True)
    if kind == "zh_year_edge":
        y = g["y"] or "今"
        year = int(y) if y.isdigit() else ref.year + _ZH_YEAR[y]
        return Resolved(date(year, 1, 1) if g["e"] == "初" else date(year, 12, 31), "day", True)
    if kind == "zh_month_day":
        first = add_months(ref, _ZH_SHIFT[g["w"]])
        return Resolved(first.replace(day=parse_number(g["d"]) or 0), "day")
    if kind == "zh_month":
        return Resolved(add_months(ref, _ZH_SHIFT[g["w"] or g["w2"]]), "month")
    if kind == "zh_date":
        return _zh_date(g, m, ctx)
    if kind == "zh_year":
        return Resolved(date(ref.year + _ZH_YEAR[g["y"]], 1, 1), "year")
    if kind == "zh_offset":
        return _offset(kind, g, ref)
    if kind == "zh_bare_weekday":
        return bare_weekday(ZH_WEEKDAY[g["wd"]], m, ctx)
    return None


def _zh_date(g: dict[str, str | None], m: re.Match[str], ctx: Context) -> Resolved | None:
    """``2023年5月`` / ``去年5月3号`` / ``三月`` / ``明年三月``: explicit years and days stay unlabelled."""
    month, y = parse_number(g["m"] or "") or 0, g["y"]
    day = parse_number(g["d"]) if g["d"] else None
    if not 1 <= month <= 12:
        return None
    if y and y.isdigit():
        if day is None:
            return Resolved(date(int(y), month, 1), "month", explicit=True)
        return Resolved(capped(int(y), month, day), "absolute")
    if y:
        year = ctx.ref.year + _ZH_YEAR[y]
        return Resolved(capped(year, month, day), "day") if day else Resolved(date(year, month, 1), "month")
    if day:
        return yearless_day(month, day, m, ctx)
    return _month_by_tense(month, m, ctx)


def _tail(kind: str, m: re.Match[str], ctx: Context) -> Resolved | None:
    g = m.groupdict()
    if kind == "dom":
        month = anchor(ctx, m, ("month",))
        day = parse_number(g["d"] or "")
        if month is None and day and (("号" in m.group(0)) if ctx.cjk else day_alone(m, ctx)):
            return bare_dom(day, m, ctx)
        return Resolved(month.day.replace(day=day or 0), "day", False, month) if month and day else None
    if kind == "week_rel":
        after = [
            d for d in ctx.found if d.start >= m.end() and ADJACENT.match(ctx.sentence[m.end() : d.start])
        ]
        days = [d for d in after if d.grain in ("day", "absolute")]
        if not days:
            return None  # "the week before" on its own refers to an event told elsewhere
        day = min(days, key=lambda d: d.start).day
        return Resolved(
            day - timedelta(days=7) if g["dir"].lower() == "before" else day + timedelta(days=1), "week"
        )
    return None


# a weekday that recurs, said with words the rules' own look-behinds ("every ", "每") do not reach: "every other
# monday", "the first saturday of each month", "每个月第一个周六", "隔周三"; a habit, not a date
_EN_RECURS_BEFORE = lazy(r"(?i)\b(?:every|each|alternate)\s+(?:other|second|third|\w+ly)?\s*$"
                         r"|\b(?:every|each)\s+(?:first|second|third|fourth|last)\s+$")
_EN_RECURS_AFTER = lazy(r"(?i)^s?\s+(?:of|in)\s+(?:each|every|the)\s+month\b")
_ZH_RECURS_BEFORE = lazy(r"(?:每|隔|每隔)[一两二三四五六七八九十\d个]*(?:月|周|星期|礼拜)?的?(?:第[一二三四五\d]个?|最后一个)?$|隔$")
_WEEKDAY_KINDS = ("bare_weekday", "zh_bare_weekday")


def recurs(kind: str, m: re.Match[str], ctx: Context) -> bool:
    """A weekday that names a schedule, not a day (``_EN_RECURS_BEFORE`` and the rest)."""
    after = ctx.sentence[m.end() : m.end() + 24]
    if kind == "weekday":  # "the last friday of every month"
        return _EN_RECURS_AFTER.match(after) is not None
    if kind not in _WEEKDAY_KINDS:
        return False
    before = ctx.sentence[max(0, m.start() - 24) : m.start()]
    if ctx.cjk:
        return _ZH_RECURS_BEFORE.search(before) is not None
    return _EN_RECURS_BEFORE.search(before) is not None or _EN_RECURS_AFTER.match(after) is not None


def resolve(kind: str, m: re.Match[str], ctx: Context) -> Resolved | None:
    """The date ``m`` (matched by a rule of ``kind``) stands for; None when it is not one here.

    May raise ``ValueError``/``OverflowError`` for dates outside years 1..9999 (the caller drops those).
    """
    if recurs(kind, m, ctx):
        return None
    if kind[0] == "d" and kind[1] in "+-":
        return Resolved(ctx.ref + timedelta(days=int(kind[1:])), "day")
    if kind in ("iso", "md", "month_year", "year"):
        return stated(kind, m, ctx)
    if kind.startswith("zh_"):
        return _zh(kind, m, ctx)
    if kind in ("dom", "week_rel"):
        return _tail(kind, m, ctx)
    return _en(kind, m, ctx)
