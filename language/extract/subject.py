"""Whom a statement is about: the clause before a slot predicate (``my sister lives in…``, ``我妈住在…``,
``我同事小刘…，在杭州上班``) names the subject; the speaker is only the source."""

from __future__ import annotations

import re

from language.extract.text import cjk_tags
from language.text import ENGLISH_STOPWORDS
from language.time.dates import ZH_DATE_TAIL

__all__ = ["RELATION_WORDS", "ZH_RELATIONS", "en_subject", "looks_like_name", "relative_subject", "zh_subject"]


RELATION_WORDS = (
    "wife husband partner boyfriend girlfriend sister brother mom mother dad father son daughter friend kid kids "
    "child children cousin aunt uncle grandma grandpa grandmother grandfather fiance fiancee roommate boss "
    "colleague coworker neighbor"
).split()
ZH_RELATIONS = (
    "老婆|老公|妻子|丈夫|女朋友|男朋友|对象|妈妈|妈|爸爸|爸|儿子|女儿|哥哥|姐姐|弟弟|妹妹|朋友|室友|同事|老板|"
    "表哥|表姐|表弟|表妹|堂哥|堂姐|堂弟|堂妹|舅舅|姑姑|阿姨|叔叔|爷爷|奶奶|外婆|外公|同学|邻居|领导"
)
_EN_STRIP = frozenset(
    """am is are was were 'm 's 've 're have has had will 'll would 'd be been being just now currently recently
    also still finally actually already really ever officially soon gonna going to want wanna plan planning
    hope hoping trying decided and then""".split()
)
_EN_NEG = frozenset(
    "not never no longer don't doesn't didn't isn't aren't wasn't haven't hasn't won't can't cannot".split()
)
_ZH_STRIP = re.compile(
    r"(?:现在|目前|已经|刚刚|刚|也|还|一直|都|就|又|最近|今年|去年|上个月|下个月|明年|准备|打算|要|会|将|已|正在|"
    r"马上|终于|其实|本来|原来|之前|以前|后来|从小|打小|养了一只|养了只|养了|养的|家的|家|的|一只|只|个)$"
)
_ZH_NEG = re.compile(r"(?:不再|已经不|不|没有|没)$")


def en_subject(prefix: str, speaker: str, names: frozenset[str]) -> tuple[str | None, bool]:
    """Who the clause before a predicate is about, and whether it negates it (``I don't`` -> speaker, True)."""
    clauses = re.split(r"[,;:]|\b(?:and|but|so|because|since|when|after|before|though)\b", prefix)
    words = clauses[-1].replace("\u2019", "'").split()
    negated = False
    while words:
        low = words[-1].lower()
        if low in _EN_DESIRE:
            return None, False  # "I want to move to Paris", "I'd love to live in Rome": a wish, not a fact
        if low in _EN_NEG or low.endswith("n't") or low == "used":
            negated = True  # "I don't live in…", "I used to work at…"
        elif low not in _EN_STRIP and not low.endswith("ly"):
            break
        words.pop()
    if not words:
        if len(clauses) == 1 or re.search(r"\b(?:I|I'm|I've|we)\b", prefix):
            return (
                speaker,
                negated,
            )  # dropped subject in chat: "Moved to Berlin last month", "I went and loved it"
        return None, negated  # "…so much energy and love everywhere": a noun, not a verb
    low = words[-1].lower()
    if low in ("i'd", "we'd"):
        return None, False
    if low in ("i", "i'm", "i've", "i'll", "we", "we're", "we've", "me"):
        return speaker, negated
    if len(words) >= 2 and words[-2].lower() in ("my", "our") and low in RELATION_WORDS:
        return f"{speaker}'s {low}", negated
    if len(words) >= 2 and words[-2].lower() in RELATION_WORDS and (words[-1] in names or looks_like_name(words[-1])):
        return words[-1], negated  # "my sister Ana works at…": Ana  # fmt: skip
    if low in ("he", "she", "he's", "she's") and len(words) == 1 and len(clauses) > 1:
        first = clauses[0].split()  # "Ana left Siemens, she works at Bosch now": the first clause's subject
        if first and (first[0] in names or looks_like_name(first[0])) and first[0] != speaker:
            return first[0], negated
    if len(words) == 1 and (words[0] in names or looks_like_name(words[0])):
        return words[0], negated
    full = " ".join(words)
    if full in names:
        return full, negated
    return None, negated


_EN_RELATIVE_HEAD = re.compile(
    rf"(?i)^\s*(?:my|our)\s+(?P<rel>{'|'.join(RELATION_WORDS)})\b(?:\s+(?P<name>(?-i:[A-Z][a-z]+))\b)?"
)
_ZH_RELATIVE_HEAD = re.compile(rf"^\s*我(?:的)?(?P<rel>{ZH_RELATIONS})")


def relative_subject(head: str, speaker: str, names: frozenset[str]) -> str | None:
    """The relative a sentence opens with, as a subject: ``My sister Ana …`` / ``我同事小刘…`` -> the name,
    ``My sister …`` / ``我妹妹…`` -> ``"<speaker>'s sister"`` (the key :func:`en_subject` gives); None for any
    other opening."""
    m = _EN_RELATIVE_HEAD.match(head) or _ZH_RELATIVE_HEAD.match(head)
    if m is None:
        return None
    if m.re is _ZH_RELATIVE_HEAD:
        return _zh_name_at(head[m.end() :], names) or f"{speaker}的{m['rel']}"
    name = m.groupdict().get("name")
    if name and (name in names or looks_like_name(name)):
        return name
    rel = m["rel"]
    return f"{speaker}'s {rel.lower()}" if rel.isascii() else f"{speaker}的{rel}"  # as en_/zh_subject name them


_ZH_SHORT_NAME = re.compile(r"[小老阿][\u4e00-\u9fff](?=[\u4e00-\u9fff]|$)")  # 小刘, 老周, 阿强


def _zh_name_at(text: str, names: frozenset[str], *, short: bool = True) -> str | None:
    """The person's name ``text`` opens with: a member's, a name jieba tags, or (``short``: right after a
    relation word, where a name is expected) a 小/老/阿 short name; a clause may open with 老实说 or 阿里."""
    for name in sorted(names, key=len, reverse=True):
        if name and text.startswith(name):
            return name
    if short and (m := _ZH_SHORT_NAME.match(text)):
        return m[0]
    tags = cjk_tags(text[:8])
    return tags[0][0] if tags and tags[0][1] in ("nr", "nrfg") and 2 <= len(tags[0][0]) <= 3 else None


def _carried_subject(prefix: str, speaker: str, names: frozenset[str]) -> str | None:
    """The subject of the nearest earlier clause of the sentence that opens with one (a relative, a member,
    ``我``), which a clause without its own subject carries on; None when none does."""
    for clause in reversed(re.split(r"[，,；;：:]", prefix)[:-1]):
        clause = clause.strip()
        if not clause:
            continue
        if (rel := relative_subject(clause, speaker, names)) is not None:
            return rel
        if clause.startswith(("我", "咱")):
            return speaker
        if (name := _zh_name_at(clause, names, short=False)) is not None:
            return name
    return None


def looks_like_name(word: str) -> bool:
    """A capitalised clause-initial word that is probably a person ("Bob"), not "Looks" / "Their" / "It's"."""
    low = word.lower()
    return (
        word[:1].isupper()
        and word.isalpha()
        and low not in _EN_NOT_NAMES
        and low not in ENGLISH_STOPWORDS
        and not low.endswith(("s", "ing", "ed", "ly"))
    )


_EN_DESIRE = frozenset("want wanna wants wish wishes hope hoping would dream dreaming".split())
_EN_NOT_NAMES = frozenset(
    "he she they it this that there who which what the a an everyone someone nobody somebody people their "
    "love life work sounds looks seems feels anyway maybe also just still even really actually".split()
)


def zh_subject(prefix: str, speaker: str, names: frozenset[str]) -> tuple[str | None, bool]:
    clause = re.split(r"[，,；;：:。！!？?]", prefix)[-1].strip()
    if re.search(r"想|希望|梦想|打算要", clause):
        return None, False  # a wish, not a fact
    negated = bool(re.search(r"以前|曾经|之前|原来", clause))  # "我以前在阿里工作": no longer true
    for _ in range(8):
        stripped = _ZH_STRIP.sub("", ZH_DATE_TAIL.sub("", clause))
        neg = _ZH_NEG.sub("", stripped)
        if neg != stripped:
            negated = True
        if neg == clause:
            break
        clause = neg
    if not clause and (carried := _carried_subject(prefix, speaker, names)) is not None:
        return carried, negated  # "我同事小刘跳槽去了阿里，在杭州上班": the dropped subject is the last one said
    if not clause or clause in ("我", "我们", "咱们", "咱"):
        return speaker, negated
    rel = re.fullmatch(rf"(?:我|我们)(?:的|家)?({ZH_RELATIONS})", clause)
    if rel:
        return f"{speaker}的{rel.group(1)}", negated
    if (head := _ZH_RELATIVE_HEAD.match(clause)) and _zh_name_at(clause[head.end() :], names) == clause[head.end() :]:
        return clause[head.end() :], negated  # "我同事小刘在阿里上班": 小刘
    if clause in names:
        return clause, negated
    tags = cjk_tags(clause)
    if len(tags) == 1 and tags[0][1] in ("nr", "nrt", "nrfg"):
        return clause, negated
    return None, negated
