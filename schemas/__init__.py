"""memstream contracts: pydantic models only, no I/O.

The names below are loaded on first use (PEP 562): ``import schemas.base`` (what the CLI's ``--chat`` check
needs) does not build every model of the package (~0.3 s of a command's start on 2 cores).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "schemas.base": ("SCHEMA_VERSION", "Contract", "stable_id"),
    "schemas.memory": ("CandidateFact", "DecisionOp", "DistillJob", "DistillResult", "MemoryDecision", "MemoryKind",
                       "MemoryRecord", "QAPair", "Relation", "TaskItem"),
    "schemas.messages": ("ChatMessage", "DeadLetter"),
    "schemas.retrieval": ("RetrievedItem", "RetrieveRequest", "RetrieveResponse", "TraceStep"),
    "schemas.topics": ("TopicEvent", "TopicEventKind", "TopicSummary"),
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

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


_SUBMODULES = frozenset(m.rsplit(".", 1)[1] for m in _WHERE) | {"ids"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:  # ``schemas.memory`` after ``import schemas``, as when the package loaded them all
        return import_module(f"schemas.{name}")
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'schemas' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next use is a plain global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
