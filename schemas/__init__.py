"""memstream contracts: pydantic models only, no I/O."""

from schemas.base import SCHEMA_VERSION, Contract, stable_id
from schemas.memory import (
    CandidateFact,
    DecisionOp,
    DistillJob,
    DistillResult,
    MemoryDecision,
    MemoryKind,
    MemoryRecord,
    QAPair,
    Relation,
    TaskItem,
)
from schemas.messages import ChatMessage, DeadLetter
from schemas.retrieval import RetrievedItem, RetrieveRequest, RetrieveResponse, TraceStep
from schemas.topics import TopicEvent, TopicEventKind, TopicSummary

__all__ = [
    "SCHEMA_VERSION",
    "CandidateFact",
    "ChatMessage",
    "Contract",
    "DeadLetter",
    "DecisionOp",
    "DistillJob",
    "DistillResult",
    "MemoryDecision",
    "MemoryKind",
    "MemoryRecord",
    "QAPair",
    "Relation",
    "RetrieveRequest",
    "RetrieveResponse",
    "RetrievedItem",
    "TaskItem",
    "TopicEvent",
    "TopicEventKind",
    "TopicSummary",
    "TraceStep",
    "stable_id",
]
