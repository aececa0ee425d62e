"""Distiller: turns one closed topic into a title, a summary, atomic facts, Q&A pairs, tasks and relations.

Two paths, one contract (:class:`DistillResult`):

- :func:`distill_extractive` — pure rules (English and Chinese), deterministic, no model. Facts are rewritten
  to stand alone (``I moved to Hangzhou`` by Alice -> ``Alice moved to Hangzhou``), relative dates are
  resolved against the message time, and known slots (``lives_in``, ``pet_name:cat``…) are named so a later
  value can supersede an earlier one.
- :func:`distill_llm` — one JSON-schema-constrained call per topic (prompt ``agents/prompts/distill_v1``),
  falling back to the extractive path on any failure; it never raises.

The pieces live in :mod:`language.extract` (sentence-level language rules: dates, person, slots, tasks,
entities) and :mod:`agents.distill` (topic-level assembly: context, facts, Q&A, summary/title, LLM mapping).
"""

from __future__ import annotations

import logging

from agents.config import DistillerConfig
from agents.distill.context import Collected, TopicContext
from agents.distill.facts import answer_slot_fact, distill_message
from agents.distill.from_llm import result_from_llm
from agents.distill.qa import find_qa
from agents.distill.summary import build_result, cap_facts, summarise
from agents.llm import LLMClient, LLMError
from agents.prompts import distill_v1
from schemas import DistillJob, DistillResult

__all__ = ["distill", "distill_extractive", "distill_llm"]

log = logging.getLogger(__name__)


def distill_extractive(job: DistillJob, cfg: DistillerConfig) -> DistillResult:
    """Distil one topic with rules only: deterministic, English and Chinese, never calls a model."""
    ctx = TopicContext.build(job)
    out = Collected()
    qa_pairs, question_of = find_qa(ctx)
    for m in ctx.msgs:
        question = question_of.get(m.message_id)
        distill_message(ctx, m, ctx.by_id[question] if question else None, out)
    for answer, question in question_of.items():
        answer_slot_fact(ctx, ctx.by_id[answer], ctx.by_id[question], out)
    facts = cap_facts(out.facts, cfg.max_facts_per_topic)
    return build_result(
        ctx, out, facts, qa_pairs, summarise(out.sentences, cfg.summary_sentences), "extractive"
    )


async def distill_llm(job: DistillJob, client: LLMClient, cfg: DistillerConfig) -> tuple[DistillResult, int]:
    """One JSON-schema-constrained LLM call per topic (plus retries); falls back to the extractive path.

    Returns the result and the number of LLM calls made. Never raises.
    """
    if not job.messages:
        return distill_extractive(job, cfg), 0
    numbered = distill_v1.numbered(job, cfg.llm_max_messages)
    try:
        data, calls = await client.complete_json_counted(
            distill_v1.build(job, max_messages=cfg.llm_max_messages, max_chars=cfg.llm_max_chars_per_message),
            distill_v1.SCHEMA_NAME,
            distill_v1.schema(),
            validate=distill_v1.validate,
        )
    except LLMError as exc:
        log.warning("distill %s: LLM failed (%s); extractive fallback", job.topic_id, exc)
        return _fallback(job, cfg), exc.calls
    try:
        result = result_from_llm(job, distill_v1.Response.model_validate(data), numbered, cfg)
    except Exception:  # never raise: a reply we cannot map falls back like a failed call
        log.exception("distill %s: unusable LLM reply; extractive fallback", job.topic_id)
        result = None
    return (result if result is not None else _fallback(job, cfg)), calls


async def distill(
    job: DistillJob, cfg: DistillerConfig, client: LLMClient | None = None
) -> tuple[DistillResult, int]:
    """The configured path: ``cfg.mode == "llm"`` with a client, else extractive (zero calls)."""
    if cfg.mode == "llm" and client is not None:
        return await distill_llm(job, client, cfg)
    return distill_extractive(job, cfg), 0


def _fallback(job: DistillJob, cfg: DistillerConfig) -> DistillResult:
    return distill_extractive(job, cfg).model_copy(update={"method": "extractive:fallback"})
