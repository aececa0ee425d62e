"""Map the LLM distiller's reply (small integer message ids) back onto a :class:`DistillResult`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from agents.config import DistillerConfig
from agents.distill.context import Collected, Draft, TopicContext, make_fact
from agents.distill.summary import build_result
from agents.prompts import distill_v1
from language.extract.slots import SlotMatch
from schemas import ChatMessage, DistillJob, DistillResult, QAPair, Relation, TaskItem

__all__ = ["result_from_llm"]


def result_from_llm(
    job: DistillJob, resp: distill_v1.Response, numbered: list[ChatMessage], cfg: DistillerConfig
) -> DistillResult | None:
    """Map the model's small integer ids back to message ids; drop items that cite no real message."""
    ctx = TopicContext.build(job)
    out = Collected()

    def ids(refs: list[int]) -> list[ChatMessage]:
        return [numbered[i - 1] for i in dict.fromkeys(refs) if 1 <= i <= len(numbered)]

    for item in resp.facts[: cfg.max_facts_per_topic]:
        msgs = ids(item.message_ids)
        if not msgs or not item.text.strip():
            continue
        latest = max(msgs, key=lambda m: m.ts)
        speaker = item.speaker if item.speaker in ctx.names else msgs[0].display_name
        slot = (
            SlotMatch(item.attribute, item.value, item.subject or speaker, item.negated, 0, 0)
            if item.attribute
            else None
        )
        draft = Draft(item.text, item.subject or None, slot, item.negated, list(item.entities), 0.85)
        fact = make_fact(ctx, out, msgs[0], [m.message_id for m in msgs], speaker, draft)
        out.facts.append((fact.model_copy(update={"event_time": latest.ts}), 1.0))
    qa = [
        QAPair(
            question=p.question,
            answer=p.answer,
            source_message_ids=[m.message_id for m in ids(p.message_ids)],
        )
        for p in resp.qa_pairs
        if ids(p.message_ids)
    ]
    _tasks_and_relations(resp, ids, out)
    out.entity_counts.update({e: len(resp.entities) - i for i, e in enumerate(resp.entities) if e.strip()})
    if not (resp.summary.strip() or out.facts or qa or out.tasks):
        return None
    result = build_result(
        ctx, out, [f for f, _ in out.facts], qa, resp.summary.strip(), f"llm:{distill_v1.VERSION}"
    )
    return result.model_copy(update={"title": resp.title.strip() or result.title})


def _tasks_and_relations(
    resp: distill_v1.Response, ids: Callable[[list[int]], list[ChatMessage]], out: Collected
) -> None:
    for t in resp.tasks:
        msgs = ids(t.message_ids)
        if msgs:
            out.tasks.append(
                TaskItem(
                    text=t.text,
                    owner=t.owner or None,
                    due=_parse_due(t.due, msgs[0]),
                    is_decision=t.is_decision,
                    source_message_ids=[m.message_id for m in msgs],
                )
            )
    for r in resp.relations:
        msgs = ids(r.message_ids)
        if msgs and r.subject and r.object:
            out.relations.append(
                Relation(
                    subject=r.subject,
                    predicate=r.predicate,
                    object=r.object,
                    source_message_ids=[m.message_id for m in msgs],
                    at=msgs[-1].ts,
                )
            )


def _parse_due(raw: str | None, m: ChatMessage) -> datetime | None:
    if not raw:
        return None
    try:
        due = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return due if due.tzinfo is not None else due.replace(tzinfo=m.ts.tzinfo)
