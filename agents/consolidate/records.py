"""Ids, records and decisions of the consolidator, and the text comparisons its rules use."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime

from language.text import has_cjk, text_cache, tokenize
from schemas import CandidateFact, DecisionOp, MemoryDecision, MemoryRecord, stable_id

__all__ = [
    "Similar",
    "SimilarByCandidate",
    "decision_id_for",
    "keywords",
    "lexical_similarity",
    "make_decision",
    "make_record",
    "memory_id_for",
    "norm_text",
    "same_subject",
    "update_decision",
    "value_in",
]


Similar = Sequence[tuple[MemoryRecord, float]]
SimilarByCandidate = Mapping[str, Similar] | Sequence[Similar]


def memory_id_for(candidate: CandidateFact) -> str:
    return stable_id("mem", candidate.fact_id)


def decision_id_for(candidate: CandidateFact) -> str:
    return stable_id("decision", candidate.fact_id)


@text_cache(1 << 14)  # pure; a batch compares every candidate with every earlier record
def norm_text(text: str | None) -> str:
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text or "").lower())


def same_subject(a: str | None, b: str | None) -> bool:
    return bool(a and b) and norm_text(a) == norm_text(b)


def value_in(text: str | None, value: str | None) -> bool:
    """``text`` states ``value``: as a substring in Chinese, on word boundaries elsewhere ("Olive's" is not
    in "Olive said", "Ann" not in "Joanna"), whatever the case and punctuation."""
    if not value:
        return False
    if has_cjk(value):
        return norm_text(value) in norm_text(text)
    v = _spaced(value)
    return v != " " and v in _spaced(text)


def _spaced(text: str | None) -> str:
    return " " + re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text or "").lower()).strip() + " "


def holds_value(r: MemoryRecord, value: str | None) -> bool:
    """The record's slot holds ``value``: its own value when known (an explicit change also names the old one)."""
    return value_in(r.value, value) if r.value else value_in(r.text, value)


def value_changed(old: MemoryRecord, new: MemoryRecord) -> bool:
    """``new`` gives the slot another value than ``old`` (not the same one in more detail). An explicit change
    names both values ("不是4月28日了，改成7月10日"), so values are compared when both are known."""
    if old.value and new.value:
        return not value_in(new.value, old.value)
    return not (old.value and value_in(new.text, old.value))


def keywords(text: str, subject: str | None) -> set[str]:
    return set(_token_counts(text)) - set(_token_counts(subject or ""))


@text_cache(16384)
def _token_counts(text: str) -> Counter[str]:
    return Counter(tokenize(text))  # cached: a batch compares every candidate with every earlier record


def lexical_similarity(a: str, b: str) -> float:
    """Cosine of token counts: the in-batch stand-in for embedding similarity."""
    ca, cb = _token_counts(a), _token_counts(b)
    if len(cb) < len(ca):
        ca, cb = cb, ca
    dot = sum(v * cb[t] for t, v in ca.items() if t in cb)  # integers: exact in any order
    norm = _length(a) * _length(b)
    return dot / norm if norm else 0.0


@text_cache(16384)
def _length(text: str) -> float:
    return math.sqrt(sum(v * v for v in _token_counts(text).values()))


def make_record(
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
        value=c.value,
        entities=list(c.entities),
        topic_id=c.topic_id,
        valid_from=c.event_time,
        valid_to=valid_to,
        superseded_by=superseded_by,
        version=version,
        source_message_ids=list(c.source_message_ids),
        source_event_id=source_event_id,
    )


def make_decision(
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


def update_decision(
    c: CandidateFact, target: MemoryRecord, reason: str, source_event_id: str, text: str | None = None
) -> MemoryDecision:
    version = target.version + 1
    mem_id = memory_id_for(c)
    if mem_id == target.memory_id:  # the same fact re-distilled with new wording: a new version of itself
        mem_id = stable_id("mem", c.fact_id, version)
    record = make_record(c, source_event_id, memory_id=mem_id, version=version, text=text)
    return make_decision(c, DecisionOp.UPDATE, reason, source_event_id, target=target, record=record)
