"""The asker's first person (pure rewrite + one lookup): "Where do I live now?" asked by Mia is "Where does Mia
live now?".

Memory states facts in the third person ("Mia moved to Lyon"), slot questions need a person ("Where does Mia
live now?" asks for Mia's ``lives_in``), and abstention needs to know whom the question is about. A bot's user
says "I", "my", "我": with ``RetrieveRequest.asker`` known, the routed pipeline reads the question with the
asker's display name in place of the first person (the response keeps the question as asked).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from retrieval.protocols import MemoryStore

__all__ = ["asker_name", "has_first_person", "in_third_person", "own_words_answer"]

_EN_FIRST = re.compile(r"(?i)\b(?:i|i['’]m|i['’]ve|i['’]ll|i['’]d|me|my|mine|myself)\b")
_ZH_FIRST = re.compile(r"我(?!们)")
_EN_RULES: tuple[tuple[str, str], ...] = (
    (r"\b(?:do|does) I\b", "does {n}"),
    (r"\bdid I\b", "did {n}"),
    (r"\bam I\b", "is {n}"),
    (r"\bwas I\b", "was {n}"),  # the past stays past: "Where was I living in 2020?"
    (r"\bhave I\b", "has {n}"),
    (r"\b(?:I am|I['’]m)\b", "{n} is"),
    (r"\b(?:I have|I['’]ve)\b", "{n} has"),
    (r"\bI['’]ll\b", "{n} will"),
    (r"\bI['’]d\b", "{n} would"),
    (r"\b(?:my|mine)\b", "{n}'s"),
    (r"\b(?:I|me|myself)\b", "{n}"),
)


def has_first_person(query: str) -> bool:
    return bool(_EN_FIRST.search(query) or _ZH_FIRST.search(query))


def in_third_person(query: str, name: str) -> str:
    """``query`` with its first person replaced by ``name`` ("When do I see my dentist?" -> "When does Mia
    see Mia's dentist?", "我现在住哪？" -> "小美现在住哪？"). Pure."""
    out = _ZH_FIRST.sub(name.replace("\\", r"\\"), query)
    for pattern, repl in _EN_RULES:
        out = re.sub(f"(?i){pattern}", repl.format(n=name).replace("\\", r"\\"), out)
    return out


async def asker_name(store: MemoryStore, chat_id: str, asker: str, participants: set[str],
                     trigger_id: str | None, now: datetime, days: tuple[float, ...] = (1, 7)) -> str | None:  # fmt: skip
    """The asker's display name: a participant with that name, else the name on the trigger message or on
    the asker's latest message before ``now`` (the chat's last activity, when earlier), looked for in the last
    day, then week (a busy chat's month is a long read on every question); None when they said nothing there
    (the question is then read as asked)."""
    for p in participants:
        if p.casefold() == asker.casefold():
            return p
    found = await store.get_messages(chat_id, [trigger_id]) if trigger_id else []
    if found and found[0].sender == asker:
        return found[0].display_name
    done = now
    for d in days:
        since = now - timedelta(days=d)
        recent = await store.list_messages(chat_id, since=since, until=done)
        name = next((m.display_name for m in reversed(recent) if m.sender == asker), None)
        if name is not None:
            return name
        done = since
    return None


def own_words_answer(features: dict[str, float]) -> bool:
    """A first-person question with the asker's own evidence among the first three items, covering the
    question as well as anything about someone else: "What do I drink now?" asked by Amy, with Amy's "I drink
    matcha now" and Ben's "I only drink green tea" on top (or asked by Ben: his own line second). The check's
    "about someone else" reading (learned on third-person questions, where both speakers discussing a subject
    is the typical trap) does not hold for the asker's own words."""
    return (
        features.get("named_first", 0.0) >= 0.33  # 1 / (1 + rank), rounded: rank <= 2
        and features.get("named_best_coverage", 0.0) > 0.0
        and features.get("named_best_coverage", 0.0) >= features.get("other_best_coverage", 0.0)
    )
