"""Question -> answer pairs of a topic: an explicit reply, else the next message of someone else."""

from __future__ import annotations

from agents.distill.context import TopicContext
from language.extract.slot_text import question_slot
from language.extract.tasks import EN_TASK_REQUEST
from language.extract.text import is_filler, is_question, is_small_talk_question, split_sentences
from language.text import extract_keywords
from schemas import ChatMessage, QAPair

__all__ = ["answer_part", "find_qa", "question_part"]


def question_part(m: ChatMessage, names: frozenset[str]) -> str:
    parts = [
        s
        for s in split_sentences(m.text)
        if is_question(s)
        and not is_small_talk_question(s)
        and not EN_TASK_REQUEST.search(s)
        and (len(extract_keywords(s) - {n.lower() for n in names}) >= 1 or question_slot(s) is not None)
    ]
    return " ".join(parts)


def answer_part(m: ChatMessage, names: frozenset[str]) -> str:
    parts = [
        s for s in split_sentences(m.text) if not is_filler(s, names, answer=True) and not is_question(s)
    ]
    return " ".join(parts[:3])


def find_qa(ctx: TopicContext) -> tuple[list[QAPair], dict[str, str]]:
    """Question -> answer pairs; an answer is an explicit reply, else the next message of someone else.

    Returns the pairs and ``{answer message id: question message id}``.
    """
    pairs: list[QAPair] = []
    answered: dict[str, str] = {}
    for i, q in enumerate(ctx.msgs):
        question = question_part(q, ctx.names)
        if not question:
            continue
        answer = next(
            (a for a in ctx.msgs[i + 1 :] if a.parent_id == q.message_id and a.sender != q.sender), None
        )
        if answer is None:
            for a in ctx.msgs[i + 1 : i + 6]:
                if a.sender == q.sender:
                    continue
                if not (a.parent_id and a.parent_id != q.message_id) and a.message_id not in answered:
                    answer = a
                break
        text = answer_part(answer, ctx.names) if answer is not None else ""
        if answer is None or not text or answer.message_id in answered:
            continue
        answered[answer.message_id] = q.message_id
        pairs.append(
            QAPair(
                question=f"{q.display_name}: {question}",
                answer=f"{answer.display_name}: {text}",
                source_message_ids=[q.message_id, answer.message_id],
            )
        )
    return pairs, answered
