"""The abstention check (pure), run after every strategy.

Two questions, in order:

1. **Does anything match at all?** The best keyword coverage among the top candidates and the best cosine
   both stay under calibrated floors -> ``no_match``: return the explicit no-relevant-memory signal instead of
   K weak items.
2. **Is what matches about this person?** When the question names one participant, weigh how much of the
   matching evidence (keyword coverage of each top candidate, discounted by rank) was stated by that
   participant and how much by anyone else (a turn that asks a question states nothing). Memory that matches only in someone else's words
   (``Caroline`` adopting, asked as ``Melanie`` adopting) is not memory about the person asked ->
   ``other_subject``. The score is ``(others - named) / (others + named)`` in [-1, 1]; above ``threshold``
   abstains.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from retrieval.router.candidates import Cand
from retrieval.router.recipes import AbstentionConfig
from retrieval.router.scoring import coverage


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    abstain: bool
    reason: Literal["no_match", "other_subject"] | None = None
    score: float = 0.0  # attribution score (others - named), in [-1, 1]
    named_evidence: float = 0.0
    other_evidence: float = 0.0
    best_coverage: float = 0.0
    best_cosine: float = 0.0
    subject: str | None = None
    other: str | None = None


_TRAILING_NOTE = re.compile(r"\s*\[[^\]]*\]\s*$")


def is_question(text: str) -> bool:
    """A turn that asks (ends with a question mark, ignoring a trailing [annotation]) states nothing."""
    return _TRAILING_NOTE.sub("", text).rstrip().endswith(("?", "？"))


def said_by(c: Cand, participants: list[str]) -> str | None:
    """Who said the item: its speaker, or for a Q&A pair the answerer (``... A: Name: ...``)."""
    if c.doc.speaker:
        return c.doc.speaker
    if c.doc.kind == "qa":
        m = re.search(r"\bA: ([^:]{1,40}):", c.doc.text)
        if m and m[1] in participants:
            return m[1]
    return None


def check(
    ranked: list[Cand],
    names: list[str],
    participants: list[str],
    tokens: dict[str, set[str]],
    keys: dict[str, float],
    cfg: AbstentionConfig,
) -> Verdict:
    top = ranked[: cfg.window]
    covs = {c.doc_id: coverage(keys, tokens.get(c.doc_id, set())) for c in top}
    best_cov = max(covs.values(), default=0.0)
    best_cos = max((c.scores.get("cosine", 0.0) for c in top), default=0.0)
    base = {"best_coverage": round(best_cov, 4), "best_cosine": round(best_cos, 4)}
    if not top or (keys and best_cov < cfg.min_coverage and best_cos < cfg.min_cosine):
        return Verdict(abstain=cfg.enabled, reason="no_match", score=1.0, **base)
    if len(names) != 1 or len(set(participants)) < 2:
        return Verdict(abstain=False, score=-1.0, **base)
    subject = names[0]
    named = other = 0.0
    by_other: dict[str, float] = {}
    for rank, c in enumerate(top):
        who = said_by(c, participants)
        if who is None or (c.doc.kind == "turn" and is_question(c.doc.text)):
            continue
        weight = covs[c.doc_id] / (1.0 + cfg.rank_decay * rank)
        if who == subject:
            named += weight
        else:
            other += weight
            by_other[who] = by_other.get(who, 0.0) + weight
    score = (other - named) / (other + named) if other > 0 else -1.0
    other_name = max(by_other, key=by_other.get) if by_other else None
    return Verdict(
        abstain=cfg.enabled and score > cfg.threshold,
        reason="other_subject" if score > cfg.threshold else None,
        score=round(score, 4),
        named_evidence=round(named, 4),
        other_evidence=round(other, 4),
        subject=subject,
        other=other_name,
        **base,
    )
