"""Everything of a distillation worth storing, as candidate memories (facts, summary, title, Q&A, tasks)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from language.extract.text import split_sentences
from language.text import has_cjk, tokenize
from schemas import CandidateFact, DistillResult, MemoryKind, stable_id

__all__ = ["candidates_from_result"]


def candidates_from_result(
    result: DistillResult, message_times: Mapping[str, datetime] | None = None
) -> list[CandidateFact]:
    """Everything of a distillation worth storing, as candidates: facts, summary, title, Q&A and tasks.

    The summary's sources are the messages its sentences came from (matched against the facts, answers and
    tasks), not the whole topic. ``message_times`` (message id -> time), when given, dates Q&A and tasks
    exactly; otherwise the facts' times are used, then the topic's end.
    """
    times: dict[str, datetime] = {}
    for fact in result.facts:
        for mid in fact.source_message_ids[:1]:
            times.setdefault(mid, fact.event_time)
    times.update(message_times or {})

    def when(ids: Sequence[str]) -> datetime:
        known = [times[i] for i in ids if i in times]
        return max(known) if known else result.ended_at

    def make(
        key: tuple[object, ...], kind: MemoryKind, text: str, ids: Sequence[str], **kw: object
    ) -> CandidateFact:
        return CandidateFact(
            fact_id=stable_id(result.chat_id, result.topic_id, kind.value, *key), chat_id=result.chat_id,
            topic_id=result.topic_id, kind=kind, text=text.strip(), source_message_ids=list(ids), **kw,
        )  # fmt: skip

    out = list(result.facts)
    topic_entities = result.entities[:10]
    if result.summary.strip():
        out.append(make((result.summary,), MemoryKind.SUMMARY, result.summary, _summary_sources(result),
                        entities=topic_entities, event_time=result.ended_at))  # fmt: skip
    if result.title.strip() and result.source_message_ids:
        out.append(make((result.title,), MemoryKind.TITLE, result.title, result.source_message_ids,
                        entities=topic_entities, event_time=result.ended_at))  # fmt: skip
    edited = set(result.edited_message_ids)
    for qa in result.qa_pairs:
        if qa.source_message_ids:
            key = tuple(qa.source_message_ids) + (
                (qa.answer,) if edited.intersection(qa.source_message_ids) else ()
            )
            out.append(make(key, MemoryKind.QA, f"Q: {qa.question} A: {qa.answer}",
                            qa.source_message_ids, event_time=when(qa.source_message_ids)))  # fmt: skip
    for task in result.tasks:
        if task.source_message_ids:
            kind = MemoryKind.DECISION if task.is_decision else MemoryKind.TASK
            out.append(make((task.text,), kind, _task_text(task.text, task.owner, task.due), task.source_message_ids,
                            subject=task.owner, event_time=when(task.source_message_ids)))  # fmt: skip
    return out


def _task_text(text: str, owner: str | None, due: datetime | None) -> str:
    cjk = has_cjk(text)
    parts = []
    if owner and owner not in text:
        parts.append(f"负责人：{owner}" if cjk else f"owner: {owner}")
    if due is not None:
        stamp = due.date().isoformat() if (due.hour, due.minute) == (0, 0) else due.strftime("%Y-%m-%d %H:%M")
        if stamp[:10] not in text:
            parts.append(f"截止：{stamp}" if cjk else f"due: {stamp}")
    if not parts:
        return text
    return f"{text}（{'；'.join(parts)}）" if cjk else f"{text} ({'; '.join(parts)})"


def _summary_sources(result: DistillResult) -> list[str]:
    items: list[tuple[set[str], list[str]]] = [
        (set(tokenize(f.text)), f.source_message_ids[:1]) for f in result.facts
    ]
    for q in result.qa_pairs:  # each side stands for its own message: a summary that quotes the question
        # does not show the answer, and claiming its message would hide the answer's own items behind it
        ask, answer = (q.source_message_ids[:1], q.source_message_ids[1:]) if len(q.source_message_ids) == 2 \
            else (list(q.source_message_ids), list(q.source_message_ids))
        items += [(set(tokenize(q.question)), ask), (set(tokenize(q.answer)), answer)]
    items += [(set(tokenize(t.text)), list(t.source_message_ids)) for t in result.tasks]
    ids: list[str] = []
    for sentence in split_sentences(result.summary):
        tokens = set(tokenize(sentence))
        if not tokens:
            continue
        score, best = max(
            ((len(tokens & it) / len(tokens), src) for it, src in items if it), default=(0.0, [])
        )
        if score >= 0.5:
            ids.extend(best)
    return list(dict.fromkeys(ids)) or list(result.source_message_ids)
