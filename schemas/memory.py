"""Distillation jobs and results, candidate facts, memory-update decisions and memory records."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from schemas.base import Contract
from schemas.messages import ChatMessage


class MemoryKind(StrEnum):
    FACT = "fact"
    SUMMARY = "summary"
    QA = "qa"
    TASK = "task"
    DECISION = "decision"
    TITLE = "title"
    PROFILE = "profile"  # one person's statements of one attribute class (agents/profile.py)


class DistillJob(Contract):
    """Distil one closed topic: the messages travel with the job so the distiller needs no store read."""

    job_id: str
    chat_id: str
    topic_id: str
    messages: list[ChatMessage]
    at: datetime
    # a re-distillation after these messages were edited or retracted: what they produced before is
    # superseded by what they produce now
    edited_message_ids: list[str] = Field(default_factory=list)


class CandidateFact(Contract):
    """An atomic statement extracted from a topic, traceable to its source messages.

    ``speaker`` is who stated it; ``subject`` is whom/what it is about (``"my cat"`` said by A is about A).
    ``attribute`` names the slot it fills (e.g. ``lives_in``) so a newer value can supersede an older one.
    """

    fact_id: str
    chat_id: str
    topic_id: str
    kind: MemoryKind = MemoryKind.FACT
    text: str
    speaker: str | None = None
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None
    negated: bool = False
    entities: list[str] = Field(default_factory=list)
    event_time: datetime
    source_message_ids: list[str] = Field(min_length=1)
    confidence: float = 1.0


class QAPair(Contract):
    question: str
    answer: str
    source_message_ids: list[str]


class TaskItem(Contract):
    text: str
    owner: str | None = None
    due: datetime | None = None
    is_decision: bool = False
    source_message_ids: list[str]


class Relation(Contract):
    subject: str
    predicate: str
    object: str
    source_message_ids: list[str]
    at: datetime


class DistillResult(Contract):
    """What the distiller produced for one topic."""

    result_id: str
    job_id: str
    chat_id: str
    topic_id: str
    title: str
    summary: str
    facts: list[CandidateFact] = Field(default_factory=list)
    qa_pairs: list[QAPair] = Field(default_factory=list)
    tasks: list[TaskItem] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    started_at: datetime
    ended_at: datetime
    source_message_ids: list[str]
    method: str = "extractive"
    at: datetime
    edited_message_ids: list[str] = Field(default_factory=list)  # from the job (see DistillJob)
    # the sender ids behind each participant's display name: facts name speakers by display name, the
    # deletion ledger by sender id, and a deletion must reach a result still in flight
    senders: dict[str, list[str]] = Field(default_factory=dict)


class DecisionOp(StrEnum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NOOP = "NOOP"


class MemoryRecord(Contract):
    """One version of a memory. Superseded versions keep their row with ``valid_to`` set."""

    memory_id: str
    chat_id: str
    kind: MemoryKind = MemoryKind.FACT
    text: str
    speaker: str | None = None
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None  # the slot's value (``attribute``), so what replaced it can be traced
    entities: list[str] = Field(default_factory=list)
    topic_id: str | None = None
    valid_from: datetime
    valid_to: datetime | None = None
    superseded_by: str | None = None
    version: int = 1
    source_message_ids: list[str] = Field(min_length=1)
    source_event_id: str

    @property
    def live(self) -> bool:
        return self.valid_to is None


class MemoryDecision(Contract):
    """The consolidator's decision for one candidate, emitted as an event and applied by the indexer.

    ADD writes ``record``; UPDATE invalidates ``target_memory_id`` at ``at`` and writes ``record`` (its new
    version; of a profile, whose versions carry every dated line of the ones before, only the newest few
    superseded versions are kept: :func:`agents.profile.kept_versions`); DELETE invalidates
    ``target_memory_id`` at ``at`` (nothing is physically removed); NOOP
    changes nothing but is kept for audit.
    """

    decision_id: str
    op: DecisionOp
    chat_id: str
    target_memory_id: str | None = None
    record: MemoryRecord | None = None
    reason: str
    source_event_id: str
    candidate_fact_id: str | None = None
    at: datetime
