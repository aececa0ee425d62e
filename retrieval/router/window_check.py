"""An empty time window (pure): a question that asks only about a time ("What happened yesterday?",
"昨天谁说了什么？", "What did Bob say last week?") and finds nothing said in that time has no answer in
memory. The strategies still rank the chat's best matches (a window with no hits falls back to the whole
chat), but those are from other days: served as an answer, "yesterday Bob said …" would be made up.

A question with content of its own ("What did Bob say about the launch last week?") is left to the
ordinary abstention check: its keywords may be found outside the window when the user misremembers the
time, and the router's window search already prefers what falls inside.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from retrieval.protocols import Doc
from retrieval.router.timeparse import TimeQuery

__all__ = ["empty_window"]


def empty_window(time: TimeQuery, keywords: Sequence[str], docs: Sequence[Doc]) -> str | None:
    """The label of the question's time window (``yesterday`` / ``昨天``) when the question has no content
    keyword besides its time and names and none of ``docs`` (the top candidates) was said in any of its
    windows; else None."""
    if not time.windows or keywords or any(_yearless(w.label) for w in time.windows):
        return None
    for doc in docs:
        if any(w.since <= doc.ts <= w.until for w in time.windows):
            return None
        for day in _dates(doc.text):  # said another day about that one: "(2024-03-05)" of "yesterday I hiked"
            if any(w.since.date() <= day <= w.until.date() for w in time.windows):
                return None
    return " + ".join(w.label for w in time.windows)


_CALENDAR = re.compile(
    r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\b|\d{1,2}\s*[/.-]\s*\d{1,2}|"
    r"[\d一二三四五六七八九十]+\s*[月号日]"
)
_YEAR = re.compile(r"\b(?:1\d|2\d)\d\d\b|\d{4}\s*年|[今去前明]年")


def _yearless(label: str) -> bool:
    """A calendar date without its year ("March 5", "3月5号"): which year it means is a guess (the last
    one before now), so an empty window proves nothing. Relative windows ("yesterday", "上周") and dated
    ones ("March 5, 2024") do."""
    return bool(_CALENDAR.search(label)) and not _YEAR.search(label)


_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def _dates(text: str) -> list[date]:
    """The ISO dates distillation wrote into ``text`` (``下周三(2024-03-13)``, ``(on 2024-03-05)``)."""
    out = []
    for y, m, d in _ISO_DAY.findall(text):
        try:
            out.append(date(int(y), int(m), int(d)))
        except ValueError:
            continue
    return out
