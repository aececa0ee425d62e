"""Multi-round retrieval decisions (pure): is what we have enough, and if not, what to search for next.

The non-LLM confidence estimate (doc 002's "信息够吗？" without an LLM) looks at the top-k items:

- keyword coverage: the share of the question's content (IDF-weighted) carried by at least one item;
- entities: every participant the question names is the speaker of at least one item;
- time: a time window has an item inside it; a "when" question has an item that states a time;
- margin: how clearly the best item stands above the k-th.

The follow-up query asks for what is missing: the uncovered keywords with the names, or — when every
keyword is covered but confidence is still low — the feedback terms of the best items (pseudo-relevance
feedback), excluding what was already found.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from language.text import tokenize
from language.time.windows import TimeWindow
from retrieval.router.candidates import Cand
from retrieval.router.query import QueryAnalysis
from retrieval.router.scoring import in_window, mentions_time


class Confidence(BaseModel):
    model_config = ConfigDict(frozen=True)

    value: float
    keyword_coverage: float
    entities: float
    time: float
    margin: float
    missing: list[str] = Field(default_factory=list)


def confidence(
    top: list[tuple[Cand, float]],
    analysis: QueryAnalysis,
    tokens: dict[str, set[str]],
    keys: dict[str, float],
    window: TimeWindow | None,
) -> Confidence:
    seen = set().union(*(tokens.get(c.doc_id, set()) for c, _ in top)) if top else set()
    total = sum(keys.values())
    missing = [k for k in keys if k not in seen]
    kw = (sum(w for k, w in keys.items() if k in seen) / total) if total else 1.0
    speakers = {(c.doc.speaker or "") for c, _ in top}
    texts = " ".join(c.doc.text for c, _ in top)
    named = [n for n in analysis.names if n in speakers or n in texts]
    ent = len(named) / len(analysis.names) if analysis.names else 1.0
    tq = analysis.time
    time = 1.0
    if window is not None:
        time = float(any(in_window(c.doc.ts, window) for c, _ in top))
    elif tq.asks_when:
        time = float(any(mentions_time(c.doc.text) for c, _ in top))
    margin = 0.0
    if len(top) >= 2 and top[0][1] > 0:
        margin = max(0.0, min(1.0, (top[0][1] - top[-1][1]) / top[0][1]))
    value = 0.5 * kw + 0.2 * ent + 0.2 * time + 0.1 * margin
    return Confidence(value=round(value, 4), keyword_coverage=round(kw, 4), entities=ent, time=time,
                      margin=round(margin, 4), missing=missing)  # fmt: skip


def feedback_terms(top: list[Cand], analysis: QueryAnalysis, n: int) -> list[str]:
    """The terms most frequent across the best items that the question does not already contain."""
    asked = set(tokenize(analysis.text)) | {t for name in analysis.names for t in tokenize(name)}
    counts: Counter[str] = Counter()
    for c in top:
        counts.update({t for t in tokenize(c.doc.text) if t not in asked and len(t) > 2 and not t.isdigit()})
    return [t for t, k in counts.most_common() if k >= 2][:n]


def follow_up(conf: Confidence, top: list[Cand], analysis: QueryAnalysis, n_feedback: int) -> str | None:
    """The next round's query, or None when there is nothing new to ask for."""
    names = " ".join(analysis.names)
    if conf.missing:
        return f"{names} {' '.join(conf.missing)}".strip()
    terms = feedback_terms(top, analysis, n_feedback)
    if not terms:
        return None
    return f"{names} {' '.join(analysis.keywords)} {' '.join(terms)}".strip()


def merge(
    scored: list[tuple[Cand, float]],
    new: list[Cand],
    tokens: dict[str, set[str]],
    missing: list[str],
    k: int,
    max_new: int,
) -> tuple[list[tuple[Cand, float]], list[str]]:
    """Insert up to ``max_new`` of a round's items (best first) that are not in the top ``k`` yet and carry a
    missing keyword (any new item when nothing was missing) just before the top-``k`` tail; the displaced
    tail moves down. Returns the new ranking and the ids added. Pure."""
    top_ids = {c.doc_id for c, _ in scored[:k]}
    fresh = [
        c
        for c in new
        if c.doc_id not in top_ids and (not missing or set(missing) & tokens.get(c.doc_id, set()))
    ]
    fresh = fresh[:max_new]
    if not fresh:
        return scored, []
    fresh_ids = {c.doc_id for c in fresh}
    rest = [cs for cs in scored if cs[0].doc_id not in fresh_ids]
    cut = max(0, min(k, len(rest)) - len(fresh))
    floor = rest[cut - 1][1] if cut else (rest[0][1] if rest else 0.0)
    inserted = [(c, floor - 1e-6 * (i + 1)) for i, c in enumerate(fresh)]
    return rest[:cut] + inserted + rest[cut:], [c.doc_id for c in fresh]
