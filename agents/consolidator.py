"""Consolidator: Mem0-style ADD / UPDATE / DELETE / NOOP decisions for a topic's candidate memories.

Pure functions over pydantic models. Ids are derived from the candidate (``stable_id("mem", fact_id)``,
``stable_id("decision", fact_id)``) so re-applying the same distillation event changes nothing. Nothing is
physically deleted: UPDATE and DELETE invalidate the old version at the candidate's event time.

Modes (``ConsolidatorConfig.mode``): ``rules`` (default, deterministic), ``add-only`` (always ADD, NOOP only
for an already-applied candidate) and ``llm`` (:func:`decide_llm`, one call per topic, rules as fallback).
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache

from agents.extract_rules import MULTI_VALUED, split_sentences
from agents.llm import LLMClient, LLMError
from agents.prompts import consolidate_v1
from memstream.settings import ConsolidatorConfig
from retrieval.text import has_cjk, tokenize
from schemas import (
    CandidateFact,
    DecisionOp,
    DistillResult,
    MemoryDecision,
    MemoryKind,
    MemoryRecord,
    stable_id,
)

__all__ = [
    "candidates_from_result",
    "decide",
    "decide_batch",
    "decide_llm",
    "decision_id_for",
    "memory_id_for",
]

log = logging.getLogger(__name__)

Similar = Sequence[tuple[MemoryRecord, float]]
SimilarByCandidate = Mapping[str, Similar] | Sequence[Similar]


def memory_id_for(candidate: CandidateFact) -> str:
    return stable_id("mem", candidate.fact_id)


def decision_id_for(candidate: CandidateFact) -> str:
    return stable_id("decision", candidate.fact_id)


# ------------------------------------------------------------------------------------------ candidates


def candidates_from_result(
    result: DistillResult, message_times: Mapping[str, datetime] | None = None
) -> list[CandidateFact]:
    """Everything of a distillation worth storing, as candidates: facts, summary, title, Q&A and tasks.

    The summary's sources are the messages its sentences came from (matched against the facts, answers and
    tasks), not the whole topic. ``message_times`` (message id -> time), when given, dates Q&A and tasks
    exactly; otherwise the facts' times are used, then the topic's end.
    """
    times: dict[str, datetime] = {}
    for fact in result.facts:
        for mid in fact.source_message_ids[:1]:
            times.setdefault(mid, fact.event_time)
    times.update(message_times or {})

    def when(ids: Sequence[str]) -> datetime:
        known = [times[i] for i in ids if i in times]
        return max(known) if known else result.ended_at

    def make(
        key: tuple[object, ...], kind: MemoryKind, text: str, ids: Sequence[str], **kw: object
    ) -> CandidateFact:
        return CandidateFact(
            fact_id=stable_id(result.chat_id, result.topic_id, kind.value, *key), chat_id=result.chat_id,
            topic_id=result.topic_id, kind=kind, text=text.strip(), source_message_ids=list(ids), **kw,
        )  # fmt: skip

    out = list(result.facts)
    topic_entities = result.entities[:10]
    if result.summary.strip():
        out.append(make((result.summary,), MemoryKind.SUMMARY, result.summary, _summary_sources(result),
                        entities=topic_entities, event_time=result.ended_at))  # fmt: skip
    if result.title.strip() and result.source_message_ids:
        out.append(make((result.title,), MemoryKind.TITLE, result.title, result.source_message_ids,
                        entities=topic_entities, event_time=result.ended_at))  # fmt: skip
    for qa in result.qa_pairs:
        if qa.source_message_ids:
            out.append(make(tuple(qa.source_message_ids), MemoryKind.QA, f"Q: {qa.question} A: {qa.answer}",
                            qa.source_message_ids, event_time=when(qa.source_message_ids)))  # fmt: skip
    for task in result.tasks:
        if task.source_message_ids:
            kind = MemoryKind.DECISION if task.is_decision else MemoryKind.TASK
            out.append(make((task.text,), kind, _task_text(task.text, task.owner, task.due), task.source_message_ids,
                            subject=task.owner, event_time=when(task.source_message_ids)))  # fmt: skip
    return out


def _task_text(text: str, owner: str | None, due: datetime | None) -> str:
    cjk = has_cjk(text)
    parts = []
    if owner and owner not in text:
        parts.append(f"负责人：{owner}" if cjk else f"owner: {owner}")
    if due is not None:
        stamp = due.date().isoformat() if (due.hour, due.minute) == (0, 0) else due.strftime("%Y-%m-%d %H:%M")
        if stamp[:10] not in text:
            parts.append(f"截止：{stamp}" if cjk else f"due: {stamp}")
    if not parts:
        return text
    return f"{text}（{'；'.join(parts)}）" if cjk else f"{text} ({'; '.join(parts)})"


def _summary_sources(result: DistillResult) -> list[str]:
    items: list[tuple[set[str], list[str]]] = [
        (set(tokenize(f.text)), f.source_message_ids[:1]) for f in result.facts
    ]
    items += [
        (set(tokenize(f"{q.question} {q.answer}")), list(q.source_message_ids)) for q in result.qa_pairs
    ]
    items += [(set(tokenize(t.text)), list(t.source_message_ids)) for t in result.tasks]
    ids: list[str] = []
    for sentence in split_sentences(result.summary):
        tokens = set(tokenize(sentence))
        if not tokens:
            continue
        score, best = max(
            ((len(tokens & it) / len(tokens), src) for it, src in items if it), default=(0.0, [])
        )
        if score >= 0.5:
            ids.extend(best)
    return list(dict.fromkeys(ids)) or list(result.source_message_ids)


# ------------------------------------------------------------------------------------------- rules


def _norm(text: str | None) -> str:
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text or "").lower())


def _same_subject(a: str | None, b: str | None) -> bool:
    return bool(a and b) and _norm(a) == _norm(b)


def _value_in(text: str, value: str | None) -> bool:
    return bool(value) and _norm(value) in _norm(text)


def _keywords(text: str, subject: str | None) -> set[str]:
    return set(_token_counts(text)) - set(_token_counts(subject or ""))


@lru_cache(maxsize=16384)
def _token_counts(text: str) -> Counter[str]:
    return Counter(tokenize(text))  # cached: a batch compares every candidate with every earlier record


def lexical_similarity(a: str, b: str) -> float:
    """Cosine of token counts: the in-batch stand-in for embedding similarity."""
    ca, cb = _token_counts(a), _token_counts(b)
    dot = sum(ca[t] * cb[t] for t in ca.keys() & cb.keys())
    norm = math.sqrt(sum(v * v for v in ca.values())) * math.sqrt(sum(v * v for v in cb.values()))
    return dot / norm if norm else 0.0


def _record(
    c: CandidateFact,
    source_event_id: str,
    *,
    memory_id: str | None = None,
    version: int = 1,
    valid_to: datetime | None = None,
    superseded_by: str | None = None,
    text: str | None = None,
) -> MemoryRecord:
    return MemoryRecord(
        memory_id=memory_id or memory_id_for(c),
        chat_id=c.chat_id,
        kind=c.kind,
        text=text or c.text,
        speaker=c.speaker,
        subject=c.subject,
        attribute=c.attribute,
        entities=list(c.entities),
        topic_id=c.topic_id,
        valid_from=c.event_time,
        valid_to=valid_to,
        superseded_by=superseded_by,
        version=version,
        source_message_ids=list(c.source_message_ids),
        source_event_id=source_event_id,
    )


def _decision(
    c: CandidateFact,
    op: DecisionOp,
    reason: str,
    source_event_id: str,
    *,
    target: MemoryRecord | None = None,
    record: MemoryRecord | None = None,
) -> MemoryDecision:
    return MemoryDecision(
        decision_id=decision_id_for(c),
        op=op,
        chat_id=c.chat_id,
        target_memory_id=target.memory_id if target is not None else None,
        record=record,
        reason=reason,
        source_event_id=source_event_id,
        candidate_fact_id=c.fact_id,
        at=c.event_time,
    )


def _update(
    c: CandidateFact, target: MemoryRecord, reason: str, source_event_id: str, text: str | None = None
) -> MemoryDecision:
    version = target.version + 1
    mem_id = memory_id_for(c)
    if mem_id == target.memory_id:  # the same fact re-distilled with new wording: a new version of itself
        mem_id = stable_id("mem", c.fact_id, version)
    record = _record(c, source_event_id, memory_id=mem_id, version=version, text=text)
    return _decision(c, DecisionOp.UPDATE, reason, source_event_id, target=target, record=record)


def decide(
    candidate: CandidateFact, similar: Similar, cfg: ConsolidatorConfig, source_event_id: str
) -> MemoryDecision:
    """One candidate against its most similar stored memories (``(record, cosine)`` pairs, best first).

    ``rules`` mode, in order: already applied -> NOOP; normalised-text duplicate -> NOOP; negation or
    retraction of a live memory about the same subject (same slot, or similar and sharing keywords) ->
    DELETE; same subject and slot with the same value -> NOOP, with another value of a single-valued slot ->
    UPDATE if newer (an older one is stored as already-superseded history); same subject and cosine >=
    ``noop_similarity`` -> NOOP; a newer summary/title of the same topic -> UPDATE; a more detailed version
    of a similar memory -> UPDATE; else ADD.
    """
    c = candidate
    mem_id = memory_id_for(c)
    pairs = [(r, s) for r, s in similar if r.chat_id == c.chat_id]
    for r, _ in pairs:
        if r.memory_id == mem_id or (r.source_event_id == source_event_id and _norm(r.text) == _norm(c.text)):
            return _decision(
                c, DecisionOp.NOOP, "already applied (same candidate)", source_event_id, target=r
            )
    live = [(r, s) for r, s in pairs if r.live]
    if cfg.mode == "add-only":
        return _decision(
            c, DecisionOp.ADD, "add-only mode", source_event_id, record=_record(c, source_event_id)
        )
    for r, _ in live:
        if _norm(r.text) == _norm(c.text):
            return _decision(
                c, DecisionOp.NOOP, f"duplicate of memory {r.memory_id}", source_event_id, target=r
            )
    if c.negated and c.kind == MemoryKind.FACT:
        target = _retraction_target(c, live, cfg)
        if target is not None:
            return _decision(
                c, DecisionOp.DELETE, f"'{c.text}' retracts '{target.text}'", source_event_id, target=target
            )
        return _decision(
            c,
            DecisionOp.ADD,
            "negation with no matching live memory",
            source_event_id,
            record=_record(c, source_event_id),
        )
    slot = _slot_decision(c, live, source_event_id)
    if slot is not None:
        return slot
    for r, s in live:
        same_subject = _same_subject(r.subject, c.subject) or not (r.subject or c.subject)
        other_value = bool(c.attribute) and r.attribute == c.attribute and not _value_in(r.text, c.value)
        if r.kind == c.kind and s >= cfg.noop_similarity and same_subject and not other_value:
            return _decision(
                c,
                DecisionOp.NOOP,
                f"near-duplicate (cosine {s:.2f}) of {r.memory_id}",
                source_event_id,
                target=r,
            )
    if c.kind in (MemoryKind.SUMMARY, MemoryKind.TITLE):
        same_topic = [r for r, _ in live if r.kind == c.kind and r.topic_id == c.topic_id]
        if same_topic:
            return _update(c, same_topic[0], f"newer {c.kind.value} of topic {c.topic_id}", source_event_id)
    for r, s in live:
        if (
            c.kind == MemoryKind.FACT
            and r.kind == c.kind
            and _same_subject(r.subject, c.subject)
            and s >= cfg.update_similarity
            and (c.attribute is None or c.attribute == r.attribute)
            and c.event_time >= r.valid_from
            and _keywords(r.text, r.subject) < _keywords(c.text, c.subject)
        ):
            return _update(c, r, f"adds detail to '{r.text}'", source_event_id)
    return _decision(
        c, DecisionOp.ADD, "new information", source_event_id, record=_record(c, source_event_id)
    )


def _retraction_target(c: CandidateFact, live: Similar, cfg: ConsolidatorConfig) -> MemoryRecord | None:
    best: tuple[float, MemoryRecord] | None = None
    for r, s in live:
        if r.kind != MemoryKind.FACT or not _same_subject(r.subject, c.subject):
            continue
        if c.value and r.attribute and not _value_in(r.text, c.value):
            continue
        same_slot = bool(c.attribute) and r.attribute == c.attribute
        shared = _keywords(r.text, r.subject) & _keywords(c.text, c.subject)
        similar = (
            s >= cfg.update_similarity and len(shared) >= 1 and (not c.value or _value_in(r.text, c.value))
        )
        score = s + same_slot
        if (same_slot or similar) and (best is None or score > best[0]):
            best = (score, r)
    return best[1] if best else None


def _slot_decision(c: CandidateFact, live: Similar, source_event_id: str) -> MemoryDecision | None:
    if not (c.attribute and c.subject) or c.kind != MemoryKind.FACT:
        return None
    same = [
        r
        for r, _ in live
        if r.kind == MemoryKind.FACT and r.attribute == c.attribute and _same_subject(r.subject, c.subject)
    ]
    if not same:
        return None
    if c.value and any(_value_in(r.text, c.value) for r in same):
        known = next(r for r in same if _value_in(r.text, c.value))
        return _decision(
            c,
            DecisionOp.NOOP,
            f"{c.subject} {c.attribute}={c.value} is already known",
            source_event_id,
            target=known,
        )
    if c.attribute.split(":")[0] in MULTI_VALUED:
        return None
    target = max(same, key=lambda r: r.valid_from)
    if c.event_time >= target.valid_from:
        return _update(
            c, target, f"{c.subject} {c.attribute} changed: '{target.text}' -> '{c.text}'", source_event_id
        )
    record = _record(c, source_event_id, valid_to=target.valid_from, superseded_by=target.memory_id)
    return _decision(
        c,
        DecisionOp.ADD,
        f"older than the live {c.attribute} value; stored as history",
        source_event_id,
        record=record,
    )


# ------------------------------------------------------------------------------------------- batches


class _Batch:
    """What earlier decisions of the same topic did, so later candidates see it (in-batch supersession)."""

    def __init__(self) -> None:
        self.written: dict[str, MemoryRecord] = {}
        self.replaced: dict[str, str | None] = {}  # invalidated memory id -> its replacement (None: deleted)

    def similar(self, c: CandidateFact, stored: Similar) -> list[tuple[MemoryRecord, float]]:
        seen = set(self.written)
        pairs = [(r, s) for r, s in stored if r.memory_id not in self.replaced and r.memory_id not in seen]
        pairs += [(r, lexical_similarity(c.text, r.text)) for r in self.written.values()]
        return sorted(pairs, key=lambda rs: -rs[1])

    def current(self, memory_id: str) -> str | None:
        while memory_id in self.replaced:
            nxt = self.replaced[memory_id]
            if nxt is None:
                return None
            memory_id = nxt
        return memory_id

    def apply(self, d: MemoryDecision) -> None:
        if d.op in (DecisionOp.UPDATE, DecisionOp.DELETE) and d.target_memory_id:
            self.replaced[d.target_memory_id] = d.record.memory_id if d.record else None
            self.written.pop(d.target_memory_id, None)
        if d.record is not None and d.record.live:
            self.written[d.record.memory_id] = d.record


def _similar_for(similar_by_candidate: SimilarByCandidate, c: CandidateFact, i: int) -> Similar:
    if isinstance(similar_by_candidate, Mapping):
        return similar_by_candidate.get(c.fact_id, ())
    return similar_by_candidate[i] if i < len(similar_by_candidate) else ()


def decide_batch(
    candidates: Sequence[CandidateFact],
    similar_by_candidate: SimilarByCandidate,
    cfg: ConsolidatorConfig,
    source_event_id: str,
) -> list[MemoryDecision]:
    """Decide a topic's candidates in order; each sees the memories the earlier ones wrote or invalidated.

    ``similar_by_candidate`` maps ``fact_id`` -> similar stored memories (or is a list aligned with
    ``candidates``). A later message updating an earlier one of the same topic yields ADD then UPDATE.
    """
    batch = _Batch()
    decisions: list[MemoryDecision] = []
    for i, c in enumerate(candidates):
        d = decide(c, batch.similar(c, _similar_for(similar_by_candidate, c, i)), cfg, source_event_id)
        batch.apply(d)
        decisions.append(d)
    return decisions


# ----------------------------------------------------------------------------------------------- LLM


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
    stored = [_similar_for(similar_by_candidate, c, i) for i, c in enumerate(candidates)]
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
    batch = _Batch()
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
    c: CandidateFact, d: consolidate_v1.Decision, memories: list[MemoryRecord], batch: _Batch, sid: str
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
        return _decision(c, DecisionOp.ADD, reason, sid, record=_record(c, sid))
    if d.op == "NOOP":
        return _decision(c, DecisionOp.NOOP, reason, sid, target=target)
    if target is None:
        return None
    if d.op == "DELETE":
        return _decision(c, DecisionOp.DELETE, reason, sid, target=target)
    return _update(c, target, reason, sid, text=(d.text or "").strip() or None)
