"""Every stream topic, declared once. Keys are chat ids so one chat stays ordered in one partition."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from schemas import ChatMessage, DeadLetter, DistillJob, DistillResult, MemoryDecision, TopicEvent
from schemas.messages import StreamControl


@dataclass(frozen=True)
class TopicSpec:
    name: str
    value_types: tuple[type[BaseModel], ...]
    partitions: int = 8
    derived: bool = True  # derived topics are recomputed by replay; source topics are never rewritten
    read_twice: bool = False  # a look-ahead reads it before its stage: the decoded payload is kept for that


RAW_MESSAGES = TopicSpec("memstream.raw-messages", (ChatMessage, StreamControl), derived=False, read_twice=True)
TOPIC_SEGMENTS = TopicSpec("memstream.topic-segments", (TopicEvent,))
DISTILL_JOBS = TopicSpec("memstream.distill-jobs", (DistillJob,))
DISTILL_RESULTS = TopicSpec("memstream.distill-results", (DistillResult,), read_twice=True)
MEMORY_DECISIONS = TopicSpec("memstream.memory-decisions", (MemoryDecision,))
DEAD_LETTERS = TopicSpec("memstream.dead-letters", (DeadLetter,), partitions=1, derived=False)

ALL_TOPICS: tuple[TopicSpec, ...] = (
    RAW_MESSAGES,
    TOPIC_SEGMENTS,
    DISTILL_JOBS,
    DISTILL_RESULTS,
    MEMORY_DECISIONS,
    DEAD_LETTERS,
)
DERIVED_TOPICS = tuple(t for t in ALL_TOPICS if t.derived)
