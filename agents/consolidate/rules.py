"""The ``rules`` and ``add-only`` decisions: one candidate, then a topic's candidates in order."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agents.config import ConsolidatorConfig
from agents.consolidate.plan_context import with_event
from agents.consolidate.records import (
    Similar,
    SimilarByCandidate,
    holds_value,
    keywords,
    lexical_similarity,
    make_decision,
    make_record,
    memory_id_for,
    norm_text,
    same_subject,
    update_decision,
    value_in,
)
from language.extract.event_slots import is_plan_change
from language.extract.person import OUR_WORDS
from language.extract.slots import MULTI_VALUED, instead_of, is_called_off, states_change
from language.text import extract_keywords
from schemas import CandidateFact, DecisionOp, MemoryDecision, MemoryKind, MemoryRecord

__all__ = ["Batch", "decide", "decide_batch", "similar_for"]


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
        if r.memory_id == mem_id or (
            r.source_event_id == source_event_id and norm_text(r.text) == norm_text(c.text)
        ):
            return make_decision(
                c, DecisionOp.NOOP, "already applied (same candidate)", source_event_id, target=r
            )
    live = [(r, s) for r, s in pairs if r.live]
    if cfg.mode == "add-only":
        return make_decision(
            c, DecisionOp.ADD, "add-only mode", source_event_id, record=make_record(c, source_event_id)
        )
    for r, _ in live:
        if norm_text(r.text) == norm_text(c.text):
            return make_decision(
                c, DecisionOp.NOOP, f"duplicate of memory {r.memory_id}", source_event_id, target=r
            )
    if c.negated and c.kind == MemoryKind.FACT:
        target = _retraction_target(c, live, cfg)
        if target is not None:
            return make_decision(
                c, DecisionOp.DELETE, f"'{c.text}' retracts '{target.text}'", source_event_id, target=target
            )
        return make_decision(
            c,
            DecisionOp.ADD,
            "negation with no matching live memory",
            source_event_id,
            record=make_record(c, source_event_id),
        )
    c = with_event(c, live)  # "Thursday moved to Friday 8pm": the time of the event being planned
    slot = _slot_decision(c, live, source_event_id)
    if slot is not None:
        return slot
    return _similarity_decision(c, live, cfg, source_event_id)


# a near-duplicate shares words too: a compressed embedding (4-bit multilingual-e5 puts unrelated Chinese
# facts of one person at cosine 0.95: "小美现在每天早上喝黑咖啡" / "小美在减肥，晚饭不吃主食") is no proof alone
NOOP_LEXICAL = 0.4


def _similarity_decision(
    c: CandidateFact, live: Similar, cfg: ConsolidatorConfig, source_event_id: str
) -> MemoryDecision:
    """No slot settles it: near-duplicate -> NOOP, newer summary/title or more detail -> UPDATE, else ADD."""
    for r, s in live:
        subject_ok = same_subject(r.subject, c.subject) or not (r.subject or c.subject)
        other_value = bool(c.attribute) and r.attribute == c.attribute and not holds_value(r, c.value)
        if r.kind == c.kind and s >= cfg.noop_similarity and subject_ok and not other_value \
                and lexical_similarity(c.text, r.text) >= NOOP_LEXICAL:
            return make_decision(
                c,
                DecisionOp.NOOP,
                f"near-duplicate (cosine {s:.2f}) of {r.memory_id}",
                source_event_id,
                target=r,
            )
    if c.kind in (MemoryKind.SUMMARY, MemoryKind.TITLE):
        same_topic = [r for r, _ in live if r.kind == c.kind and r.topic_id == c.topic_id]
        if same_topic:
            return update_decision(
                c, same_topic[0], f"newer {c.kind.value} of topic {c.topic_id}", source_event_id
            )
    changed = _changed_from(c, live)
    if changed is not None:
        return update_decision(c, changed, f"{c.subject} changed: '{changed.text}' -> '{c.text}'", source_event_id)
    for r, s in live:
        if (
            c.kind == MemoryKind.FACT
            and r.kind == c.kind
            and same_subject(r.subject, c.subject)
            and s >= cfg.update_similarity
            and (c.attribute is None or c.attribute == r.attribute)
            and c.event_time >= r.valid_from
            and keywords(r.text, r.subject) < keywords(c.text, c.subject)
        ):
            return update_decision(c, r, f"adds detail to '{r.text}'", source_event_id)
    return make_decision(
        c, DecisionOp.ADD, "new information", source_event_id, record=make_record(c, source_event_id)
    )


def _changed_from(c: CandidateFact, live: Similar) -> MemoryRecord | None:
    """The live fact a stated change replaces: "小王说：吉他学不下去了，现在改练钢琴" replaces "小王最近在学吉他"
    (same subject, a shared word other than the subject's name, no slot to settle it, said before); "… instead
    of X" and "是10号，不是9号" replace the fact holding X (a plan's time or place too: its subject is its event).
    The most similar such fact; None when the candidate states no change."""
    if c.kind != MemoryKind.FACT or not c.subject or c.attribute:
        return None
    replaced = {w for w in keywords(instead_of(c.text), None) if len(w) >= 2 or w.isdigit()}  # "不是9号" -> 9
    if replaced and _ONE_OFF.search(c.text):
        replaced = set()  # "had tea instead of coffee this morning": once, not a new habit
    if not replaced and not states_change(c.text):
        return None
    own = {w for w in keywords(_unattributed(c.text), c.subject) if len(w) >= 2}
    for r, _ in live:  # best first
        if r.kind != MemoryKind.FACT or r.valid_from > c.event_time:
            continue
        plan = bool(replaced) and r.attribute in ("when", "where")  # "是10号，不是9号": a plan's subject is its event
        if not (plan or (r.attribute is None and same_subject(r.subject, c.subject))):
            continue
        theirs = keywords(_unattributed(r.text), None if plan else r.subject)
        if own & theirs and (not replaced or replaced <= theirs) and _said_alike(c, r):
            return r
    return None


def _said_alike(new: CandidateFact, old: MemoryRecord) -> bool:
    """The two share a word as written, not only a stem, other than whom they are about: "we switched the
    book" shares "book" with "we booked the back room" once both are stemmed, and replaced where the club
    meets."""
    names = {w for s in (new.subject, old.subject) if s for w in extract_keywords(s)} | OUR_WORDS
    return bool(extract_keywords(_unattributed(new.text)) & extract_keywords(_unattributed(old.text)) - names)


# "林说：" / "Mia said": who said it, shared by everything one person said, no word of what changed
_ATTRIBUTION = re.compile(r"^[^\s：:，,]{1,20}?(?:说|表示|提到)[：:，,]\s*|^\S{1,30} said(?: that)?\s+")


def _unattributed(text: str) -> str:
    return _ATTRIBUTION.sub("", text, count=1)


_ONE_OFF = re.compile(
    r"(?i)\b(?:this (?:morning|afternoon|evening|time)|today|tonight|for (?:breakfast|lunch|dinner)|just this once|"
    r"for once|for a change)\b|今天|今晚|这次|这一次"
)


def _retraction_target(c: CandidateFact, live: Similar, cfg: ConsolidatorConfig) -> MemoryRecord | None:
    best: tuple[float, MemoryRecord] | None = None
    entity_words = {w for e in c.entities for w in keywords(e, None)}
    called_off = is_called_off(c.text)
    for r, s in live:
        plan = called_off and r.attribute in ("when", "where")  # a plan's subject is its event
        # "I'm not doing the snacks anymore": a task the speaker took on (its subject is the task)
        owned = r.attribute == "owner" and bool(r.value) and same_subject(r.value, c.subject)
        if r.kind != MemoryKind.FACT or not (same_subject(r.subject, c.subject) or plan or owned):
            continue
        if c.value and r.attribute and not value_in(r.text, c.value):
            continue
        same_slot = bool(c.attribute) and r.attribute == c.attribute
        shared = keywords(r.text, r.subject) & keywords(c.text, c.subject)
        named = bool(shared & entity_words)  # "Forget the Figma thing": the entity it names, whatever the cosine
        if plan or owned:  # "Never mind the dentist, I cancelled it": the plan it names (its event's words too) is off
            shared = keywords(r.text, r.value if owned else None) & keywords(c.text, c.subject)
            named = bool(shared)
        similar = (
            (s >= cfg.update_similarity or named) and len(shared) >= 1 and (not c.value or value_in(r.text, c.value))
        )
        score = s + same_slot
        if (same_slot or similar) and (best is None or score > best[0]):
            best = (score, r)
    return best[1] if best else None


def _names_event(c: CandidateFact, r: MemoryRecord) -> bool:
    """A plan change naming the event by another of its words: "The dentist called, they pushed it to June 14"
    (event "dentist") changes "Kim's dentist appointment is on June 12" (event "appointment")."""
    if c.attribute not in ("when", "where") or not c.subject or not is_plan_change(c.text):
        return False
    words = keywords(c.subject, None)
    return bool(words) and words <= keywords(r.text, None)


def _slot_decision(c: CandidateFact, live: Similar, source_event_id: str) -> MemoryDecision | None:
    if not (c.attribute and c.subject) or c.kind != MemoryKind.FACT:
        return None
    same = [
        r
        for r, _ in live
        if r.kind == MemoryKind.FACT and r.attribute == c.attribute
        and (same_subject(r.subject, c.subject) or _names_event(c, r))
    ]
    if not same:
        return None
    if c.value and any(holds_value(r, c.value) for r in same):
        known = next(r for r in same if holds_value(r, c.value))
        return make_decision(
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
        return update_decision(
            c, target, f"{c.subject} {c.attribute} changed: '{target.text}' -> '{c.text}'", source_event_id
        )
    record = make_record(c, source_event_id, valid_to=target.valid_from, superseded_by=target.memory_id)
    return make_decision(
        c,
        DecisionOp.ADD,
        f"older than the live {c.attribute} value; stored as history",
        source_event_id,
        record=record,
    )


# ------------------------------------------------------------------------------------------- batches


class Batch:
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


def similar_for(similar_by_candidate: SimilarByCandidate, c: CandidateFact, i: int) -> Similar:
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
    batch = Batch()
    decisions: list[MemoryDecision] = []
    for i, c in enumerate(candidates):
        d = decide(c, batch.similar(c, similar_for(similar_by_candidate, c, i)), cfg, source_event_id)
        batch.apply(d)
        decisions.append(d)
    return decisions
