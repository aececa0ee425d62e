"""Slots as text: a slot value as a standalone sentence, the slot a question asks about, a short answer's value."""

from __future__ import annotations

import re

from language.extract.slots import PETS, ZH_PET
from language.extract.text import split_sentences
from language.text import has_cjk

__all__ = ["question_slot", "short_answer_value", "slot_sentence"]

# fmt: off
_EN_TEMPLATES = {  # slot -> (statement, negated statement)
    "lives_in": ("{s} lives in {v}", "{s} no longer lives in {v}"),
    "works_at": ("{s} works at {v}", "{s} no longer works at {v}"),
    "job": ("{s} works as {v}", "{s} no longer works as {v}"),
    "likes": ("{s} likes {v}", "{s} does not like {v}"),
    "dislikes": ("{s} dislikes {v}", "{s} no longer dislikes {v}"),
    "age": ("{s} is {v} years old", "{s} is not {v} years old"),
    "birthday": ("{s}'s birthday is {v}", "{s}'s birthday is not {v}"),
    "relationship": ("{s} is {v}", "{s} is no longer {v}"),
    "school": ("{s} studies at {v}", "{s} no longer studies at {v}"),
    "phone": ("{s}'s phone number is {v}", "{s}'s phone number is no longer {v}"),
    "email": ("{s}'s email is {v}", "{s}'s email is no longer {v}"),
    "hometown": ("{s} is from {v}", "{s} is not from {v}"),
    "diet": ("{s} is {v}", "{s} is no longer {v}"),
    "address": ("{s}'s address is {v}", "{s}'s address is no longer {v}"),
    "name": ("{s}'s name is {v}", "{s}'s name is not {v}"),
    "pet_name": ("{s}'s {k} is named {v}", "{s}'s {k} is no longer named {v}"),
    "favorite": ("{s}'s favorite {k} is {v}", "{s}'s favorite {k} is no longer {v}"),
    "when": ("The {s} is {v}", "The {s} is no longer {v}"),
    "where": ("The {s} is at {v}", "The {s} is no longer at {v}"),
    "owner": ("{v} is responsible for the {s}", "{v} is no longer responsible for the {s}"),
}
# fmt: on
# fmt: off
_ZH_TEMPLATES = {
    "lives_in": ("{s}住在{v}", "{s}不再住在{v}"), "works_at": ("{s}在{v}工作", "{s}不再在{v}工作"),
    "job": ("{s}是{v}", "{s}不再是{v}"), "likes": ("{s}喜欢{v}", "{s}不喜欢{v}"),
    "dislikes": ("{s}不喜欢{v}", "{s}不再讨厌{v}"), "age": ("{s}{v}岁", "{s}不是{v}岁"),
    "birthday": ("{s}的生日是{v}", "{s}的生日不是{v}"), "relationship": ("{s}{v}了", "{s}不再{v}"),
    "school": ("{s}在{v}上学", "{s}不再在{v}上学"), "phone": ("{s}的手机号是{v}", "{s}的手机号不再是{v}"),
    "email": ("{s}的邮箱是{v}", "{s}的邮箱不再是{v}"), "hometown": ("{s}的老家在{v}", "{s}的老家不在{v}"),
    "diet": ("{s}{v}", "{s}不再{v}"), "address": ("{s}的地址是{v}", "{s}的地址不再是{v}"),
    "name": ("{s}的名字是{v}", "{s}的名字不是{v}"), "pet_name": ("{s}的{k}叫{v}", "{s}的{k}不再叫{v}"),
    "favorite": ("{s}最喜欢的{k}是{v}", "{s}最喜欢的{k}不再是{v}"),
    "when": ("{s}时间：{v}", "{s}不再是{v}"), "where": ("{s}地点：{v}", "{s}地点不再是{v}"),
    "owner": ("{s}由{v}负责", "{s}不再由{v}负责"),
}
# fmt: on


def slot_sentence(attribute: str, value: str | None, subject: str, negated: bool, cjk: bool) -> str | None:
    """A short standalone sentence stating one slot value: ``Alice lives in Berlin`` / ``小王住在杭州``."""
    base, _, qualifier = attribute.partition(":")
    if base.startswith("favorite_"):
        base, qualifier = "favorite", base.removeprefix("favorite_").replace("_", " ")
    templates = (_ZH_TEMPLATES if cjk else _EN_TEMPLATES).get(base)
    if templates is None or not value:
        return None
    return templates[1 if negated else 0].format(s=subject, v=value, k=qualifier or "pet")


# --------------------------------------------------------------------------------- questions about a slot

_QUESTION_SLOTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"(?i)\bwhere (?:do|did) you (?:live|stay)|where are you (?:living|based|staying)|where(?:'d| did) you move"
        ),
        "lives_in",
    ),
    (
        re.compile(r"(?i)\bwhere (?:do|are) you (?:work|working)|who do you work for|which company"),
        "works_at",
    ),
    (
        re.compile(
            r"(?i)\bwhat do you do(?: for (?:a living|work))?\s*\??$|what(?:'s| is) your (?:job|profession)"
        ),
        "job",
    ),
    (re.compile(r"(?i)\bhow old are you"), "age"),
    (re.compile(rf"(?i)\bwhat(?:'s| is) (?:your|the) {PETS}(?:'s)? (?:name|called)"), "pet_name"),
    (re.compile(r"(?i)\bwhen(?:'s| is) your birthday"), "birthday"),
    (re.compile(r"(?i)\bwhere are you (?:originally )?from"), "hometown"),
    (re.compile(r"(?:你|您)(?:现在)?住(?:在)?哪|(?:你|您)家在哪"), "lives_in"),
    (re.compile(r"(?:你|您)(?:现在)?在哪(?:里|儿|家公司)?(?:工作|上班)"), "works_at"),
    (re.compile(r"(?:你|您)(?:是)?(?:做|干)什么(?:工作)?的|(?:你|您)的工作是什么"), "job"),
    (re.compile(r"(?:你|您)(?:今年)?(?:多大|几岁)"), "age"),
    (re.compile(r"(?:你|您)(?:家|的)?(?P<pet>猫咪|猫|狗狗|狗)(?:叫什么|的名字)"), "pet_name"),
    (re.compile(r"(?:你|您)的?生日"), "birthday"),
    (re.compile(r"(?:你|您)(?:是)?哪里人|(?:你|您)的?老家在哪"), "hometown"),
)
_ANSWER_LEAD = re.compile(
    r"(?i)^(?:(?:yes|yeah|well|oh|um|so|actually|now|currently)[,!. ]+)*(?:i(?:'m| am)?\s*(?:live|living|work|working|"
    r"based|from|staying)?\s*(?:in|at|for|from)?\s+|(?:it's|it is|its|he's|she's|that's|they're|his name is|"
    r"her name is|its name is|(?:my )?\w+'s name is)\s+|in\s+|at\s+|我(?:现在)?(?:住在|住|在|是|叫|今年)?|在|住在|叫|是)"
)


def question_slot(question: str) -> tuple[str, str | None] | None:
    """The slot a question asks the addressee about (``where do you live?`` -> ``lives_in``)."""
    for pattern, attribute in _QUESTION_SLOTS:
        m = pattern.search(question)
        if m:
            pet = m.groupdict().get("pet")
            return attribute, (ZH_PET.get(pet, pet).lower() if pet else None)
    return None


def short_answer_value(answer: str) -> str | None:
    """The bare value of a short answer (``In Hangzhou now!`` -> ``Hangzhou now``), or None if not short."""
    text = split_sentences(answer)[0] if answer.strip() else ""
    text = _ANSWER_LEAD.sub("", text.strip()).strip(" .!?。！？~,，")
    text = re.sub(r"(?i)\s+(?:now|currently|these days)$|(?:了|啦|呢|哦|呀)+$", "", text).strip()
    if not text or (has_cjk(text) and len(text) > 12) or (not has_cjk(text) and len(text.split()) > 4):
        return None
    return text
