"""The data of the memory-update benchmark (:mod:`bench.updates_gen`): questions, deletions, the dataset,
values with their aliases and the normal form gold values are matched in (:func:`norm`)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench import updates_templates as T

__all__ = ["Dataset", "Deletion", "QType", "Question", "Value", "conflict", "norm", "value_pool"]

QType = Literal["current", "answerable", "edit", "retraction", "deleted", "unanswerable"]
PLATFORM = "updates-bench"


def norm(text: str) -> str:
    """NFKC, case-folded, without whitespace, punctuation and symbols: the form gold values are matched in."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in t if not (c.isspace() or unicodedata.category(c)[0] in "PSZ"))


class Question(BaseModel):
    qid: str
    chat_id: str
    lang: Literal["zh", "en"]
    chat_type: Literal["group", "private"]
    type: QType
    family: str  # a fact family, edit_time/edit_room, offsite, canary, member/absent/never (unanswerable)
    question: str
    subject: str | None = None  # the person, event, plan or task asked about
    expect: list[str] = Field(default_factory=list)  # aliases of the value to return (first: as stated)
    stale: list[list[str]] = Field(default_factory=list)  # superseded / original / withdrawn values, aliased
    evidence: list[str] = Field(default_factory=list)  # message ids that state ``expect`` (or the canary)


class Deletion(BaseModel):
    chat_id: str
    user: str
    user_name: str
    message_ids: list[str]
    canaries: list[str]


class Dataset(BaseModel):
    split: str
    seed: int
    half: int
    chats: int
    messages: list[dict[str, Any]]  # file order: edits and retractions after their original
    questions: list[Question]
    deletions: list[Deletion]


@dataclass(frozen=True)
class Value:
    surface: str  # as the chat says it
    names: tuple[str, ...]  # every accepted form (the gold)
    aliases: tuple[str, ...]  # the same, normalised (what is matched)

    @classmethod
    def parse(cls, entry: str) -> Value:
        parts = tuple(dict.fromkeys(p.strip() for p in entry.split("/") if p.strip()))
        return cls(parts[0], parts, tuple(dict.fromkeys(norm(p) for p in parts)))


def value_pool(pool: str, lang: str, half: int) -> list[Value]:
    if pool == "owner":
        return [Value.parse(e) for e in T.half(T.OWNERS[lang], half)]
    if pool == "plan_date":  # days 10-28 (two digits: no date is a prefix of another); tune even, test odd
        out = []
        for m, month in enumerate(T.MONTHS_EN, 4):
            for d in range(10 + half, 29, 2):
                zh, en = f"{m}月{d}日/{m}月{d}号", f"{month} {d}/{d} {month}"
                out.append(Value.parse(f"{zh}/{en}" if lang == "zh" else f"{en}/{zh}"))
        return out
    return [Value.parse(e) for e in T.half(T.VALUES[pool][lang], half)]


def conflict(a: Value, b: Value) -> bool:
    return any(x in y or y in x for x in a.aliases for y in b.aliases)
