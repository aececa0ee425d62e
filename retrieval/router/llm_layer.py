"""Optional LLM layers of the router (only used when an OpenAI-compatible LLM is configured).

One prompt per task, each with its response schema, a ``build`` function and a version key. Every call
degrades to ``None`` on failure so the non-LLM path decides.
"""

from __future__ import annotations

from typing import Any

CLASSIFY_VERSION = "router-classify-v1"
CLASSIFY_SCHEMA = {
    "type": "object",
    "properties": {
        "probabilities": {
            "type": "object",
            "properties": {t: {"type": "number"} for t in (
                "factual_extraction", "temporal_reasoning", "knowledge_update", "multi_hop", "abstention")},
        }
    },
    "required": ["probabilities"],
}  # fmt: skip

_CLASSIFY_SYSTEM = """You classify a question asked to a chat bot about its memory of a chat into query types:
- factual_extraction: one specific fact ("What is her cat's name?")
- temporal_reasoning: when something happened or in what order ("When did he move?", "Which came first?")
- knowledge_update: the current value of something that may have changed ("Where does she live now?")
- multi_hop: needs several memories combined: lists, counts, comparisons, what two people share
- abstention: asks whether something was ever said at all ("Did I ever tell you my blood type?")
Return a probability for each type (they sum to 1)."""

CONFIDENCE_VERSION = "router-confidence-v1"
CONFIDENCE_SCHEMA = {
    "type": "object",
    "properties": {"confidence": {"type": "number"}, "follow_up_query": {"type": "string"}},
    "required": ["confidence", "follow_up_query"],
}
_CONFIDENCE_SYSTEM = """Given a question and the memory lines retrieved so far, rate from 0 to 1 how likely
the lines contain everything needed to answer. If something is missing, write one short search query for the
missing information (else an empty string)."""


def build_classify(query: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": _CLASSIFY_SYSTEM}, {"role": "user", "content": query}]


def build_confidence(query: str, context: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": _CONFIDENCE_SYSTEM},
            {"role": "user", "content": f"Question: {query}\n\nRetrieved memory:\n{context}"}]  # fmt: skip


async def llm_logits(llm: Any, query: str) -> dict[str, float] | None:
    """Log-probabilities per type from the LLM, or None when it fails."""
    import math

    try:
        data = await llm.complete_json(build_classify(query), "query_type", CLASSIFY_SCHEMA)
        probs = {k: float(v) for k, v in data["probabilities"].items()}
    except Exception:  # noqa: BLE001 - any LLM failure falls back to the non-LLM layers
        return None
    return {k: math.log(max(v, 1e-4)) for k, v in probs.items()}


async def llm_confidence(llm: Any, query: str, context: str) -> tuple[float, str] | None:
    try:
        data = await llm.complete_json(build_confidence(query, context), "confidence", CONFIDENCE_SCHEMA)
        return max(0.0, min(1.0, float(data["confidence"]))), str(data.get("follow_up_query") or "")
    except Exception:  # noqa: BLE001
        return None
