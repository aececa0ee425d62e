"""What a question says about time, Chinese and English (pure).

``parse_time(text, now)`` reads:

- the windows it names (``yesterday`` / ``昨天``, ``last May`` / ``去年五月``, ``in 2022``, ``recently`` / ``最近``):
  :func:`language.time.windows.time_windows`, grounded by the same rules as a date said in a message;
- a relation to another event: ``before I moved`` / ``搬家之前`` (the anchor is looked up by the strategy);
- whether the question asks *for* a time (``when``, ``what year``, ``什么时候``) or asks for an order
  (``first ... or``, ``before or after``, ``先…还是…``) and which events it compares.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from language.time.windows import TimeWindow, time_windows

__all__ = ["TimeQuery", "parse_time", "relation_is_en"]

_MON = "jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"  # a month's first letters: "before May" is a date


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


def parse_time(
    text: str, now: datetime, tz: tzinfo | None = None, *, latest: datetime | None = None
) -> TimeQuery:
    """Parse the time cues of a question (``now`` is the reference for relative expressions; tz-aware).

    Windows are local to ``tz`` when given (the asker's zone), else to ``now``'s own zone; a date without its
    year reads against ``latest`` (the chat's last activity) when the chat has long been silent
    (:func:`language.time.windows.time_windows`).
    """
    low = text.lower()
    relation, anchor = _relation(low if relation_is_en(text) else text)
    asks_order = bool(_ORDER_EN.search(low) or _ORDER_CN.search(text))
    return TimeQuery(
        windows=time_windows(text, now, tz, latest=latest),
        relation=relation,
        anchor=anchor,
        asks_when=bool(_WHEN_EN.search(low) or _WHEN_CN.search(text)),
        asks_order=asks_order,
        asks_latest=bool(_LATEST.search(low)),
        events=_events(text if not relation_is_en(text) else low) if asks_order else [],
    )


def relation_is_en(text: str) -> bool:
    return not re.search("[\u4e00-\u9fff]", text)
