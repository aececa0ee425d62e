"""Compatibility surface: the extractive rules now live in :mod:`agents.extract` (one module per concern).

New code should import from ``agents.extract.<module>`` directly; this module only re-exports the names
that were public here before the split.
"""

from __future__ import annotations

from agents.extract.dates import ZH_DATE_WORD, DateMention, annotate_dates, find_dates, find_time
from agents.extract.person import Rewrite, conjugate, to_third_person
from agents.extract.slot_text import question_slot, short_answer_value, slot_sentence
from agents.extract.slots import (
    EN_SLOTS,
    MULTI_VALUED,
    ZH_SLOTS,
    SlotMatch,
    SlotRule,
    find_slots,
    is_retraction,
)
from agents.extract.tasks import (
    EN_DECISION,
    EN_TASK_GROUP,
    EN_TASK_NAMED,
    EN_TASK_REQUEST,
    EN_TASK_SELF,
    ZH_DECISION,
    ZH_TASK_GROUP,
    ZH_TASK_NAMED,
    ZH_TASK_REQUEST,
    ZH_TASK_SELF,
)
from agents.extract.text import (
    cjk_tags,
    has_cjk,
    is_filler,
    is_question,
    is_small_talk_question,
    split_sentences,
)

__all__ = [
    "EN_DECISION",
    "EN_SLOTS",
    "EN_TASK_GROUP",
    "EN_TASK_NAMED",
    "EN_TASK_REQUEST",
    "EN_TASK_SELF",
    "MULTI_VALUED",
    "ZH_DATE_WORD",
    "ZH_DECISION",
    "ZH_SLOTS",
    "ZH_TASK_GROUP",
    "ZH_TASK_NAMED",
    "ZH_TASK_REQUEST",
    "ZH_TASK_SELF",
    "DateMention",
    "Rewrite",
    "SlotMatch",
    "SlotRule",
    "annotate_dates",
    "cjk_tags",
    "conjugate",
    "find_dates",
    "find_slots",
    "find_time",
    "has_cjk",
    "is_filler",
    "is_question",
    "is_retraction",
    "is_small_talk_question",
    "question_slot",
    "short_answer_value",
    "slot_sentence",
    "split_sentences",
    "to_third_person",
]
