"""Pure per-candidate features and the design's configurable memory score.

- ``coverage``: how much of the question's content the item carries — the share of the question's keywords
  in the item, each weighted by its specificity among the candidates (a word every candidate has, such as
  the asker's name, says little);
- ``mentions_time``: the item itself states a time (a date, "last week", "昨天"), which a "when" question
  needs;
- ``in_window``: the item is inside the question's (padded) time window;
- ``memory_score``: similarity, access count, recency decay and graph score mixed by ``RescoreWeights``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime

from language.text import tokenize
from language.time.windows import TimeWindow
from retrieval.router.candidates import Cand
from retrieval.router.recipes import RescoreWeights

_TIME_MENTION = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last (?:week|weekend|month|year|night|summer|winter|spring|fall|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (?:week|weekend|month|year|morning)|next "
    r"(?:week|month|year)|\d+ (?:days?|weeks?|months?|years?) ago|ago|(?:19|20)\d\d|january|february|march|april|"
    r"june|july|august|september|october|november|december|recently|\d{4}-\d{2}-\d{2})\b"
    r"|昨天|前天|今天|明天|上周|上个月|去年|今年|前年|\d+月|\d+号|\d+年|[一二三四五六七八九十]+月",
    re.I,
)


def doc_tokens(cands: Iterable[Cand]) -> dict[str, set[str]]:
    return {c.doc_id: set(tokenize(f"{c.doc.text}")) for c in cands}


def keyword_weights(keywords: list[str], tokens: Mapping[str, set[str]]) -> dict[str, float]:
    """IDF of each keyword within the candidate set (smoothed); a keyword no candidate has still counts."""
    n = max(1, len(tokens))
    df = Counter(k for toks in tokens.values() for k in keywords if k in toks)
    return {k: math.log(1.0 + n / (1.0 + df[k])) for k in keywords}


def coverage(keys: Mapping[str, float], toks: set[str]) -> float:
    total = sum(keys.values())
    return sum(w for k, w in keys.items() if k in toks) / total if total else 0.0


def mentions_time(text: str) -> bool:
    return _TIME_MENTION.search(text) is not None


def time_mention_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _TIME_MENTION.finditer(text)]


def in_window(ts: datetime, window: TimeWindow | None) -> bool:
    return window is not None and window.since <= ts <= window.until


def memory_score(
    similarity: float,
    w: RescoreWeights,
    *,
    age_days: float = 0.0,
    access_count: int = 0,
    graph_score: float = 0.0,
) -> float:
    """``similarity*w.similarity + access + recency decay + graph`` (doc 003's score; each term in [0, 1])."""
    access = math.log1p(min(access_count, w.max_access)) / math.log1p(w.max_access) if w.max_access else 0.0
    recency = math.exp(-math.log(2) * max(0.0, age_days) / w.recency_half_life_days)
    return (
        w.similarity * similarity + w.access * access + w.recency * recency + w.graph * min(graph_score, 1.0)
    )


def age_days(ts: datetime, now: datetime) -> float:
    return (now - ts).total_seconds() / 86400.0
