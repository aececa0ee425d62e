"""Per-topic state of the extractive distiller: who is in the topic, what has been collected so far."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from language.extract.entities import MENTION_RE
from language.extract.slots import SlotMatch
from schemas import CandidateFact, ChatMessage, DistillJob, Relation, TaskItem, stable_id

__all__ = ["Collected", "Draft", "Sentence", "TopicContext", "make_fact"]


@dataclass
class TopicContext:
    """Who is in the topic and whom each message addresses."""

    job: DistillJob
    msgs: list[ChatMessage]
    by_id: dict[str, ChatMessage]
    participants: list[str]
    names: frozenset[str]
    name_of: dict[str, str]
    _weeks: dict[str, date | None] = field(default_factory=dict)  # message id -> the week it names
    _events: dict[str, str | None] = field(default_factory=dict)  # message id -> the event it schedules

    @classmethod
    def build(cls, job: DistillJob) -> TopicContext:
        msgs = sorted(job.messages, key=lambda m: m.ts)
        participants = list(dict.fromkeys(m.display_name for m in msgs))
        name_of = {m.sender: m.display_name for m in msgs}
        return cls(job, msgs, {m.message_id: m for m in msgs}, participants, frozenset(participants), name_of)

    def week_context(self, m: ChatMessage) -> date | None:
        """A day of the week named last before ``m`` in this conversation (``下周三…``, ``next week…``): in
        the message ``m`` replies to, else in the topic's messages of the hour before it. A bare weekday of
        ``m`` (``周四可以``) with no week of its own is of that week."""
        return self._last_before(m, self._weeks, _named_week_of)

    def event_context(self, m: ChatMessage) -> str | None:
        """The event whose time or place was stated last before ``m`` (where :meth:`week_context` looks): the
        event of a change that names none ("Small change, we'll meet at Marco's instead" after "the book club
        meets at Olive's this Thursday")."""
        return self._last_before(m, self._events, _planned_event_of)

    def _last_before(self, m: ChatMessage, memo: dict[str, Any], read: Callable[[ChatMessage], Any]) -> Any:
        """``read`` of the message ``m`` replies to, else of the latest of the topic's messages of the hour
        before it that gives one (each message read once, kept in ``memo``)."""
        replied = self.by_id.get(m.parent_id or "")
        earlier = [x for x in self.msgs if x.ts <= m.ts and x.message_id != m.message_id
                   and (m.ts - x.ts).total_seconds() <= WEEK_CONTEXT_S]  # fmt: skip
        for x in ([replied] if replied is not None else []) + earlier[::-1]:
            if x.message_id not in memo:
                memo[x.message_id] = read(x)
            if memo[x.message_id] is not None:
                return memo[x.message_id]
        return None

    def addressee(self, m: ChatMessage) -> str | None:
        speaker = m.display_name
        replied = self.by_id.get(m.parent_id or "")
        if replied is not None and replied.display_name != speaker:
            return replied.display_name
        mentioned = [self.name_of.get(x, x) for x in m.mentions] + MENTION_RE.findall(m.text)
        mentioned = [x for x in dict.fromkeys(mentioned) if x != speaker]
        if len(mentioned) == 1:
            return mentioned[0]
        others = [p for p in self.participants if p != speaker]
        if len(others) == 1 and len(mentioned) == 0:
            return others[0]
        return None


WEEK_CONTEXT_S = 3600.0  # a week named this long before a message still anchors its bare weekdays


def _planned_event_of(m: ChatMessage) -> str | None:
    """The last event message ``m`` states a time or place of, if any."""
    from language.extract.event_slots import planned_event
    from language.extract.text import split_sentences

    found = None
    for sent in split_sentences(m.text):
        found = planned_event(sent, m.display_name) or found
    return found


def _named_week_of(m: ChatMessage) -> date | None:
    """A day of the last week message ``m`` names explicitly, if any."""
    from language.extract.text import split_sentences
    from language.time.anchors import named_week
    from language.time.dates import find_dates

    found = None
    for sent in split_sentences(m.text):
        found = named_week(sent, find_dates(sent, m.ts)) or found
    return found


@dataclass
class Sentence:
    """One informative sentence that produced a fact, task or answer; the summary picks among these."""

    msg: ChatMessage
    speaker: str
    raw: str
    tokens: set[str]
    bonus: float = 0.0


@dataclass
class Collected:
    facts: list[tuple[CandidateFact, float]] = field(default_factory=list)
    tasks: list[TaskItem] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    sentences: list[Sentence] = field(default_factory=list)
    entity_counts: Counter[str] = field(default_factory=Counter)
    next_index: Counter[str] = field(default_factory=Counter)

    def fact_id(self, ctx: TopicContext, message_id: str) -> str:
        index = self.next_index[message_id]
        self.next_index[message_id] += 1
        if message_id in ctx.job.edited_message_ids:  # an edited message's facts are new candidates
            text = next((m.text for m in ctx.job.messages if m.message_id == message_id), "")
            return stable_id(ctx.job.chat_id, ctx.job.topic_id, message_id, index, "edit", text)
        return stable_id(ctx.job.chat_id, ctx.job.topic_id, message_id, index)


@dataclass(frozen=True)
class Draft:
    text: str
    subject: str | None
    slot: SlotMatch | None
    negated: bool
    entities: list[str]
    confidence: float


def make_fact(
    ctx: TopicContext, out: Collected, m: ChatMessage, sources: list[str], speaker: str, d: Draft
) -> CandidateFact:
    return CandidateFact(
        fact_id=out.fact_id(ctx, m.message_id),
        chat_id=ctx.job.chat_id,
        topic_id=ctx.job.topic_id,
        text=_capitalise(d.text.strip()),
        speaker=speaker,
        subject=d.subject,
        attribute=d.slot.attribute if d.slot else None,
        value=d.slot.value if d.slot else None,
        negated=d.negated,
        entities=d.entities[:8],
        event_time=m.ts,
        source_message_ids=sources,
        confidence=d.confidence,
    )


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text
