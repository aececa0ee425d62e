"""Shared pieces of date resolution: the mention type, number words, calendar arithmetic, tense cues.

Pure and clock-free. Calendar helpers may raise ``ValueError``/``OverflowError`` at the edges of the
``datetime`` range (year 1 / 9999); :func:`language.time.dates.find_dates` drops such an expression instead.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, time, timedelta
from typing import Literal

from language.lazy_re import lazy

__all__ = [
    "MONTHS",
    "WEEKDAYS",
    "ZH_NUM",
    "ZH_WEEKDAY",
    "DateMention",
    "Tense",
    "add_months",
    "clause_of",
    "month_end",
    "parse_number",
    "tense_of",
    "week_start",
    "zh_int",
]

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = tuple(
    "january february march april may june july august september october november december".split()
)
ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
ZH_NUM = "[零一两二三四五六七八九十]{1,3}"
NUMBER_WORDS = dict(
    zip(
        "a an one two three four five six seven eight nine ten eleven twelve 零 一 两 二 三 四 五 六 七 八 九 十 几".split(),
        [1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3],
        strict=True,
    )
) | {"a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3}
_MAX_DIGITS = 9  # longer numbers are out of any date range anyway (and int() refuses > 4300 digits)

Tense = Literal["past", "future"]


@dataclass(frozen=True)
class DateMention:
    """A date expression found in a sentence, resolved against the message time (in the message's zone).

    ``clock`` is the time of day said with it (``明天下午三点``, ``Friday at 5pm``), if any.
    """

    start: int
    end: int
    day: date
    grain: str  # day | week | weekend | month | year | season | absolute
    approx: bool = False
    season: str | None = None
    clock: time | None = None
    explicit: bool = False  # a month or year stated in full ("May 2023", "2023年"): no label

    def label(self, cjk: bool) -> str | None:
        d = self.day
        if self.grain == "absolute" or self.explicit:
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


# ---------------------------------------------------------------------------------------------- numbers


def zh_int(raw: str) -> int:
    """'三' -> 3, '十二' -> 12, '二十一' -> 21 (0 for anything else)."""
    if raw == "十":
        return 10
    if raw.startswith("十"):
        return 10 + NUMBER_WORDS.get(raw[1:], 0)
    if "十" in raw:
        tens, _, ones = raw.partition("十")
        return NUMBER_WORDS.get(tens, 1) * 10 + NUMBER_WORDS.get(ones, 0)
    return NUMBER_WORDS.get(raw, 0)


def parse_number(token: str) -> int | None:
    """Digits, English number words ('a couple of', 'three') or Chinese numerals; None when too large."""
    token = token.lower().strip()
    if token.isdigit():
        return int(token) if len(token.lstrip("0")) <= _MAX_DIGITS else None
    if token in NUMBER_WORDS:
        return NUMBER_WORDS[token]
    return zh_int(token) or None


# ------------------------------------------------------------------------------------- calendar arithmetic


def week_start(d: date) -> date:
    """The Monday of ``d``'s week (weeks run Monday to Sunday, as in Chinese and ISO usage)."""
    return d - timedelta(days=d.weekday())


def add_months(d: date, n: int) -> date:
    """The first day of the month ``n`` months after ``d``'s (ValueError outside years 1..9999)."""
    index = d.year * 12 + d.month - 1 + n
    return date(index // 12, index % 12 + 1, 1)


def month_end(d: date) -> date:
    return date(d.year, d.month, calendar.monthrange(d.year, d.month)[1])


# ----------------------------------------------------------------------------------------------- tense

_EN_FUTURE = lazy(
    r"\b(will|won't|shall|going to|gonna|plan(?:ning|s)? to|about to|upcoming|let's|see you|see ya|"
    r"can't wait|looking forward|hope to|want to|wanna|would like to|need to|have to|has to|gotta|should|"
    r"must|are you free|how about|what about|tomorrow|next(?! to)|soon|later|coming)\b|'ll\b|"
    r"\b(?:am|is|are|i'm|we're|you're|they're|he's|she's)\s+(?!going to\b)"
    r"(?!(?:amaz|interest|bor|excit|noth|someth|anyth|everyth|morn|even|spr|dur|fascinat|relax|annoy|tir|"
    r"surpris|inspir|charm|stunn|refresh|challeng|reward|satisfy|lov|sooth|th|k|r|s)ing\b)\w+ing\b",
    re.I,
)
_EN_PAST = lazy(
    r"\b(was|were|did|didn't|had|went|got|saw|met|took|came|made|ate|ran|found|bought|left|spent|"
    r"gave|felt|thought|began|won|lost|sent|brought|wrote|caught|taught|flew|drove|rode|swam|sang|slept|"
    r"kept|held|heard|paid|stood|wore|chose|broke|fell|forgot|built|ago|yesterday|last|earlier|already)\b|"
    # "sat" is also Saturday: "rain all sat", "on sat morning"
    r"(?<!\bon )(?<!\ball )(?<!\bthis )(?<!\bnext )(?<!\bby )(?<!\btill )(?<!\buntil )(?<!\bfrom )"
    r"\bsat\b(?!\s*(?:morning|night|afternoon|evening|arvo|\d))",
    re.I,
)
_EN_ED = lazy(r"\b(?P<prev>[\w']+\s+)?(?P<word>[a-z]{2,}ed)\b", re.I)
_NOT_PAST_ED = frozenset(
    "need feed seed speed indeed bed red shed wed weed breed hundred sacred naked wicked bleed greed "
    "proceed exceed succeed excited interested tired scared worried bored supposed used".split()
)
_ADJECTIVE_BEFORE = frozenset(
    "am is are be been being 'm 're i'm we're you're they're so very really too get gets getting feel feels "
    "feeling seem seems look looks will".split()
)
_ZH_FUTURE = lazy(
    r"要|(?<!开)会(?!议)|打算|准备|计划|将|想|吧|一起|(?<![看遇听梦撞])见(?![过了])|约|记得|别忘|能不能|可以|"
    r"有空|安排|下周|下个|明天|后天|即将|到时|"
    r"改到|改成|改在|改为|挪到|推到|推迟到|延到|延后到|提前到|调到|换到"  # "复查改到周四上午十点了": a plan moved ahead
)
_ZH_PAST = lazy(
    r"(?<![好对算行罢得为除满够齐])了(?!解)|(?<![不难通超])过(?![来去节年生日得])|刚才|刚刚|已经|那天|当时|昨|前天|上周|上个|曾"
)
_CLAUSE_END = lazy(r"[,;:!?.，。；：！？\n]")


# acknowledgements in the past tense that narrate nothing: "Friday 8pm at Marco's, got it."
_EN_ACK = lazy(r"(?i)\b(?:got (?:it|that|you|ya)|noted|understood|heard you)\b")


def _en_past(text: str) -> bool:
    text = _EN_ACK.sub(" ", text)
    if _EN_PAST.search(text):
        return True
    for m in _EN_ED.finditer(text):
        prev = (m.group("prev") or "").strip().lower()
        if m.group("word").lower() not in _NOT_PAST_ED and prev not in _ADJECTIVE_BEFORE:
            return True
    return False


def _cue(text: str, cjk: bool) -> Tense | None:
    if cjk:
        return "future" if _ZH_FUTURE.search(text) else "past" if _ZH_PAST.search(text) else None
    return "future" if _EN_FUTURE.search(text) else "past" if _en_past(text) else None


def clause_of(sentence: str, start: int, end: int) -> tuple[int, int]:
    """The bounds of the clause holding ``sentence[start:end]`` (between commas, stops and the like)."""
    left = max((m.end() for m in _CLAUSE_END.finditer(sentence, 0, start)), default=0)
    right_m = _CLAUSE_END.search(sentence, end)
    return left, right_m.start() if right_m else len(sentence)


def tense_of(sentence: str, start: int, end: int, cjk: bool, *, clause_only: bool = False) -> Tense | None:
    """The tense around ``sentence[start:end]``: its clause's cues first, then the whole sentence's (with
    ``clause_only``, not when the clause is in the present: "it got moved, it's Thursday now").

    Future cues win over past ones (``I was going to … on Friday`` is a plan); None when there is no cue.
    A day chosen for a plan is ahead however the choice is told ("we agreed on Thursday", "说好周四").
    """
    left, right = clause_of(sentence, start, end)
    clause = sentence[left:right]
    if (_ZH_BOOKED if cjk else _EN_BOOKED).search(sentence[left:start]) and (
        not cjk or "的" in sentence[end:right]
    ) and not _PAST_ANCHOR.search(clause):
        return "future"  # booked for a day: "booked a class for Saturday", "我报了周六上午的陶艺课"
    if not cjk and (_EN_MOVED_TO.search(sentence[left:start]) or _EN_MOVED_FROM.match(sentence, end)):
        return "future"  # a plan moved: "Thursday moved to Friday 8pm", "they pushed it to June 14"
    if (_ZH_CHOSEN if cjk else _EN_CHOSEN).search(sentence[left:start]) and not _PAST_ANCHOR.search(clause):
        return "future"  # a day chosen: "did we say Thursday?", "we settled on Friday", "说好的是周四"
    own = _cue(clause.replace(sentence[start:end], " "), cjk)
    if own or (clause_only and _PRESENT.search(clause)):
        return own
    return _cue(sentence, cjk)


_PRESENT = lazy(r"(?i)\b(?:is|are|am|now|still)\b|'s\b|现在|还是|改成|就是")
# a day chosen for a plan, told in the past tense: the day is still ahead
_EN_CHOSEN = lazy(
    r"(?i)\b(?:say|said|agreed|decided|settled|chose|picked|voted|went with|confirmed|locked in|fixed)"
    r"(?: (?:on|for|it for|it to|to))?(?: the| this| next)?\s*$"
)
_ZH_CHOSEN = lazy(r"(?:定了|说好了?|约好了?|定好了?|说的是|定的是|订的是|确定了?|敲定了?|[定订约放]在|安排在)[^，。！？；]{0,2}$")


# a past act that sets up a day to come: the day it names is ahead, whatever the verb's tense
_EN_BOOKED = lazy(
    r"(?i)\b(?:booked|reserved|scheduled|rescheduled|bought|got|ordered|signed up|registered|enrolled|planned|"
    r"arranged|set|moved|pushed|made an? (?:appointment|reservation|booking))\b[^.!?;]{0,40}\bfor (?:the |this |next )?$"
)
# a plan moved to (or from) a day: both days are ahead, whatever the verb's tense ("Thursday moved to Friday",
# "the dentist pushed it to June 14", "Friday's dinner is postponed until Sunday")
_EN_MOVE = (r"(?:mov(?:ed|es|ing)|push(?:ed|es|ing)|postpon(?:ed|es|ing)|reschedul(?:ed|es|ing)|chang(?:ed|es|ing)|"
            r"shift(?:ed|s|ing)|bump(?:ed|s|ing)|delay(?:ed|s|ing)|br(?:ought|inging) forward|put(?:ting)? off)")  # fmt: skip
_EN_MOVED_TO = lazy(
    rf"(?i)\b{_EN_MOVE}(?: (?:it|them|this|that|back|forward|out))* (?:to|until|till|til) (?:the |this |next )?$"
)
_EN_MOVED_FROM = lazy(
    rf"(?i)(?:'s)?(?:\s+\w+){{0,3}}?\s+(?:(?:is|are|was|were|has been|have been|got|gets|just)\s+)?{_EN_MOVE}"
    r"(?:\s+(?:it|back|forward|out))?\s+(?:to|until|till|til)\b"
)
_PAST_ANCHOR = lazy(r"(?i)\b(?:last (?:week|weekend|month)|ago|yesterday)\b|上周|上个|昨天|前天|之前")
_ZH_BOOKED = lazy(r"(?:订|预订|预约|约|报名?|买|抢|挂|定|安排)了[^，。！？；]{0,6}$")
