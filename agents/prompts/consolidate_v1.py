"""Prompt v1 for Mem0-style memory consolidation: one call per topic decides every candidate at once.

Existing memories are shown as ``[M3]`` and candidates as ``[C1]``; the model answers with those small
integers and the consolidator maps them back to memory ids and fact ids.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.llm import strict_json_schema
from schemas import CandidateFact, MemoryRecord

VERSION = "consolidate_v1"
SCHEMA_NAME = "memory_decisions"


class Decision(BaseModel):
    candidate: int = Field(description="The candidate number n of [Cn].")
    op: Literal["ADD", "UPDATE", "DELETE", "NOOP"]
    target: int | None = Field(
        default=None, description="The memory number m of [Mm] for UPDATE/DELETE/NOOP."
    )
    text: str | None = Field(default=None, description="For UPDATE: the merged memory text, else null.")
    reason: str = ""


class Response(BaseModel):
    decisions: list[Decision] = Field(default_factory=list)


def schema() -> dict[str, Any]:
    return strict_json_schema(Response)


_SYSTEM = """You maintain the long-term memory of a chat assistant. For each new candidate fact choose one
operation against the existing memories:
- ADD: new information not present in memory.
- UPDATE: the candidate changes or refines an existing memory about the same subject (e.g. a new address
  replaces the old one, or adds detail). Give the target memory and, optionally, the merged text.
- DELETE: the candidate says an existing memory is no longer true (a retraction or negation). Give the target.
- NOOP: the information is already in memory (give the target) or not worth keeping.
Newer information wins over older information. Answer for every candidate, in order. Return JSON only."""


def _line(prefix: str, text: str, when: str, extra: dict[str, str | None]) -> str:
    meta = ", ".join(f"{k}={v}" for k, v in extra.items() if v)
    return f"[{prefix}] ({when}{', ' + meta if meta else ''}) {text}"


def build(candidates: list[CandidateFact], memories: list[MemoryRecord]) -> list[dict[str, Any]]:
    mem_lines = [
        _line(
            f"M{i}",
            m.text,
            m.valid_from.date().isoformat(),
            {"kind": m.kind.value, "subject": m.subject, "attribute": m.attribute},
        )
        for i, m in enumerate(memories, start=1)
    ]
    cand_lines = [
        _line(
            f"C{i}",
            c.text,
            c.event_time.date().isoformat(),
            {
                "kind": c.kind.value,
                "speaker": c.speaker,
                "subject": c.subject,
                "attribute": c.attribute,
                "value": c.value,
                "negated": "true" if c.negated else None,
            },
        )
        for i, c in enumerate(candidates, start=1)
    ]
    user = (
        "Existing memories:\n"
        + ("\n".join(mem_lines) if mem_lines else "(none)")
        + "\n\nNew candidates:\n"
        + "\n".join(cand_lines)
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]
