"""The per-type rankers (pure): candidates + query analysis + recipe -> a ranking with notes.

- factual extraction: entity/keyword-focused rerank of the fused hybrid candidates;
- temporal reasoning: + items that state a time, time-window boost, before/after anchors, event-pair
  comparison lines, chronological rendering;
- knowledge update: same-subject groups newest first, superseded versions below their successor, the
  replaced value annotated;
- multi-hop: + sub-query and feedback-round candidates, and set/count aggregate lines.

The factual, knowledge-update and multi-hop rankers lift an item that states a value of the kind the question
asks for (a quantity, a time, a weekday, a clock time: ``answer_type``), whatever words it shares with it; the
temporal ranker has its own lift for lines that state a time.

Abstention is not a ranker: its check runs after whichever ranking was chosen (``abstain.py``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from language.text import count_tokens, text_cache
from language.time.windows import TimeWindow
from retrieval.router.answer_type import Kind, states_kind
from retrieval.router.candidates import Cand
from retrieval.router.multihop import person_focus
from retrieval.router.query import QueryAnalysis
from retrieval.router.recipes import StrategyRecipe
from retrieval.router.scoring import age_days, coverage, in_window, memory_score, mentions_time

# pure over the text: the same candidates come back question after question (a regex scan of each, each time)
_mentions_time = text_cache(1 << 14)(mentions_time)


@dataclass
class Context:
    """What the rankers read besides the candidates (assembled by the pipeline)."""

    analysis: QueryAnalysis
    tokens: dict[str, set[str]]
    keys: dict[str, float]
    now: datetime
    window: TimeWindow | None = None  # padded
    anchor: Cand | None = None  # the event a before/after relation refers to
    events: list[tuple[str, Cand]] = field(default_factory=list)  # compared events and their best item
    successor: dict[str, str] = field(default_factory=dict)  # superseded doc id -> live doc id
    stale_sources: dict[str, str] = field(default_factory=dict)  # message id -> superseding doc id
    graph_scores: dict[str, float] = field(default_factory=dict)
    access_counts: dict[str, int] = field(default_factory=dict)
    mean_tokens: float = 0.0  # mean item length among the candidates
    k: int = 10
    asked_kind: Kind | None = None  # the kind of value the question asks for (answer_type.asked_kind)
    sub_best: list[Cand] = field(
        default_factory=list
    )  # the best item of each sub-query (one per named entity...)


@dataclass
class Ranking:
    strategy: str
    scored: list[tuple[Cand, float]]
    notes: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    chronological: bool = False


def base_score(c: Cand, ctx: Context, r: StrategyRecipe) -> float:
    """Fused rank score + keyword coverage + time window, through the recipe's memory score."""
    cov = coverage(ctx.keys, ctx.tokens.get(c.doc_id, set()))
    length = count_tokens(c.doc.text)
    if r.coverage_length_norm and length > ctx.mean_tokens > 0:  # a long item covers more words by chance
        cov *= (ctx.mean_tokens / length) ** r.coverage_length_norm
    s = c.fused + r.w_coverage * cov - r.w_length * length / 50.0
    if ctx.window is not None and in_window(c.doc.ts, ctx.window):
        s += r.w_window
    # not for a place: in a chat of plans nearly every line names one (truth-dev top item 0.68 -> 0.65)
    if r.w_asked_kind and ctx.asked_kind not in (None, "place") and states_kind(c.doc.text, ctx.asked_kind, ctx.analysis.text):
        s += r.w_asked_kind
    return memory_score(
        s,
        r.rescore,
        age_days=age_days(c.doc.ts, ctx.now),
        access_count=ctx.access_counts.get(c.doc_id, 0),
        graph_score=ctx.graph_scores.get(c.doc_id, 0.0),
    )


def _sorted(scores: dict[str, float], cands: dict[str, Cand]) -> list[tuple[Cand, float]]:
    """Best score first; ties in the candidates' order."""
    position = {doc_id: i for i, doc_id in enumerate(cands)}
    return sorted(((cands[i], s) for i, s in scores.items()), key=lambda cs: (-cs[1], position[cs[0].doc_id]))


def rank_factual(cands: list[Cand], ctx: Context, r: StrategyRecipe) -> Ranking:
    by_id = {c.doc_id: c for c in cands}
    return Ranking(r.name, _sorted({c.doc_id: base_score(c, ctx, r) for c in cands}, by_id))


def rank_temporal(cands: list[Cand], ctx: Context, r: StrategyRecipe) -> Ranking:
    tq = ctx.analysis.time
    by_id = {c.doc_id: c for c in cands}
    scores = {c.doc_id: base_score(c, ctx, r) for c in cands}
    if tq.asks_when or tq.asks_order or tq.asks_latest:
        for c in cands:
            if _mentions_time(c.doc.text):
                scores[c.doc_id] += r.w_time_mention
    if tq.asks_latest:
        newest = sorted(cands, key=lambda c: c.doc.ts, reverse=True)[:3]
        for i, c in enumerate(newest):
            scores[c.doc_id] += r.w_time_mention * (1.0 - i / 3)
    notes: dict[str, str] = {}
    lines: list[str] = []
    if ctx.anchor is not None and tq.relation:
        at = ctx.anchor.doc.ts
        lines.append(f"[anchor] {ctx.anchor.doc.text[:120]} ({at:%Y-%m-%d})")
        for c in cands:
            if c.doc_id != ctx.anchor.doc_id:
                ok = c.doc.ts <= at if tq.relation == "before" else c.doc.ts >= at
                scores[c.doc_id] += r.w_window if ok else -r.w_window
        scores[ctx.anchor.doc_id] = max(scores.values()) + 1e-6
    if len(ctx.events) >= 2:
        ordered = sorted(ctx.events, key=lambda e: e[1].doc.ts)
        lines.append("[order] " + " -> ".join(f"{name} ({c.doc.ts:%Y-%m-%d})" for name, c in ordered))
        top = max(scores.values())
        for i, (_, c) in enumerate(ordered):
            scores[c.doc_id] = top + 1e-3 * (len(ordered) - i)
            notes[c.doc_id] = f"event {i + 1} of {len(ordered)} in time"
    return Ranking(r.name, _sorted(scores, by_id), notes, lines, chronological=r.chronological)


def _subject(c: Cand) -> str:
    return (c.doc.speaker or "").lower()


def rank_knowledge_update(cands: list[Cand], ctx: Context, r: StrategyRecipe) -> Ranking:
    """Within each subject, the relevant items newest first; superseded ones below what replaced them."""
    by_id = {c.doc_id: c for c in cands}
    scores = {c.doc_id: base_score(c, ctx, r) for c in cands}
    covs = {c.doc_id: coverage(ctx.keys, ctx.tokens.get(c.doc_id, set())) for c in cands}
    best = max(covs.values(), default=0.0)
    groups: dict[str, list[Cand]] = defaultdict(list)
    for c in cands:
        if best > 0 and covs[c.doc_id] >= r.group_coverage * best:
            groups[_subject(c)].append(c)
    for group in groups.values():
        top = max(scores[c.doc_id] for c in group)
        newest_first = sorted(group, key=lambda c: c.doc.ts, reverse=True)
        for i, c in enumerate(newest_first):  # newest gets the group's best score (+ a bonus), older decay
            scores[c.doc_id] = max(scores[c.doc_id], top) + r.w_newer * (1.0 - i / max(1, len(group)))
    notes: dict[str, str] = {}
    for c in cands:
        new_id = ctx.successor.get(c.doc_id)
        stale = [ctx.stale_sources[m] for m in c.doc.source_message_ids if m in ctx.stale_sources]
        if new_id is None and stale and c.doc.valid_to is None and c.doc.kind == "turn":
            new_id = stale[0]
        if new_id is None or new_id == c.doc_id:
            continue
        newer = by_id.get(new_id)
        if newer is not None:
            scores[new_id] = max(scores[new_id], scores[c.doc_id]) + 1e-3
            scores[c.doc_id] = min(scores[c.doc_id], scores[new_id] - r.w_newer - 1e-3)
            notes[new_id] = _join(notes.get(new_id), f"replaced: {c.doc.text[:100]} ({_until(c)})")
        notes[c.doc_id] = _join(
            notes.get(c.doc_id), "superseded" + (f" by: {newer.doc.text[:100]}" if newer else "")
        )
    return Ranking(r.name, _sorted(scores, by_id), notes)


def _until(c: Cand) -> str:
    return f"until {c.doc.valid_to:%Y-%m-%d}" if c.doc.valid_to else f"said {c.doc.ts:%Y-%m-%d}"


def _join(a: str | None, b: str) -> str:
    return f"{a}; {b}" if a else b


def rank_multi_hop(cands: list[Cand], ctx: Context, r: StrategyRecipe) -> Ranking:
    """Factual ranking, then each sub-query's best item is guaranteed a place in the top k (a question about
    two people, or about a set, must not be answered from one person's or one session's items only)."""
    by_id = {c.doc_id: c for c in cands}
    scores = {c.doc_id: base_score(c, ctx, r) for c in cands}
    ranked = sorted(scores.values(), reverse=True)
    if ranked and ctx.sub_best and r.reserve_subqueries:
        floor = ranked[min(len(ranked), ctx.k) - 1]
        unique = {c.doc_id: c for c in ctx.sub_best if c.doc_id in scores}
        reserved = list(unique.values())[: max(1, ctx.k // 2)]
        for i, c in enumerate(reserved):
            scores[c.doc_id] = max(scores[c.doc_id], floor + 1e-3 * (len(reserved) - i))
    scored = _sorted(scores, by_id)
    if r.w_other_person or r.w_focal:
        scored = person_focus(scored, ctx.analysis, r.w_other_person, r.w_focal)
    return Ranking(r.name, scored)


def aggregate_lines(ranked: list[Cand], ctx: Context, limit: int = 3) -> list[str]:
    """Per focal keyword: how many of the items carry it, on how many distinct dates, and which dates."""
    lines = []
    keys = sorted(ctx.keys, key=lambda k: -ctx.keys[k])[:limit]
    for k in keys:
        hits = [c for c in ranked if k in ctx.tokens.get(c.doc_id, set())]
        if len(hits) < 2:
            continue
        dates = sorted({c.doc.ts.date() for c in hits})
        shown = ", ".join(f"{d:%Y-%m-%d}" for d in dates[:6]) + (" ..." if len(dates) > 6 else "")
        lines.append(f"[set] '{k}': {len(hits)} items on {len(dates)} dates ({shown})")
    return lines


RANKERS = {
    "factual_extraction": rank_factual,
    "temporal_reasoning": rank_temporal,
    "knowledge_update": rank_knowledge_update,
    "multi_hop": rank_multi_hop,
}


def fuse_rankings(rankings: list[tuple[Ranking, float]], rrf_k: int = 10) -> Ranking:
    """Weighted RRF of several strategies' rankings (weights: the classifier's probabilities). Pure."""
    if len(rankings) == 1:
        return rankings[0][0]
    scores: dict[str, float] = defaultdict(float)
    cands: dict[str, Cand] = {}
    for ranking, weight in rankings:
        for rank, (c, _) in enumerate(ranking.scored, start=1):
            scores[c.doc_id] += weight / (rrf_k + rank)
            cands.setdefault(c.doc_id, c)
    lead = rankings[0][0]
    notes: dict[str, str] = {}
    lines: list[str] = []
    for ranking, _ in rankings:
        for k, v in ranking.notes.items():
            notes[k] = _join(notes.get(k), v) if notes.get(k) != v else v
        lines.extend(x for x in ranking.lines if x not in lines)
    name = "+".join(f"{rk.strategy}:{w:.2f}" for rk, w in rankings)
    return Ranking(name, _sorted(dict(scores), cands), notes, lines, chronological=lead.chronological)
