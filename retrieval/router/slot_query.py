"""Slot questions (pure): which slot a question asks about, and the chat's current value of it.

Distillation names the slot a fact fills (``lives_in`` of 小王, ``when`` of the office move, ``owner`` of
the release notes) and consolidation keeps exactly one live version of a single-valued slot. A question
that asks for such a slot ("Where does Wendy work now?", "机房搬迁现在定在哪天？", "发布说明现在归谁？") is
best answered by that live version, whatever the wording of the statements around it: :func:`parse`
reads the question's slot(s) and subject, :func:`current_values` picks the live facts that fill them,
newest first. The router puts them on top (``pipeline.slot_answers``); the stale versions are handled by
:mod:`retrieval.router.currency` as for every other item.

A question about the past ("Where did she live before?", "以前住哪") is not a slot question: its answer
is a superseded version, which the ordinary strategies and the currency notes find.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from agents.consolidate.records import norm_text as _norm
from agents.consolidate.records import value_in
from language.extract.subject import RELATION_WORDS, ZH_RELATIONS, looks_like_name
from language.text import has_cjk
from retrieval.router.slot_cues import LABEL
from schemas import MemoryRecord

__all__ = ["SlotQuery", "current_values", "parse", "states_superseded", "subject_in_text", "superseded_values"]


class SlotQuery(BaseModel):
    """The slots a question may ask for (in order of likelihood) and whom/what they are about."""

    model_config = ConfigDict(frozen=True)

    attributes: tuple[str, ...]
    person: str | None = None  # a participant named in the question (person slots)
    event: bool = False  # the subject is an event/plan/task named in the question (plan slots)


_PAST = re.compile(
    r"(?i)\b(?:before|previously|used to|formerly|originally|at first|in the past|last year|back then|ago|"
    r"did|was|were|first)\b|以前|之前|原来|原先|本来|起初|最早|当初|过去|曾经|上次"
)
_EN_PERSON = (
    ("lives_in", re.compile(r"(?i)\b(?:live|lives|living|based|reside|resides|home|city|move[sd]?|moving)\b")),
    ("works_at", re.compile(r"(?i)\b(?:work|works|working|job|employer|employed|company|firm|workplace)\b")),
    ("address", re.compile(r"(?i)\b(?:address|street)\b")),
    ("diet", re.compile(r"(?i)\b(?:diet|vegetarian|vegan|pescatarian|eats? meat|eating meat)\b")),
)
_ZH_PERSON = (
    ("lives_in", re.compile(r"住(?!址)|家在|哪个城市|城市生活|安家|定居")),
    ("works_at", re.compile(r"上班|工作|公司|东家|单位|就职|任职")),
    ("address", re.compile(r"地址|住址|门牌")),
    ("diet", re.compile(r"吃素|素食|饮食|吃肉|忌口")),
)
_EN_FAVORITE = re.compile(
    r"(?i)\b(?:what|which) (?P<k>\w+) (?:is|are|does|do)\b.*\b(?:favou?rite|like[sd]? (?:the )?most|loves? (?:the )?most|"
    r"likes? best|best)\b|\b(?:favou?rite|fave|top) (?P<k2>(?!(?:these|now|nowadays|today|currently|lately|recently|at|of|in|right|"
    r"then|this)\b)\w+)"
)
_ZH_FAVORITE = re.compile(r"最(?:喜欢|爱)的?(?:哪个|哪种|哪家|什么|啥)?(?P<k>[\u4e00-\u9fff]{1,3}?)(?:是|[？?]|$)")
_EN_WHEN = re.compile(r"(?i)\b(?:when|what day|which day|what date|which date|what time|date|day)\b")
_ZH_WHEN = re.compile(r"什么时候|哪天|几号|几月|周几|星期几|礼拜几|几点|日期|时间|哪一天")
_EN_WHERE = re.compile(r"(?i)\b(?:where|venue|location|place|which room|what room)\b")
_ZH_WHERE = re.compile(r"在哪|哪里|哪儿|地点|什么地方|哪个会议室|哪家")
_EN_OWNER = re.compile(r"(?i)\b(?:who|whose|owner|in charge|responsible)\b")
_ZH_OWNER = re.compile(r"谁|负责人|归谁")


def parse(query: str, participants: Iterable[str] = ()) -> SlotQuery | None:
    """The slot question in ``query``, or None (no slot, or a question about an earlier value)."""
    if _PAST.search(query):
        return None
    cjk = has_cjk(query)
    low = query.casefold()
    person = next((p for p in sorted(set(participants), key=len, reverse=True) if p and _named(p, query, cjk)), None)
    if person is None and not cjk:  # someone talked about, not a member: "Where does Ana work now?"
        person = next((m[0] for m in re.finditer(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*", query)  # one name, mid-sentence
                       if m.start() > 0 and " " not in m[0] and not query[: m.start()].lower().endswith("the ")
                       and looks_like_name(m[0])), None)  # fmt: skip  # not "the Book Club"
    if person is not None:  # a relative of theirs: "张三的老婆…", "Bob's sister…" (the subject distillation names)
        rel = re.search(rf"{re.escape(person)}的?({ZH_RELATIONS})" if cjk else
                        rf"(?i){re.escape(person)}'s ({'|'.join(RELATION_WORDS)})\b", query)  # fmt: skip
        person = (f"{person}的{rel[1]}" if cjk else f"{person}'s {rel[1].lower()}") if rel else person
    attrs: list[str] = []
    fav = (_ZH_FAVORITE if cjk else _EN_FAVORITE).search(query)
    if fav is not None:
        kind = (fav.group("k") or (fav.groupdict().get("k2") or "")).strip().lower()
        if kind:
            attrs.append("favorite_" + kind.replace(" ", "_"))
    if person is not None:
        for attr, cue in _ZH_PERSON if cjk else _EN_PERSON:
            if cue.search(query):
                attrs.append(attr)
    if (_ZH_WHEN if cjk else _EN_WHEN).search(query):
        attrs.append("when")
    if (_ZH_WHERE if cjk else _EN_WHERE).search(query):
        attrs.append("where")
    if (_ZH_OWNER if cjk else _EN_OWNER).search(low):
        attrs.append("owner")
    if not attrs:
        return None
    return SlotQuery(attributes=tuple(dict.fromkeys(attrs)), person=person,
                     event=any(a in ("when", "where", "owner") for a in attrs))  # fmt: skip


def _named(name: str, query: str, cjk: bool) -> bool:
    if cjk or has_cjk(name):
        return name in query
    return re.search(rf"(?i)(?<!\w){re.escape(name)}(?!\w)", query) is not None


def subject_in_text(subject: str | None, query: str) -> bool:
    """A plan slot's subject (an event or task noun: ``move``, ``机房搬迁``, ``release notes``) is named in
    ``query`` (a question, or any text)."""
    if not subject:
        return False
    if has_cjk(subject):
        return _norm(subject) in _norm(query)
    words = [w for w in re.split(r"\W+", subject.casefold()) if w and w not in ("the", "a", "an", "our")]
    return bool(words) and all(re.search(rf"(?<!\w){re.escape(w)}s?(?!\w)", query.casefold()) for w in words)


def _asked(sq: SlotQuery, query: str, r: MemoryRecord) -> bool:
    """``r`` fills one of the asked slots for the asked subject."""
    if not r.attribute or r.attribute not in sq.attributes or not r.value:
        return False
    if r.attribute in ("when", "where", "owner"):
        return sq.event and subject_in_text(r.subject, query)
    return sq.person is not None and _norm(r.subject) == _norm(sq.person)


def current_values(sq: SlotQuery, query: str, records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    """The live facts filling the question's slots for its subject, newest first: one per slot, since a
    question asks about one thing (an event may be keyed ``迁移`` in one statement, ``数据库迁移`` in another)."""
    best: dict[str, MemoryRecord] = {}
    for r in records:
        if not r.live or not _asked(sq, query, r):
            continue
        key = r.attribute or ""
        if key not in best or r.valid_from > best[key].valid_from:
            best[key] = r
    rank = {a: i for i, a in enumerate(sq.attributes)}
    return sorted(best.values(), key=lambda r: (rank[r.attribute], -r.valid_from.timestamp()))


def superseded_values(
    sq: SlotQuery, query: str, current: Iterable[MemoryRecord], others: Iterable[MemoryRecord]
) -> dict[str, MemoryRecord]:
    """Earlier values of the slots ``current`` fills (older live duplicates and invalidated versions in
    ``others``), each mapped to the current record that replaced it."""
    now = {r.attribute: r for r in current}
    out: dict[str, MemoryRecord] = {}
    for r in others:
        head = now.get(r.attribute) if _asked(sq, query, r) else None
        if head is None or r.memory_id == head.memory_id or r.valid_from > head.valid_from:
            continue
        if r.subject and head.subject and _norm(r.subject) != _norm(head.subject):
            continue  # another thing the question names ("When is lunch after the demo?": the demo's time)
        if r.value and _norm(r.value) and _norm(head.value) not in _norm(r.value) and _norm(r.value) not in _norm(
            head.value
        ):
            out[r.value] = head
    return out




def states_superseded(text: str, old: dict[str, MemoryRecord]) -> MemoryRecord | None:
    """The current record whose earlier value ``text`` states without also stating the current one (a
    summary's speaker label "小李: 报销的事小王负责" does not state the current owner 小李)."""
    said = LABEL.sub(" ", text)
    for value, head in old.items():
        if value_in(text, value) and not value_in(said, head.value):
            return head
    return None
