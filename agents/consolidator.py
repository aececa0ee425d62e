"""Consolidator: Mem0-style ADD / UPDATE / DELETE / NOOP decisions for a topic's candidate memories.

Pure functions over pydantic models. Ids are derived from the candidate (``stable_id("mem", fact_id)``,
``stable_id("decision", fact_id)``) so re-applying the same distillation event changes nothing. Nothing is
physically deleted: UPDATE and DELETE invalidate the old version at the candidate's event time.

Modes (``ConsolidatorConfig.mode``): ``rules`` (default, deterministic), ``add-only`` (always ADD, NOOP only
for an already-applied candidate) and ``llm`` (:func:`decide_llm`, one call per topic, rules as fallback).

The pieces live in :mod:`agents.consolidate`: ``candidates`` (what a distillation offers), ``records`` (ids,
records, text comparisons), ``rules`` (the rule decisions, one candidate and a batch); this module is the
public entry and holds the LLM path.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from agents.config import ConsolidatorConfig
from agents.consolidate.candidates import candidates_from_result
from agents.consolidate.records import (
    Similar,
    SimilarByCandidate,
    decision_id_for,
    lexical_similarity,
    make_decision,
    make_record,
    memory_id_for,
    update_decision,
)
from agents.consolidate.rules import Batch, decide, decide_batch, similar_for
from agents.llm import LLMClient, LLMError
from agents.prompts import consolidate_v1
from schemas import CandidateFact, DecisionOp, MemoryDecision, MemoryRecord, stable_id

__all__ = [
    "candidates_from_result",
    "decide",
    "decide_batch",
    "decide_llm",
    "decision_id_for",
    "lexical_similarity",
    "memory_id_for",
]

log = logging.getLogger(__name__)


async def decide_llm(
    candidates: Sequence[CandidateFact],
    similar_by_candidate: SimilarByCandidate,
    client: LLMClient,
    cfg: ConsolidatorConfig,
    source_event_id: str | None = None,
) -> tuple[list[MemoryDecision], int]:
    """One LLM call for all of a topic's candidates; the rules decide whatever the model gets wrong.

    Returns the decisions (in candidate order) and the number of LLM calls. Never raises: an unusable reply
    falls back to :func:`decide_batch`. Candidates already applied are NOOPed without asking the model.
    """
    if not candidates:
        return [], 0
    sid = source_event_id or stable_id("consolidate", candidates[0].chat_id, candidates[0].topic_id)
    stored = [similar_for(similar_by_candidate, c, i) for i, c in enumerate(candidates)]
    rules_cfg = cfg.model_copy(update={"mode": "rules"})
    fresh = [
        i for i, c in enumerate(candidates) if not any(r.memory_id == memory_id_for(c) for r, _ in stored[i])
    ]
    if not fresh:
        return decide_batch(candidates, stored, rules_cfg, sid), 0
    memories = _memories_for_prompt(stored, cfg.llm_max_memories)
    shown = [candidates[i] for i in fresh]
    try:
        data, calls = await client.complete_json_counted(
            consolidate_v1.build(shown, memories),
            consolidate_v1.SCHEMA_NAME,
            consolidate_v1.schema(),
            validate=consolidate_v1.Response.model_validate,
        )
    except LLMError as exc:
        log.warning("consolidate %s: LLM failed (%s); rules fallback", candidates[0].topic_id, exc)
        return decide_batch(candidates, stored, rules_cfg, sid), exc.calls
    try:
        return _apply_llm(candidates, stored, data, fresh, memories, rules_cfg, sid), calls
    except Exception:  # never raise: a reply we cannot map falls back like a failed call
        log.exception("consolidate %s: unusable LLM reply; rules fallback", candidates[0].topic_id)
        return decide_batch(candidates, stored, rules_cfg, sid), calls


def _apply_llm(
    candidates: Sequence[CandidateFact],
    stored: list[Similar],
    data: dict[str, object],
    fresh: list[int],
    memories: list[MemoryRecord],
    rules_cfg: ConsolidatorConfig,
    sid: str,
) -> list[MemoryDecision]:
    answers: dict[int, consolidate_v1.Decision] = {}
    for d in consolidate_v1.Response.model_validate(data).decisions:
        if 1 <= d.candidate <= len(fresh):
            answers.setdefault(fresh[d.candidate - 1], d)
    batch = Batch()
    decisions: list[MemoryDecision] = []
    for i, c in enumerate(candidates):
        similar = batch.similar(c, stored[i])
        answer = answers.get(i)
        decision = _from_llm(c, answer, memories, batch, sid) if answer is not None else None
        decision = decision or decide(c, similar, rules_cfg, sid)
        batch.apply(decision)
        decisions.append(decision)
    return decisions


def _memories_for_prompt(stored: Sequence[Similar], limit: int) -> list[MemoryRecord]:
    best: dict[str, tuple[float, MemoryRecord]] = {}
    for pairs in stored:
        for r, s in pairs:
            if r.live and (r.memory_id not in best or s > best[r.memory_id][0]):
                best[r.memory_id] = (s, r)
    return [r for _, r in sorted(best.values(), key=lambda sr: (-sr[0], sr[1].memory_id))[:limit]]


def _from_llm(
    c: CandidateFact, d: consolidate_v1.Decision, memories: list[MemoryRecord], batch: Batch, sid: str
) -> MemoryDecision | None:
    """The model's decision as a :class:`MemoryDecision`, or None when it names no valid live target."""
    reason = f"llm: {d.reason}".strip() if d.reason else "llm"
    target: MemoryRecord | None = None
    if d.target is not None and 1 <= d.target <= len(memories):
        current = batch.current(memories[d.target - 1].memory_id)
        target = (
            memories[d.target - 1]
            if current == memories[d.target - 1].memory_id
            else batch.written.get(current or "")
        )
    if d.op == "ADD":
        return make_decision(c, DecisionOp.ADD, reason, sid, record=make_record(c, sid))
    if d.op == "NOOP":
        return make_decision(c, DecisionOp.NOOP, reason, sid, target=target)
    if target is None:
        return None
    if d.op == "DELETE":
        return make_decision(c, DecisionOp.DELETE, reason, sid, target=target)
    return update_decision(c, target, reason, sid, text=(d.text or "").strip() or None)
