"""Prompt v1 for distilling one closed chat topic into memory items (one call per topic).

Messages are shown as ``[n] 2023-05-08T13:56+00:00 Alice: text`` with small integers ``n`` (1-based, chat
order); the model cites those numbers and the distiller maps them back to message ids. Dates come from the
messages themselves, never from the wall clock, so the same topic always yields the same prompt.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agents.llm import strict_json_schema
from schemas import ChatMessage, DistillJob

VERSION = "distill_v1"
SCHEMA_NAME = "distill_topic"

SLOTS = (
    "lives_in, works_at, job, school, hometown, age, birthday, relationship, phone, email, name, "
    "pet_name:<animal> (e.g. pet_name:cat), favorite_<thing> (e.g. favorite_book), likes, dislikes"
)


class Fact(BaseModel):
    text: str = Field(description="One standalone statement in the third person with names, absolute dates.")
    message_ids: list[int] = Field(default_factory=list)
    speaker: str | None = None
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None
    negated: bool = False
    entities: list[str] = Field(default_factory=list)


class QA(BaseModel):
    question: str
    answer: str
    message_ids: list[int] = Field(default_factory=list)


class Task(BaseModel):
    text: str
    owner: str | None = None
    due: str | None = Field(default=None, description="ISO 8601 date or date-time, or null")
    is_decision: bool = False
    message_ids: list[int] = Field(default_factory=list)


class Triple(BaseModel):
    subject: str
    predicate: str
    object: str
    message_ids: list[int] = Field(default_factory=list)


class Response(BaseModel):
    """Every list defaults to empty so a truncated-then-repaired reply still validates."""

    title: str = ""
    summary: str = ""
    facts: list[Fact] = Field(default_factory=list)
    qa_pairs: list[QA] = Field(default_factory=list)
    tasks: list[Task] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    relations: list[Triple] = Field(default_factory=list)


def schema() -> dict[str, Any]:
    return strict_json_schema(Response)


def validate(data: dict[str, Any]) -> Response:
    """Parse a reply; an empty one (no summary, no facts) is rejected so the client retries."""
    response = Response.model_validate(data)
    if not (response.summary.strip() or response.facts or response.tasks or response.qa_pairs):
        raise ValueError("empty distillation")
    return response


def numbered(job: DistillJob, max_messages: int = 200) -> list[ChatMessage]:
    """The messages shown to the model, in chat order; message ``[n]`` is ``numbered(job)[n - 1]``."""
    return sorted(job.messages, key=lambda m: m.ts)[-max_messages:]


_SYSTEM = f"""You distil one topic of a group or private chat into long-term memory for a chat assistant.
Return JSON only, matching the schema. Rules:
- facts: atomic, standalone statements worth remembering (personal facts, preferences, plans, events,
  numbers, decisions). Skip greetings and small talk. Write them in the third person with the speaker's name
  instead of I/me/my/我 (e.g. "I moved to Hangzhou" said by Alice -> "Alice moved to Hangzhou"; "my cat" ->
  "Alice's cat"). Keep the language of the chat.
- Resolve relative dates ("yesterday", "last Friday", "上周五", "下个月") against the date of the message that
  says them, and write the absolute date in the text, e.g. "(on 2023-05-07)".
- speaker: who said it; subject: whom the fact is about; attribute/value: when the fact fills a known slot
  ({SLOTS}), else null; negated: true when the message denies or retracts something ("no longer", "不再").
- message_ids: the bracketed numbers [n] of the messages a fact, answer or task comes from.
- title: a few keywords naming the topic; summary: at most 3 sentences with names and conclusions.
- qa_pairs: questions asked in the chat and the answers other participants gave.
- tasks: assignments, promises and decisions, with owner (a participant name or null) and due date (ISO).
- relations: (subject, predicate, object) triples such as (Alice, lives_in, Hangzhou)."""


def build(job: DistillJob, *, max_messages: int = 200, max_chars: int = 1500) -> list[dict[str, Any]]:
    msgs = numbered(job, max_messages)
    lines = []
    for i, m in enumerate(msgs, start=1):
        text = m.text if len(m.text) <= max_chars else m.text[:max_chars] + "…"
        reply = ""
        if m.reply_to:
            target = next((j for j, o in enumerate(msgs, start=1) if o.message_id == m.reply_to), None)
            reply = f" (reply to [{target}])" if target else ""
        lines.append(f"[{i}] {m.ts.isoformat(timespec='minutes')} {m.display_name}{reply}: {text}")
    participants = ", ".join(dict.fromkeys(m.display_name for m in msgs))
    first, last = (msgs[0].ts, msgs[-1].ts) if msgs else (job.at, job.at)
    user = (
        f"Chat type: {msgs[0].chat_type if msgs else 'group'}. Participants: {participants}.\n"
        f"Topic dates: {first.date().isoformat()} to {last.date().isoformat()} "
        f"(weekday of the first message: {first.strftime('%A')}).\n\nMessages:\n" + "\n".join(lines)
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]
