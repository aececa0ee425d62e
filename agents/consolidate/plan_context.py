"""The event a plan change means when it names none (pure): "Thursday moved to Friday 8pm btw", "Small change,
we'll meet at Marco's instead" — said in a chat that just scheduled the book club.

The distiller reads the event from the topic's earlier messages (``TopicContext.event_context``); a change said
in a later topic, or after the segmenter split the conversation, only has the memories. Here a plan change
without a slot takes the event of the latest time or place stated before it (within ``EVENT_HORIZON``) among
the live memories the consolidator compares it with, and so becomes an UPDATE of that event's time or place.
Only a time, or a place said with "at" ("meet at Marco's"), is taken: "we switched to Python" moves nothing.
"""

from __future__ import annotations

import re
from datetime import timedelta

from agents.consolidate.records import Similar
from language.extract.event_slots import find_plan_slots
from language.extract.plan_moves import moves_plan, names_what_moved
from language.text import has_cjk
from schemas import CandidateFact, MemoryKind

__all__ = ["EVENT_HORIZON", "with_event"]

EVENT_HORIZON = timedelta(days=7)  # a plan stated this long before a change is still the one it means
_EN_AT = re.compile(r"(?i)(?:at|@)\s")
_EN_MEET = re.compile(r"(?i)\b(?:meet|meets|meeting|gather|see (?:you|everyone|y'all)|venue|location|host|hosting)\b")
_MOVED_TO = re.compile(
    r"(?i)\b(?:to|until|till|til)\s+(?:the\s+|this\s+|next\s+)?$|"
    r"(?:改到|改成|改在|改为|推迟到|延期到|延后到|提前到|挪到|换到|调到)\s*$"
)


def with_event(c: CandidateFact, live: Similar) -> CandidateFact:
    """``c`` as a time or place of the event the conversation was planning, when it is a plan change that names
    none; else ``c`` unchanged."""
    if c.kind != MemoryKind.FACT or c.attribute or c.negated or not moves_plan(c.text):
        return c
    events = sorted(
        (r for r, _ in live if r.kind == MemoryKind.FACT and r.attribute in ("when", "where") and r.subject
         and r.valid_from <= c.event_time and c.event_time - r.valid_from <= EVENT_HORIZON),
        key=lambda r: r.valid_from,
    )  # fmt: skip
    if not events:
        return c
    event = events[-1].subject
    for slot in find_plan_slots(c.text, c.speaker or "", event=event):
        if slot.subject != event or slot.attribute not in ("when", "where") or not slot.value:
            continue
        if slot.attribute == "when" and not _MOVED_TO.search(c.text[max(0, slot.start - 20) : slot.start]):
            continue  # the time it is moved to, not any time it mentions ("… instead of X for next month")
        if slot.attribute == "when" and names_what_moved(c.text[: slot.start], c.speaker):
            continue  # "Farewell drinks time changed to 6pm": something else was moved, not the plan
        if slot.attribute == "where" and not has_cjk(c.text) and not (
            _EN_AT.match(c.text, slot.start) and _EN_MEET.search(c.text)
        ):
            continue  # a place where people meet ("we'll meet at Marco's instead"), not "I'm at Figma now"
        return c.model_copy(update={"attribute": slot.attribute, "subject": event, "value": slot.value})
    return c
