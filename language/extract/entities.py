"""Named entities of a sentence (English capitalised phrases, Chinese jieba nouns, @mentions), their
normalised names and, gazetteer-free, their types (person, place, organisation, object, event, concept)."""

from __future__ import annotations

import re
import unicodedata

from language.extract.screen import screened
from language.extract.text import ZH_FILLERS, cjk_tags
from language.text import ENGLISH_STOPWORDS, has_cjk, text_cache
from language.time.dates import MONTHS, WEEKDAYS, ZH_DATE_WORD
from schemas.graph import EntityType

__all__ = [
    "MENTION_RE",
    "NOT_ENTITIES",
    "PERSON_SUBJECT_PREDICATES",
    "ZH_NOT_ENTITIES",
    "compatible",
    "entity_type",
    "find_entities",
    "is_participant",
    "normalise_name",
    "split_appositive",
]

MENTION_RE = re.compile(r"@([\w\u4e00-\u9fff.\-]+)")
CAPS_RE = re.compile(r"\b[A-Z][\w&'\-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w&'\-]*)*")
_ZH_ENTITY_TAGS = ("nr", "nrt", "nrfg", "ns", "nt", "nz", "n", "eng")
_MENTION_SPAN_RE = re.compile(r"@[\w.\-]+")
_POSSESSIVE_RE = re.compile(r"'s$")
_SPACES_RE = re.compile(r"\s+")
NOT_ENTITIES = frozenset(
    [w.title() for w in WEEKDAYS + MONTHS]
    + [w[:3].title() for w in WEEKDAYS + MONTHS]
    + "I I'm I've I'd I'll OK Ok Oh Wow Hey Hi Hello Thanks Yes Yeah No Next Last This Today Tomorrow".split()
)
ZH_NOT_ENTITIES = frozenset(ZH_FILLERS) | frozenset(
    "大家 时候 东西 事情 问题 时间 感觉 样子 地方 办法 情况 意思 朋友们".split()
)


def find_entities(sent: str, names: frozenset[str]) -> list[str]:
    """@mentions, Chinese name/place/noun words and English capitalised phrases of ``sent``, in order.
    Memoised (the distiller, its subjects and the title ask about the same sentences): a fresh list each call."""
    return list(_find_entities(sent, frozenset(names)))


@text_cache(8192)
def _find_entities(sent: str, names: frozenset[str]) -> tuple[str, ...]:
    found: list[str] = [f"@{x}" for x in MENTION_RE.findall(sent)]
    if has_cjk(sent):
        for word, tag in cjk_tags(sent):
            if (
                tag in _ZH_ENTITY_TAGS
                and len(word) >= 2
                and word not in ZH_NOT_ENTITIES
                and not ZH_DATE_WORD.fullmatch(word)
            ):
                found.append(word)
    for m in CAPS_RE.finditer(_MENTION_SPAN_RE.sub(" ", sent)):
        phrase = _POSSESSIVE_RE.sub("", m.group())
        words = phrase.split()
        at_start = not sent[: m.start()].strip(" \"'(") or sent[: m.start()].rstrip()[-1:] in ".!?:"
        if all(w in NOT_ENTITIES or w.lower() in ENGLISH_STOPWORDS for w in words):
            continue
        if at_start and len(words) == 1 and phrase not in names and not phrase.isupper():
            continue  # a capitalised first word is usually just a sentence start
        found.append(phrase)
    return tuple(dict.fromkeys(found))


# ------------------------------------------------------------------------------------ names and types

_EDGE_CHARS = " \t\"'“”‘’.,;:!?()[]{}，。！？；：、「」《》"
_DETERMINER = re.compile(r"^(?:the|a|an|my|our|his|her|their|your|this|that|these|those|some)\s+", re.I)
_APPOSITIVE = re.compile(r"^(?P<head>\S+(?: \S+){0,2}?),? the (?P<noun>[a-z]+)$", re.I)
_ZH_OWNER = re.compile(r"^(?:我的|我家的?|我们的|我们家的?|咱家的?)")


def split_appositive(name: str) -> tuple[str, str | None]:
    """``Mochi the cat`` -> (``Mochi``, ``cat``); a name without an appositive is returned as is."""
    m = _APPOSITIVE.match(name.strip())
    if m and m.group("head")[:1].isupper():
        return m.group("head"), m.group("noun").lower()
    return name, None


@text_cache(16384)  # pure; is_participant asks it for every participant of every name it checks
def normalise_name(name: str) -> str:
    """The key entities are merged on: NFKC, case-folded, no determiner, possessive or appositive.

    ``Mochi`` / ``mochi`` / ``Mochi the cat`` / ``the Mochi`` -> ``mochi``; ``我家的小白`` -> ``小白``.
    """
    s = unicodedata.normalize("NFKC", name).replace("\u2019", "'").strip(_EDGE_CHARS)
    s = split_appositive(s)[0]
    s = _POSSESSIVE_RE.sub("", s)
    if has_cjk(s):
        s = _ZH_OWNER.sub("", s).rstrip("的了")
    for _ in range(2):
        s = _DETERMINER.sub("", s)
    return _SPACES_RE.sub(" ", s).strip(_EDGE_CHARS).casefold()


def is_participant(name: str, participants: frozenset[str]) -> bool:
    """A speaker of the topic: by full name, first name, or a nickname of three letters or more that starts
    a participant's first name (``Mel`` for Melanie)."""
    key = normalise_name(name)
    if not key:
        return False
    for p in participants:
        first = normalise_name(p).split(" ")[0]
        if (
            key == normalise_name(p)
            or key == first
            or (len(key) >= 3 and " " not in key and first.startswith(key))
        ):
            return True
    return False


def compatible(a: EntityType, b: EntityType) -> bool:
    """Two types that may name one entity: equal, or one of them the catch-all ``concept``."""
    return a == b or "concept" in (a, b)


PERSON_SUBJECT_PREDICATES = frozenset(
    """lives_in works_at job school hometown age birthday relationship relationship_status phone email name
    pet_name likes dislikes visited attended joined owns hobby""".split()
)
"""Predicates whose subject is a person (``X lives_in …``): speakers and whoever a slot is about."""

_ORG_WORDS = frozenset(
    """inc corp corporation ltd llc company university college school academy institute bank hospital clinic
    foundation agency agencies association society club church team studio lab labs band charity organization
    organisation shelter center centre group nonprofit startup firm""".split()
)
_EVENT_HEADS = frozenset(
    """festival conference parade concert party wedding race marathon meeting workshop class classes ceremony
    game match tournament competition show exhibition fair trip reunion graduation birthday event rally
    protest march session retreat recital performance hike vacation holiday camp trip picnic gala
    fundraiser seminar webinar lecture course reading fest meetup gathering screening tour""".split()
)
_PLACE_HEADS = frozenset(
    """city town village park beach lake mountain mountains river museum street road avenue cafe café restaurant
    bar airport station island country state province hotel mall store shop gym garden forest trail coast
    bay valley desert neighborhood neighbourhood downtown""".split()
)
_ANIMALS = frozenset(
    "cat dog kitten puppy pet bird parrot hamster rabbit bunny fish turtle horse snake lizard".split()
)
_ZH_ORG = re.compile(
    r"(?:公司|大学|学院|集团|银行|医院|学校|中学|小学|研究所|研究院|协会|俱乐部|工作室|基金会|机构)$"
)
_ZH_EVENT = re.compile(
    r"(?:会议|婚礼|聚会|演唱会|音乐会|比赛|生日|展览|活动|旅行|音乐节|典礼|派对|讲座|培训|马拉松)$"
)
_ZH_PLACE = re.compile(
    r"(?:市|省|区|县|镇|村|路|街|公园|山|湖|海|岛|站|机场|酒店|餐厅|饭店|咖啡馆|商场|广场)$"
)
_ZH_ANIMAL = re.compile(r"(?:猫|狗|兔|兔子|鹦鹉|仓鼠)$")
_EN_PLACE_CUE = re.compile(
    r"(?i)\b(?:in|at|from|near|visit(?:ed|ing)?|(?:went|go|going|moved|move|came|come|flew|drove|back|trip|"
    r"travell?ed|welcome|way|road) to|(?:live|lives|living) in|based in)\s+(?:the\s+)?$"
)
_EN_PERSON_CUE = screened(re.compile(
    r"(?i)\b(?:by|met|meet|meeting|with|friend|mentor|singer|artist|author|writer|musician|composer|"
    r"mr\.?|mrs\.?|ms\.?|dr\.?)\s+$"
))
_MAY_FOLLOW = ENGLISH_STOPWORDS | frozenset(
    "yesterday today tomorrow tonight last next ago now again soon recently lately".split()
)
_ZH_PLACE_CUE = re.compile(r"(?:住在|搬到了?|搬去|去了?|到了?|在|来自|回)$")
_ZH_ORG_AFTER = re.compile(r"^(?:工作|上班|实习|任职)")


def entity_type(
    name: str,
    *,
    role: EntityType | None = None,
    participants: frozenset[str] = frozenset(),
    context: str = "",
) -> tuple[EntityType, str | None]:
    """Type (and subtype) of an entity, gazetteer-free, strongest evidence first.

    Speakers are persons; then the role a predicate gives (``lives_in`` -> place, ``works_at`` ->
    organisation, pets -> object/animal); then the name's own words (``… University``, ``… festival``,
    ``…公司``); then the words before it in ``context`` (``in/at/to/moved to`` + a capitalised name, ``住在/
    搬到/在…``); then jieba's tag for a Chinese name; else ``concept``.
    """
    if is_participant(name, participants):
        return "person", None
    lexical = _lexical_type(name)
    if role == "object" or (lexical and lexical[0] == "object"):
        return "object", (lexical[1] if lexical and lexical[0] == "object" else "animal")
    if role is not None:
        return role, None
    if lexical is not None:
        return lexical
    cue = _context_type(name, context)
    if cue is not None:
        return cue, None
    if has_cjk(name):
        tags = cjk_tags(name)
        tag = tags[-1][1] if tags else ""
        if len(tags) == 1 and tag in ("nr", "nrfg"):
            return "person", None
        return {"ns": "place", "nt": "organisation"}.get(tag, "concept"), None  # type: ignore[return-value]
    return "concept", None


def _lexical_type(name: str) -> tuple[EntityType, str | None] | None:
    if has_cjk(name):
        for pattern, etype in ((_ZH_ANIMAL, "object"), (_ZH_ORG, "organisation"), (_ZH_EVENT, "event"),
                               (_ZH_PLACE, "place")):  # fmt: skip
            m = pattern.search(name)
            if m:
                return etype, ("animal" if etype == "object" else None)  # type: ignore[return-value]
        return None
    words = [w.lower() for w in re.findall(r"[\w']+", name)]
    if not words:
        return None
    if len(words) == 1 and words[0] in _ANIMALS:
        return "object", "animal"
    if name[:1].islower() and words[0].endswith("ing") and len(words[0]) > 4:
        return "concept", "activity"  # "hiking in the mountains" is something one does, not a place
    if any(w in _ORG_WORDS for w in words):
        return "organisation", None
    if words[-1] in _EVENT_HEADS:
        return "event", None
    if words[-1] in _PLACE_HEADS:
        return "place", None
    return None


def _context_type(name: str, context: str) -> EntityType | None:
    at = context.find(name) if context else -1
    if at < 0:
        return None
    before, after = context[:at], context[at + len(name) :]
    if has_cjk(name):
        if re.search(r"在$", before) and _ZH_ORG_AFTER.match(after):
            return "organisation"
        return "place" if _ZH_PLACE_CUE.search(before) else None
    follow = re.match(r"\s+([a-z]+)", after)
    if not name[:1].isupper() or (follow and follow.group(1) not in _MAY_FOLLOW):
        return None  # a lowercase noun after it: the name is only part of a longer noun phrase
    if _EN_PERSON_CUE.search(before):
        return "person"
    return "place" if _EN_PLACE_CUE.search(before) else None
