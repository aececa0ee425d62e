"""Relation triples stated in a distillation, and the predicates they use.

A triple keeps its source message ids and time; its endpoints are still names (the graph core resolves them
to entity nodes). Predicates are the distiller's slot names (``lives_in``, ``pet_name:cat``…) plus
``visited`` / ``attended`` / ``joined``, relative words (``sister``) and ``mentions``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

from language.extract.entities import entity_type, is_participant, normalise_name
from language.extract.text import cjk_tags
from language.text import ENGLISH_STOPWORDS, has_cjk
from schemas import DistillResult, MemoryKind
from schemas.graph import EXCLUSIVE_PREDICATES, EntityType, is_exclusive

__all__ = [
    "EXCLUSIVE",
    "OPPOSITE",
    "Triple",
    "clean_entity",
    "is_exclusive",
    "normalise_predicate",
    "triples_from_result",
]

# ------------------------------------------------------------------------------------------ predicates

EXCLUSIVE = EXCLUSIVE_PREDICATES  # every other predicate (likes, visited, mentions…) is multi-valued
OPPOSITE = {"likes": "dislikes", "dislikes": "likes"}
_PREDICATE_ALIASES = {
    "relationship": "relationship_status",
    "live_in": "lives_in",
    "living_in": "lives_in",
    "resides_in": "lives_in",
    "moved_to": "lives_in",
    "work_at": "works_at",
    "works_for": "works_at",
    "employed_by": "works_at",
    "studies_at": "school",
    "like": "likes",
    "loves": "likes",
    "enjoys": "likes",
    "dislike": "dislikes",
    "hates": "dislikes",
    "pet_name": "pet_name:pet",
    "is_from": "hometown",
    "visit": "visited",
    "went_to": "visited",
}


def normalise_predicate(predicate: str) -> str:
    """``Lives In`` / ``lives-in`` -> ``lives_in``; known synonyms map to the slot names of the distiller."""
    base, sep, qualifier = predicate.strip().partition(":")
    p = re.sub(r"[\s\-]+", "_", base.strip().lower())
    p = _PREDICATE_ALIASES.get(p, p)
    if sep and not p.startswith("pet_name"):
        return f"{p}:{qualifier.strip().lower()}"
    if sep:
        return f"pet_name:{qualifier.strip().lower() or 'pet'}"
    return p


# --------------------------------------------------------------------------------------------- triples


@dataclass(frozen=True)
class Triple:
    """A relation stated in a topic, before its endpoints are resolved to entity nodes."""

    subject: str
    predicate: str
    object: str | None
    at: datetime
    source_message_ids: tuple[str, ...]
    fact: str | None = None
    speaker: str | None = None
    negated: bool = False  # a retraction: closes matching live edges instead of adding one
    object_type: EntityType | None = None  # a type the pattern that found it implies
    object_subtype: str | None = None


_NAME = r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)?"
_PETS = "cat|dog|kitten|puppy|pet|bird|parrot|hamster|rabbit|bunny|fish|turtle|horse|guinea pig|snake|lizard"
_RELATIVES = (
    "wife|husband|partner|boyfriend|girlfriend|sister|brother|mom|mother|dad|father|son|daughter|friend|"
    "cousin|aunt|uncle|grandma|grandpa|grandmother|grandfather|fiance|fiancee|roommate|boss|colleague|"
    "coworker|neighbor|neighbour|kids|kid|children|child"
)
_ZH_RELATIVES = (
    "老婆|老公|妻子|丈夫|女朋友|男朋友|对象|妈妈|妈|爸爸|爸|儿子|女儿|哥哥|姐姐|弟弟|妹妹|朋友|室友|同事|老板"
)
_PET_NAME = r"(?P<name>[A-Z][a-z][\w-]*)"
_EN_PETS = (  # (pattern, owner is in the pattern): "Alice's cat Mochi", "Mochi, Alice's cat", "a cat named Mochi"
    (re.compile(rf"\b(?P<owner>{_NAME})'s (?:(?:new|little|old|sweet|baby) )?(?P<pet>{_PETS}),?"
                rf"(?: is)?(?: (?:named|called))? {_PET_NAME}\b"), True),
    (re.compile(rf"\b{_PET_NAME}, (?P<owner>{_NAME})'s (?:(?:new|little|old|sweet|baby) )?(?P<pet>{_PETS})\b"), True),
    (re.compile(rf"\b(?:a|an|another|new|the) (?P<pet>{_PETS}) (?:named|called) {_PET_NAME}\b"), False),
)  # fmt: skip
_EN_RELATIVE = re.compile(rf"\b(?P<owner>{_NAME})'s (?P<rel>{_RELATIVES}),? (?P<name>[A-Z][a-z][\w-]*)\b")
_NOT_NAMES = frozenset("And But So Or The This That It Is Was Has Had Who Which When If Then".split())
_EN_VISIT = re.compile(
    r"\b(?P<verb>went to|been to|visited|visiting|travell?ed to|trip to|attended|attending|joined|joining)\s+"
    r"(?:(?:a|an|the|this|that|my|our|his|her|their|some|[A-Z]\w*'s)\s+)?"
    r"(?P<np>[A-Za-z][\w&'+-]*(?:\s+[A-Za-z][\w&'+-]*){0,4})"
)
_NP_STOP = frozenset(
    """yesterday today tonight tomorrow last next this that on in at with for and but to of from by when while
    because since so recently again together alone too also before after during around about just which who
    where it was is were are had has have ago few couple several one two three four five six seven eight nine
    ten some many lot lots week weeks month months year years day days weekend a an the yet already every each
    makes made make feels felt gives gave takes took keeps kept gets got seems looks""".split()
)
_ZH_VISIT = re.compile(r"(?P<verb>去了|去过|到过|参加了|参加过|参加|去)(?P<rest>.{2,12})")
_NOT_ENTITY_WORD = re.compile(
    r"(?i)^(?:I|I'm|I've|I'd|I'll|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|jan|feb|mar|apr|jun|jul|aug|"
    r"sep|sept|oct|nov|dec|ago)$"
)


_CLAUSE_START = frozenset("is are was were am be been in on at to not that it this so and but or".split())


def clean_entity(name: str | None) -> str | None:
    """``name`` without leading capitalised function words (``And LeBron`` -> ``LeBron``), or None if it
    cannot name an entity: pronoun runs (``Now I``), date words, a clause (``is awesome``), only stopwords."""
    words = (name or "").split()
    while words and words[0][:1].isupper() and words[0].lower().replace("'", "") in ENGLISH_STOPWORDS:
        words.pop(0)
    if not words or words[0] in _CLAUSE_START or any(_NOT_ENTITY_WORD.match(w) for w in words):
        return None
    if all(w.lower().replace("'", "") in ENGLISH_STOPWORDS for w in words):
        return None
    return " ".join(words)


def triples_from_result(
    result: DistillResult, *, mention_edges: bool = True, max_mentions_per_fact: int = 3
) -> list[Triple]:
    """Every relation a distillation states, deduplicated, in time order (a retraction keeps its own entry).

    Sources: ``result.relations``; facts filling an attribute/value slot (negated ones become retractions);
    pets, named relatives and visits in a fact's standalone text; and, with ``mention_edges``, up to
    ``max_mentions_per_fact`` entities a fact names (``subject —mentions→ entity``).
    """
    found: dict[tuple[str, str, str, bool], Triple] = {}

    def add(t: Triple) -> None:
        subject, obj = clean_entity(t.subject), clean_entity(t.object)
        if subject is None or (t.object is not None and obj is None):
            return
        t = replace(t, subject=subject, object=obj)
        key = (normalise_name(t.subject), t.predicate, normalise_name(t.object or ""), t.negated)
        if not key[0] or (t.object is not None and not key[2]) or key[0] == key[2]:
            return
        old = found.get(key)
        found[key] = t if old is None else _combine(old, t)

    for r in result.relations:
        add(Triple(r.subject, normalise_predicate(r.predicate), r.object, r.at, tuple(r.source_message_ids)))
    participants = frozenset(result.participants)
    for f in result.facts:
        subject = f.subject or f.speaker
        if f.kind != MemoryKind.FACT or not subject:
            continue
        sources = tuple(f.source_message_ids)
        if f.attribute and (f.value or f.negated):
            add(Triple(subject, normalise_predicate(f.attribute), f.value, f.event_time, sources, f.text,
                       f.speaker, f.negated))  # fmt: skip
        if f.negated:
            continue
        base = Triple(subject, "", None, f.event_time, sources, f.text, f.speaker)
        pattern = _pattern_triples(f.text, base)
        for t in pattern:
            add(t)
        if mention_edges:
            taken = [
                normalise_name(x) for x in (subject, f.value or "", *(t.object or "" for t in pattern)) if x
            ]
            for name in [e for e in f.entities if not e.startswith("@")][:max_mentions_per_fact]:
                key = normalise_name(name)
                if not is_participant(name, participants) and not any(_overlaps(key, t) for t in taken):
                    add(replace(base, predicate="mentions", object=name))
    return sorted(found.values(), key=lambda t: t.at)


def _combine(old: Triple, new: Triple) -> Triple:
    """One triple stated twice in a topic: the earlier statement, with both statements' sources."""
    return replace(
        old if old.at <= new.at else new,
        source_message_ids=tuple(dict.fromkeys(old.source_message_ids + new.source_message_ids)),
        fact=old.fact or new.fact,
        speaker=old.speaker or new.speaker,
        object_type=old.object_type or new.object_type,
        object_subtype=old.object_subtype or new.object_subtype,
    )


def _overlaps(a: str, b: str) -> bool:
    """One normalised name inside the other (``lgbtq`` / ``lgbtq support group``), on word boundaries."""
    if not a or not b:
        return False
    short, long_ = sorted((a, b), key=len)
    if has_cjk(short):
        return short in long_
    return re.search(rf"(?<!\w){re.escape(short)}(?!\w)", long_) is not None


def _pattern_triples(text: str, base: Triple) -> list[Triple]:
    """Pets, named relatives and visits stated in a standalone fact (``Alice's cat Mochi`` is Alice's)."""
    out: list[Triple] = []
    for pattern, owned in _EN_PETS:
        for m in pattern.finditer(text):
            if m.group("name") not in _NOT_NAMES:
                pet = m.group("pet").lower()
                out.append(replace(base, subject=m.group("owner") if owned else base.subject,
                                   predicate=f"pet_name:{pet}", object=m.group("name"), object_type="object",
                                   object_subtype=pet))  # fmt: skip
    for m in _EN_RELATIVE.finditer(text):
        if m.group("name") not in _NOT_NAMES:
            out.append(replace(base, subject=m.group("owner"), predicate=m.group("rel").lower(),
                               object=m.group("name"), object_type="person"))  # fmt: skip
    rel = re.fullmatch(rf"(?P<owner>.+?)(?:'s |的)(?P<rel>{_RELATIVES}|{_ZH_RELATIVES})", base.subject)
    if rel:  # a slot about "Alice's sister": the sister is a person related to Alice
        out.append(replace(base, subject=rel.group("owner"), predicate=rel.group("rel"), object=base.subject,
                           object_type="person"))  # fmt: skip
    out.extend(_zh_visits(text, base) if has_cjk(text) else _en_visits(text, base))
    return out


def _en_visits(text: str, base: Triple) -> list[Triple]:
    out: list[Triple] = []
    for m in _EN_VISIT.finditer(text):
        words: list[str] = []
        for w in m.group("np").split():
            if w.lower() in _NP_STOP:
                break
            words.append(w)
        if not words:
            continue
        obj, verb = " ".join(words), m.group("verb")
        kind = entity_type(obj)[0]
        predicate = (
            "joined" if verb.startswith("join")
            else "attended" if verb.startswith("attend") or kind == "event"
            else "visited"
        )  # fmt: skip
        default: EntityType = "organisation" if predicate == "joined" else "place"
        out.append(
            replace(base, predicate=predicate, object=obj, object_type=None if kind != "concept" else default)
        )
    return out


def _zh_visits(text: str, base: Triple) -> list[Triple]:
    out: list[Triple] = []
    for m in _ZH_VISIT.finditer(text):
        words: list[tuple[str, str]] = []
        for word, tag in cjk_tags(m.group("rest")):
            if not tag.startswith("n") or len(words) == 2:
                break
            words.append((word, tag))
        attend = m.group("verb").startswith("参加")
        if words and (attend or any(tag == "ns" for _, tag in words)):
            obj = "".join(w for w, _ in words)
            out.append(replace(base, predicate="attended" if attend else "visited", object=obj,
                               object_type="event" if attend else "place"))  # fmt: skip
    return out
