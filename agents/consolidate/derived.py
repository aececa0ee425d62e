"""Derived memories that carry a superseded statement: rewrite or invalidate them (pure).

When a fact is superseded (UPDATE of a changed slot value, DELETE of a retracted or edited-away fact),
the summaries, titles, Q&A pairs and tasks built from the same messages still say the old thing. Left
live, they outrank the current fact ("小王住在北京" through the topic summary after 小王 moved to 杭州).

:func:`derived_invalidations` turns each such record into a decision: a summary loses the sentences
that state the old value (UPDATE to the rewritten text, a new version; DELETE when nothing is left); a
title, Q&A pair, task or unslotted fact that states the old value — or was built only from the stale
messages — is invalidated (DELETE). History is kept: invalidation sets ``valid_to``, nothing is removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from agents.consolidate.records import norm_text, update_decision, value_changed, value_in
from language.extract.slots import states_replacement
from language.extract.text import split_sentences
from language.text import tokenize
from schemas import CandidateFact, DecisionOp, MemoryDecision, MemoryKind, MemoryRecord, stable_id

__all__ = [
    "Staleness",
    "derived_invalidations",
    "edited_away",
    "edited_noops_to_updates",
    "stale_statements",
]

_DERIVED = (MemoryKind.SUMMARY, MemoryKind.TITLE, MemoryKind.QA, MemoryKind.TASK, MemoryKind.DECISION)


class Staleness:
    """One superseded statement: its source messages, the old value and (if any) the value replacing it."""

    __slots__ = ("at", "cause", "decision_id", "new_text", "new_value", "old", "sources")

    def __init__(self, old: MemoryRecord, new_value: str | None, at: datetime, decision_id: str,
                 new_text: str | None = None) -> None:  # fmt: skip
        self.old = old
        self.sources = frozenset(old.source_message_ids)
        self.new_value = new_value
        self.new_text = new_text
        self.at = at
        self.decision_id = decision_id

    @classmethod
    def of_decision(cls, old: MemoryRecord, d: MemoryDecision) -> Staleness:
        record = d.record
        return cls(old, record.value if record else None, d.at, d.decision_id, record.text if record else None)

    @classmethod
    def of_record(cls, old: MemoryRecord, new: MemoryRecord | None) -> Staleness | None:
        """An already invalidated fact (value changed or retracted), for records written after it."""
        if old.kind != MemoryKind.FACT or old.valid_to is None or not old.value:
            return None
        if old.superseded_by and (
            new is None or new.attribute != old.attribute or not value_changed(old, new)
        ):
            return None  # replaced by a more detailed version, not by another value
        return cls(old, new.value if new else None, old.valid_to, stable_id("stale", old.memory_id))

    def states_old(self, text: str) -> bool:
        """The text states the superseded value (and not also its replacement: that is the new claim); for a
        fact no slot names ("小王最近在学吉他", replaced by "吉他学不下去了，现在改练钢琴"), the text restates
        the fact itself (:func:`restates`)."""
        v = self.old.value
        if not v:
            return restates(text, self.old, self.new_text)
        if not value_in(text, v):
            return False
        return not (
            self.new_value and value_in(text, self.new_value) and norm_text(self.new_value) != norm_text(v)
        )


RESTATED = 0.6  # a text restates a fact when it holds this share of the fact's words (its subject's aside)


def restates(text: str, old: MemoryRecord, new_text: str | None = None) -> bool:
    """``text`` (a summary's sentence, a Q&A pair, a derived fact) restates the fact ``old``: it names the
    fact's subject or speaker (a summary line "小王: …", a fact "Caroline went …"; another person saying the
    same of themselves is not this fact), holds at least ``RESTATED`` of the fact's BM25 tokens other than
    the names' (three at least), and not most of what the replacing statement ``new_text`` adds (then it is
    the new claim, or both)."""
    names = [n for n in dict.fromkeys((old.subject, old.speaker)) if n]
    if not names or not any(value_in(text, n) for n in names):
        return False

    def words_of(statement: str) -> set[str]:  # names cut out first: a Chinese name's bigrams ("王最") are not words
        for n in names:
            statement = statement.replace(n, " ")
        return set(tokenize(statement)) - {t for n in names for t in tokenize(n)}

    own = words_of(old.text)
    if len(own) < 3:
        return False
    words = set(tokenize(text))
    if len(own & words) < RESTATED * len(own):
        return False
    added = words_of(new_text or "") - own
    return not added or len(added & words) < 0.5 * len(added)


def stale_statements(
    decisions: Iterable[MemoryDecision], records: Mapping[str, MemoryRecord]
) -> list[Staleness]:
    """The facts these decisions supersede by value change or retraction (``records``: known by id)."""
    out: list[Staleness] = []
    for d in decisions:
        if d.op not in (DecisionOp.UPDATE, DecisionOp.DELETE) or not d.target_memory_id:
            continue
        old = records.get(d.target_memory_id)
        if old is None or old.kind != MemoryKind.FACT:
            continue
        changed = d.op == DecisionOp.DELETE or (
            old.attribute is not None
            and d.record is not None
            and d.record.attribute == old.attribute
            and value_changed(old, d.record)
        ) or (  # a stated change of something no slot names: "… would rather do Klara instead of The Remains…"
            old.attribute is None
            and d.record is not None
            and d.record.attribute is None
            and states_replacement(d.record.text)
        )
        if changed:
            out.append(Staleness.of_decision(old, d))
    return out


def _sentences(text: str) -> list[str]:
    """The summary's sentences, abbreviations kept whole ("at St. Brendan's hall" is one sentence)."""
    return [s for s in split_sentences(text) if s.strip()]


def _rewrite_summary(r: MemoryRecord, stale: Sequence[Staleness]) -> str | None:
    """The summary without its sentences stating a superseded value; None when nothing changes."""
    kept = [s for s in _sentences(r.text) if not any(st.states_old(s) for st in stale)]
    if len(kept) == len(_sentences(r.text)):
        return None
    return " ".join(s.strip() for s in kept)


def _decision(
    r: MemoryRecord, op: DecisionOp, st: Staleness, reason: str, text: str | None = None
) -> MemoryDecision:
    record = None
    if op == DecisionOp.UPDATE and text is not None:
        kept_ids = [m for m in r.source_message_ids if m not in st.sources] or list(r.source_message_ids)
        record = r.model_copy(
            update={
                "memory_id": stable_id("mem", r.memory_id, "rewritten", st.decision_id),
                "text": text,
                "version": r.version + 1,
                "valid_from": max(r.valid_from, st.at),
                "valid_to": None,
                "superseded_by": None,
                "source_message_ids": kept_ids,
                "source_event_id": st.decision_id,
            }
        )
    return MemoryDecision(
        decision_id=stable_id("decision", "derived", r.memory_id, st.decision_id),
        op=op,
        chat_id=r.chat_id,
        target_memory_id=r.memory_id,
        record=record,
        reason=reason,
        source_event_id=st.decision_id,
        at=max(r.valid_from, st.at),
    )


def derived_invalidations(
    stale: Sequence[Staleness], derived: Iterable[MemoryRecord]
) -> list[MemoryDecision]:
    """Decisions that rewrite or invalidate the live ``derived`` records carrying a ``stale`` statement.

    ``derived`` are live records of the chat (summaries, titles, Q&A, tasks, facts) — typically those
    sharing a source message with a stale fact, plus the records the same batch just wrote. A record is
    touched at most once (by the first stale statement that hits it).
    """
    out: list[MemoryDecision] = []
    seen: set[str] = set()
    gone = {st.old.memory_id for st in stale}
    for r in derived:
        if r.memory_id in seen or r.memory_id in gone or not r.live:
            continue
        if r.kind == MemoryKind.FACT and r.attribute is not None:
            continue  # another slot: the consolidator's own rules decide it
        hits = [
            st
            for st in stale
            if st.sources.intersection(r.source_message_ids)
            or (r.topic_id is not None and r.topic_id == st.old.topic_id and st.states_old(r.text))
        ]
        if not hits:
            continue
        st = hits[0]
        only_stale = set(r.source_message_ids) <= st.sources
        old = st.old.value or st.old.text
        if r.kind == MemoryKind.SUMMARY:
            text = _rewrite_summary(r, hits)
            if text is None and not only_stale:
                continue
            if not text:
                out.append(_decision(r, DecisionOp.DELETE, st, f"summary states superseded '{old}' only"))
            else:
                out.append(_decision(r, DecisionOp.UPDATE, st, f"summary rewritten without '{old}'", text))
        elif r.kind in _DERIVED or r.kind == MemoryKind.FACT:
            if not (any(h.states_old(r.text) for h in hits) or (only_stale and r.kind != MemoryKind.FACT)):
                continue
            out.append(_decision(r, DecisionOp.DELETE, st, f"{r.kind.value} carries superseded '{old}'"))
        else:
            continue
        seen.add(r.memory_id)
    return out


def edited_away(
    edited: Iterable[str],
    stored: Iterable[MemoryRecord],
    decisions: Sequence[MemoryDecision],
    candidate_texts: Iterable[str],
    result_id: str,
    at: datetime,
) -> list[MemoryDecision]:
    """Live records built from messages since edited or retracted that the new text no longer produces.

    ``stored`` are the chat's live records citing an edited message; a record survives when a decision of
    this re-distillation already replaced it, confirmed it (NOOP) or states the same text as a candidate.
    The rest are invalidated (DELETE, history kept).
    """
    edited = set(edited)
    handled = {d.target_memory_id for d in decisions if d.target_memory_id}
    handled |= {d.record.memory_id for d in decisions if d.record is not None}
    same = {norm_text(t) for t in candidate_texts}
    out = []
    for r in stored:
        if not r.live or r.memory_id in handled or norm_text(r.text) in same:
            continue
        if r.kind == MemoryKind.PROFILE:  # an aggregate: profile_decisions replaces just the edited lines
            continue
        if not edited.intersection(r.source_message_ids):
            continue
        out.append(
            MemoryDecision(
                decision_id=stable_id("decision", "edited", r.memory_id, result_id),
                op=DecisionOp.DELETE,
                chat_id=r.chat_id,
                target_memory_id=r.memory_id,
                reason="edited: its message now says otherwise (or was retracted)",
                source_event_id=result_id,
                at=max(at, r.valid_from),
            )
        )
    return out


def edited_noops_to_updates(
    candidates: Sequence[CandidateFact],
    decisions: list[MemoryDecision],
    records: Mapping[str, MemoryRecord],
    edited: Iterable[str],
) -> list[MemoryDecision]:
    """An edit changes a detail, so its new wording looks like a near-duplicate of the old one: a NOOP
    of a candidate from an edited message against a different text becomes an UPDATE (history kept)."""
    edited = set(edited)
    out = []
    for c, d in zip(candidates, decisions, strict=True):
        old = records.get(d.target_memory_id or "")
        if (
            d.op == DecisionOp.NOOP
            and old is not None
            and old.live
            and edited.intersection(c.source_message_ids)
            and norm_text(old.text) != norm_text(c.text)
        ):
            d = update_decision(c, old, f"edited: '{old.text[:60]}' -> '{c.text[:60]}'", d.source_event_id)
        out.append(d)
    return out
