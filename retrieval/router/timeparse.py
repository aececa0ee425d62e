"""Pure time-expression parsing for queries, Chinese and English.

``parse_time(text, now)`` finds what a question says about time:

- explicit windows: ``yesterday`` / ``昨天``, ``last week`` / ``上周``, ``last month`` / ``上个月``,
  ``last May`` / ``去年五月``, ``in May 2023`` / ``2023年5月``, ``on 21 May, 2023`` / ``5月21日``,
  ``in 2022`` / ``去年``, ``3 days ago`` / ``三天前``, ``recently`` / ``最近``;
- a relation to another event: ``before I moved`` / ``搬家之前`` (the anchor is looked up by the strategy);
- whether the question asks *for* a time (``when``, ``what year``, ``什么时候``) or asks for an order
  (``first ... or``, ``before or after``, ``先…还是…``) and which events it compares.

Windows are closed intervals ``[since, until]`` in the timezone of ``now`` (or of ``tz`` when given: a
question asked at 00:30 +08:00 about ``yesterday`` means the local yesterday, whatever ``now``'s zone). Nothing
here does I/O, and nothing raises on extreme input: an expression whose window leaves the ``datetime`` range
(``10000 years ago``, ``999999999 days ago``, ``May 0000``) is ignored, and windows are clamped to
[0001-01-02, 9999-12-30] UTC so that converting or padding them (:func:`widen`) cannot overflow.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo
from typing import Literal

from dateutil.relativedelta import relativedelta
from pydantic import BaseModel, ConfigDict, Field

from language.extract.dates import find_dates
from retrieval.router.timebounds import Span, bounded_int, day_of, safe, shift

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december"]  # fmt: skip
_MON = "|".join([*MONTHS, *(m[:3] for m in MONTHS), "sept"])
_CN_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_UNITS = {"day": "days", "week": "weeks", "month": "months", "year": "years",
          "天": "days", "日": "days", "周": "weeks", "星期": "weeks", "礼拜": "weeks", "个月": "months", "月": "months",
          "年": "years"}  # fmt: skip


class TimeWindow(BaseModel):
    model_config = ConfigDict(frozen=True)

    since: datetime
    until: datetime
    label: str


class TimeQuery(BaseModel):
    """What a question says about time. Empty (``bool(tq) is False``) when it says nothing."""

    model_config = ConfigDict(frozen=True)

    windows: list[TimeWindow] = Field(default_factory=list)
    relation: Literal["before", "after"] | None = None
    anchor: str | None = None  # the event text a before/after relation refers to
    asks_when: bool = False
    asks_order: bool = False
    asks_latest: bool = False  # "last time", "最近一次", "most recent"
    events: list[str] = Field(default_factory=list)  # the events an order question compares

    def __bool__(self) -> bool:
        return bool(self.windows or self.relation or self.asks_when or self.asks_order or self.asks_latest)

    @property
    def window(self) -> TimeWindow | None:
        """The union of the windows (one interval), or None."""
        if not self.windows:
            return None
        return TimeWindow(since=min(w.since for w in self.windows), until=max(w.until for w in self.windows),
                          label=" + ".join(w.label for w in self.windows))  # fmt: skip


def cn_number(text: str) -> int | None:
    """'12', '十二', '二十一', '三' -> int; None if not a number (or more than nine digits)."""
    if text.isdigit():
        return bounded_int(text)
    if not text or any(c not in _CN_DIGITS and c != "十" for c in text):
        return None
    if "十" not in text:
        return int("".join(str(_CN_DIGITS[c]) for c in text))
    tens, _, ones = text.partition("十")
    return (_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[ones] if ones else 0)


def _end_of_day(d: datetime) -> datetime:
    return d.replace(hour=23, minute=59, second=59, microsecond=999999)


def _day(now: datetime, d: datetime) -> Span:
    return d.replace(hour=0, minute=0, second=0, microsecond=0), _end_of_day(d)


def _month(year: int, month: int, tz) -> Span:
    last = calendar.monthrange(year, month)[1]
    return datetime(year, month, 1, tzinfo=tz), _end_of_day(datetime(year, month, last, tzinfo=tz))


def _year(year: int, tz) -> Span:
    return datetime(year, 1, 1, tzinfo=tz), _end_of_day(datetime(year, 12, 31, tzinfo=tz))


def _week(d: datetime) -> Span:
    start, _ = _day(d, d - timedelta(days=d.weekday()))
    return start, shift(start, timedelta(days=7)) - timedelta(microseconds=1)


def _month_index(name: str) -> int:
    name = name.lower()
    return next(i for i, m in enumerate(MONTHS, 1) if m.startswith(name[:3]))


def _year_of(cal: datetime, now: datetime, month: int, day: int) -> int:
    """The year of a yearless day ("March 20"): by the month from now (a plan later this month stays this
    year's); from the chat's last activity ``cal``, when that anchors, the latest such day not after it."""
    if cal == now:
        return _past_month(now, month)
    return cal.year if (month, day) <= (cal.month, cal.day) else cal.year - 1


def _past_month(now: datetime, month: int) -> int:
    """The year of the latest ``month`` not after ``now``'s month ("last May", "in July" with no year)."""
    return now.year if month <= now.month else now.year - 1


# ---- explicit windows --------------------------------------------------------------------------------

_RELATIVE_EN = [
    (re.compile(r"\byesterday\b"), lambda n: _day(n, n - timedelta(days=1))),
    (re.compile(r"\btoday\b|\bthis morning\b|\btonight\b"), lambda n: _day(n, n)),
    (re.compile(r"\blast week\b|\bprevious week\b"), lambda n: _week(n - timedelta(days=7))),
    (re.compile(r"\bthis week\b"), lambda n: _week(n)),
    (re.compile(r"\blast month\b|\bprevious month\b"),
     lambda n: _month((n - relativedelta(months=1)).year, (n - relativedelta(months=1)).month, n.tzinfo)),
    (re.compile(r"\bthis month\b"), lambda n: _month(n.year, n.month, n.tzinfo)),
    (re.compile(r"\blast year\b|\bprevious year\b"), lambda n: _year(n.year - 1, n.tzinfo)),
    (re.compile(r"\bthis year\b"), lambda n: _year(n.year, n.tzinfo)),
    (re.compile(r"\brecently\b|\blately\b|\bthese days\b"), lambda n: (n - timedelta(days=30), n)),
]  # fmt: skip
_RELATIVE_CN = [
    (re.compile("大前天"), lambda n: _day(n, n - timedelta(days=3))),
    (re.compile("前天"), lambda n: _day(n, n - timedelta(days=2))),
    (re.compile("昨天|昨日|昨晚"), lambda n: _day(n, n - timedelta(days=1))),
    (re.compile("今天|今日|今晚|今早"), lambda n: _day(n, n)),
    (re.compile("上(?:个)?(?:周|星期|礼拜)"), lambda n: _week(n - timedelta(days=7))),
    (re.compile("(?:这|本)(?:个)?(?:周|星期|礼拜)"), lambda n: _week(n)),
    (re.compile("上(?:个)?月"),
     lambda n: _month((n - relativedelta(months=1)).year, (n - relativedelta(months=1)).month, n.tzinfo)),
    (re.compile("(?:这|本)(?:个)?月"), lambda n: _month(n.year, n.month, n.tzinfo)),
    (re.compile("前年"), lambda n: _year(n.year - 2, n.tzinfo)),
    (re.compile("去年(?![一二三四五六七八九十\\d]+月)"), lambda n: _year(n.year - 1, n.tzinfo)),
    (re.compile("今年(?![一二三四五六七八九十\\d]+月)"), lambda n: _year(n.year, n.tzinfo)),
    (re.compile("最近(?!一次)|近来|这段时间"), lambda n: (n - timedelta(days=30), n)),
]  # fmt: skip

_QUIET = timedelta(days=31)  # a chat silent for longer anchors yearless dates at its last activity
_CN_WEEK_DAY = re.compile("(?:上上|上|这|本|下下|下)个?(?:周|星期|礼拜)[一二三四五六日天]")
_CN_BARE_DAY = re.compile(  # not "9月8号" (a date), "3号楼" (a building) or "3号线" (a metro line)
    "(?<![月\\d一二三四五六七八九十])(\\d{1,2}|[一二三四五六七八九十]{1,3})[号日](?![楼线床房机位门口厅馆店车窗桌选手])"
)
_AGO_EN = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s+(day|week|month|year)s?\s+ago\b"
)
_AGO_CN = re.compile(  # the lookbehind starts a match at the first digit only (linear on long digit runs)
    "(?<![\\d一二两三四五六七八九十])([\\d一二两三四五六七八九十]+)\\s*(天|日|周|星期|礼拜|个月|年)(?:之|以)?前"
)
_WORDNUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10}  # fmt: skip

_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MON})\.?,?\s*(\d{{4}})?\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(\d{{4}}))?")
_MONTH_YEAR = re.compile(rf"\b(last\s+|this\s+)?({_MON})\b(?:,?\s*(?:of\s+)?(\d{{4}}))?")
_YEAR = re.compile(r"\b(?:in|during|of|since|from|before|after|by)\s+((?:19|20)\d{2})\b|^((?:19|20)\d{2})\b")
_SHIFTED = re.compile(r"\bthe (day|weekend|week|month) (before|after)\s+(?:on\s+)?$")
_CN_DATE = re.compile(
    "(?:(\\d{4}|去|今|前)年)?([\\d一二三四五六七八九十]{1,3})月(?:份)?(?:([\\d一二三四五六七八九十]{1,3})[日号])?"
)
_CN_YEAR = re.compile("(\\d{4})年(?![\\d一二三四五六七八九十]{1,3}月)")


def _ago(now: datetime, n: int, unit: str) -> Span:
    """'3 days ago' -> that day; '2 months ago' -> that month; '1 year ago' -> that year."""
    point = now - relativedelta(**{unit: n})
    if unit == "days":
        return _day(now, point)
    if unit == "weeks":
        return _week(point)
    if unit == "months":
        return _month(point.year, point.month, now.tzinfo)
    return _year(point.year, now.tzinfo)


def _explicit_en(text: str, now: datetime, cal: datetime) -> list[TimeWindow]:
    out: list[TimeWindow] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match, make: Callable[[], Span]) -> None:
        if any(a < m.end() and m.start() < b for a, b in taken):
            return
        span = safe(make)
        if span is None:
            return
        taken.append(m.span())
        label = m.group(0).strip()
        shifted = _SHIFTED.search(text[: m.start()])
        if shifted:  # "the week before August 3" -> the 7 days up to August 3
            size = {"day": timedelta(days=1), "weekend": timedelta(days=3), "week": timedelta(days=7),
                    "month": timedelta(days=31)}[shifted[1]]  # fmt: skip
            before = shifted[2] == "before"
            span = (shift(span[0], -size), span[0]) if before else (span[1], shift(span[1], size))
            label = f"{shifted.group(0).strip()} {label}"
        out.append(TimeWindow(since=span[0], until=span[1], label=label))

    def on_day(year: int, month: int, day: int) -> Span:
        return _day(now, datetime(year, month, day_of(year, month, day), tzinfo=now.tzinfo))

    for m in _DAY_MONTH_YEAR.finditer(text):
        month = _month_index(m[2])
        year = int(m[3]) if m[3] else _year_of(cal, now, month, int(m[1]))
        add(m, lambda y=year, mo=month, d=int(m[1]): on_day(y, mo, d))
    for m in _MONTH_DAY_YEAR.finditer(text):
        if m[1].lower() == "may" and not m[3]:
            continue  # "may 5 people come" is not a date without a year
        month = _month_index(m[1])
        year = int(m[3]) if m[3] else _year_of(cal, now, month, int(m[2]))
        add(m, lambda y=year, mo=month, d=int(m[2]): on_day(y, mo, d))
    for m in _MONTH_YEAR.finditer(text):
        if m[2].lower() == "may" and not (m[1] or m[3] or re.search(r"\b(in|of|since|during)\s+may\b", text)):
            continue  # the modal verb
        month = _month_index(m[2])
        year = int(m[3]) if m[3] else _past_month(cal if not m[1] else now, month)
        if m[1] and m[1].strip() == "last" and not m[3] and month >= now.month:
            year = now.year - 1
        add(m, lambda y=year, mo=month: _month(y, mo, now.tzinfo))
    for m in _YEAR.finditer(text):
        add(m, lambda y=int(m[1] or m[2]): _year(y, now.tzinfo))
    for m in _AGO_EN.finditer(text):
        n = bounded_int(m[1]) if m[1].isdigit() else _WORDNUM[m[1]]
        if n is not None:
            add(m, lambda n=n, unit=m[2] + "s": _ago(now, n, unit))
    for pattern, span in _RELATIVE_EN:
        for m in pattern.finditer(text):
            add(m, lambda span=span: span(now))
    return out


def _explicit_cn(text: str, now: datetime, cal: datetime) -> list[TimeWindow]:
    out: list[TimeWindow] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match, make: Callable[[], Span]) -> None:
        if any(a < m.end() and m.start() < b for a, b in taken):
            return
        span = safe(make)
        if span is None:
            return
        taken.append(m.span())
        out.append(TimeWindow(since=span[0], until=span[1], label=m.group(0)))

    for m in _AGO_CN.finditer(text):
        n = cn_number(m[1])
        if n:
            add(m, lambda n=n, unit=_UNITS[m[2]]: _ago(now, n, unit))
    for m in _CN_DATE.finditer(text):
        month, day = cn_number(m[2]), cn_number(m[3]) if m[3] else None
        if not month or not 1 <= month <= 12 or (m[2] and m.start() > 0 and text[m.start() - 1] in "个"):
            continue
        year = {"去": now.year - 1, "今": now.year, "前": now.year - 2}.get(m[1] or "", None)
        year = year or (int(m[1]) if m[1] and m[1].isdigit() else
                        _year_of(cal, now, month, day) if day else _past_month(cal, month))  # fmt: skip

        def make(year: int = year, month: int = month, day: int | None = day) -> Span:
            if not day:
                return _month(year, month, now.tzinfo)
            return _day(now, datetime(year, month, day_of(year, month, day), tzinfo=now.tzinfo))

        add(m, make)
    for m in _CN_YEAR.finditer(text):
        add(m, lambda y=int(m[1]): _year(y, now.tzinfo))
    for m in _CN_WEEK_DAY.finditer(text):  # 上周五, 这周三: a day, not the whole week (the facts' own resolver)
        said = find_dates(m.group(0), now)
        if said:
            add(m, lambda d=said[0].day: _day(now, datetime(d.year, d.month, d.day, tzinfo=now.tzinfo)))
    for m in _CN_BARE_DAY.finditer(text):  # "8号": this month's, or the latest the chat can remember
        day = cn_number(m[1])
        if day and 1 <= day <= 31:
            back = day > cal.day and cal != now  # counted from now, this month's (like a yearless date)
            month_start = (cal.replace(day=1) - timedelta(days=1)).replace(day=1) if back else cal.replace(day=1)
            add(m, lambda ms=month_start, d=day: _day(now, ms.replace(day=day_of(ms.year, ms.month, d))
                                                      .astimezone(now.tzinfo)))  # fmt: skip
    for pattern, span in _RELATIVE_CN:
        for m in pattern.finditer(text):
            add(m, lambda span=span: span(now))
    return out


# ---- relations, questions about time ----------------------------------------------------------------

_WHEN_EN = re.compile(
    r"^\s*when\b|\bwhen (?:did|do|does|was|were|is|are|will|would|has|have|had)\b|\bwhat (?:time|date|day|month|year|"
    r"week|season)\b|\bwhich (?:day|month|year|week)\b|\bhow long\b|\bsince when\b|\bhow (?:many )?(?:days|weeks|"
    r"months|years) (?:ago|before|after|since)\b"
)
_WHEN_CN = re.compile(
    "什么时候|什么时间|哪天|哪一天|哪年|哪一年|几月|几号|哪个月|多久|多长时间|何时|几点|几年"
)
_ORDER_EN = re.compile(
    r"\b(?:first|earlier|later|sooner)\b.*\bor\b|\bbefore or after\b|\bafter or before\b|\bwhich (?:came|happened|"
    r"was) (?:first|earlier|later|last)\b|\bin what order\b|\border of\b"
)
_ORDER_CN = re.compile("先.+还是.+|哪个(?:先|早|晚|在前|在后)|顺序|谁先|先后")
_LATEST = re.compile(
    r"\b(?:last|latest|most recent(?:ly)?) time\b|\bmost recent\b|最近一次|上一次|上次|最后一次"
)
_REL_EN = re.compile(r"\b(before|after|since|prior to|following)\s+(?!or\b)(.{3,60}?)(?:[?.!,;]|$)")
_REL_CN = re.compile(
    "(?:在)?([^，。？！,?!]{2,20}?)(之前|以前|前|之后|以后|后)(?=[，。？！,?!]|$|[我你他她它我们]|[^，。？！,?!]{1,12}[？?])"
)
_EVENTS_BEFORE_AFTER_EN = re.compile(
    r"(?:did|was|were|do|does|is|has|have|had)\s+(?:\w+\s+)?(.{3,60}?)\s+(?:before or after|after or before)\s+"
    r"(.{3,60}?)\s*\??$"
)
_EVENTS_OR_EN = re.compile(
    r"(?:did|was|were|do|does|is)\s+\w+\s+(.{3,60}?)\s+(?:first\s+)?or\s+(.{3,60}?)(?:\s+first)?\s*\??$"
)
_EVENTS_CN = re.compile("先(.{2,20}?)还是(?:先)?(.{2,20}?)(?:的)?[？?]?$")


def _relation(text: str) -> tuple[Literal["before", "after"] | None, str | None]:
    if re.search(r"\bbefore or after\b|\bafter or before\b", text):
        return None, None  # an order question between two events, not a relation to one
    m = _REL_EN.search(text)
    if m and not re.match(r"(?:\d|the week|the day|the month|" + _MON + ")", m[2]):
        return ("before" if m[1] in ("before", "prior to") else "after"), m[2].strip()
    m = _REL_CN.search(text)
    if m and not re.search("[年月日号周天]$", m[1]) and m[1] not in ("之", "以", "很久", "不久", "早"):
        return ("before" if m[2] in ("之前", "以前", "前") else "after"), m[1].lstrip("在")
    return None, None


def _events(text: str) -> list[str]:
    m = _EVENTS_CN.search(text) or _EVENTS_BEFORE_AFTER_EN.search(text) or _EVENTS_OR_EN.search(text)
    return [e.strip(" ，,?？") for e in m.groups()] if m else []


def parse_time(text: str, now: datetime, tz: tzinfo | None = None, *, latest: datetime | None = None) -> TimeQuery:
    """Parse the time cues of a question (``now`` is the reference for relative expressions; tz-aware).

    Windows are local to ``tz`` when given (the asker's zone), else to ``now``'s own zone. A calendar date
    without its year ("March 4", "3月4号", "in July", "8号") is the latest one not after ``latest`` (the chat's
    last activity) when the chat has been silent for over a month: asked in November 2026 about a chat that
    ended in March 2025, "March 4" is 2025's — the year the chat can remember.
    """
    if tz is not None:
        try:
            now = now.astimezone(tz)
        except (OverflowError, ValueError):
            pass  # at the very edge of the datetime range: stay in now's own zone
    low = text.lower()
    if latest is not None and latest.tzinfo is None:
        latest = latest.replace(tzinfo=now.tzinfo)  # a naive time is read in now's zone
    cal = now if latest is None or now - latest <= _QUIET else latest.astimezone(now.tzinfo)  # quiet for long
    windows = _explicit_en(low, now, cal) + _explicit_cn(text, now, cal)
    relation, anchor = _relation(low if relation_is_en(text) else text)
    asks_order = bool(_ORDER_EN.search(low) or _ORDER_CN.search(text))
    return TimeQuery(
        windows=windows,
        relation=relation,
        anchor=anchor,
        asks_when=bool(_WHEN_EN.search(low) or _WHEN_CN.search(text)),
        asks_order=asks_order,
        asks_latest=bool(_LATEST.search(low)),
        events=_events(text if not relation_is_en(text) else low) if asks_order else [],
    )


def relation_is_en(text: str) -> bool:
    return not re.search("[\u4e00-\u9fff]", text)


def widen(window: TimeWindow, *, before: timedelta, after: timedelta) -> TimeWindow:
    """A window padded on both sides: chats mention events some time after (or before) they happen.

    Saturates at the window bounds (0001-01-02 / 9999-12-30 UTC) rather than overflowing.
    """
    since, until = shift(window.since, -before), shift(window.until, after)
    return TimeWindow(since=since, until=until, label=window.label)
