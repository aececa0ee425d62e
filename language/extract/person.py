"""A sentence told about its speaker: first person -> third person rewriting.

``I moved`` said by Alice becomes ``Alice moved``; ``my cat`` becomes ``Alice's cat``. Whom a slot is about is
:mod:`language.extract.subject`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from language.extract.subject import looks_like_name
from language.extract.text import cjk_tags
from language.text import has_cjk

__all__ = ["OUR_WORDS", "Rewrite", "attributed", "conjugate", "said_frame", "to_third_person"]

# the words our rewrite puts in: "we" is written "<speaker> and others", so any two records of one group share
# "others", which says nothing of what they are about
OUR_WORDS = frozenset({"others"})



def attributed(text: str, speaker: str) -> str:
    """``Melanie said the stories were inspiring`` / ``小王说：明天下雨``: a statement not about its speaker keeps
    who said it (read back by :func:`said_frame`)."""
    if has_cjk(text):
        return f"{speaker}说：{text}"
    first, _, rest = text.partition(" ")
    bare = re.sub(r"'s$", "", first.rstrip(",.!?"))
    if bare != "I" and not bare.isupper() and not looks_like_name(bare):
        first = first[:1].lower() + first[1:]
    return f"{speaker} said {first} {rest}".strip()


@lru_cache(maxsize=1024)
def said_frame(person: str) -> re.Pattern[str]:
    """The frame :func:`attributed` puts before a line of ``person``'s that is not about them."""
    return re.compile(rf"^\s*{re.escape(person)}(?: said\s+|说[：:])")


# ------------------------------------------------------------------------------ first person -> third person

_ADVERBS = frozenset(
    """really also just still usually often always never actually finally recently totally definitely already
    sometimes absolutely truly honestly seriously even only mostly generally now currently probably certainly
    personally mainly kinda literally basically officially no longer""".split()
)
_IRREGULAR_PAST = frozenset(
    """was were went got saw made took had came found gave knew thought felt left met ran said told bought
    brought began became wrote won lost kept sent spent built taught caught fell held heard paid sold stood
    understood drove ate drank swam sang flew grew drew chose spoke broke forgot woke wore did put set cut let
    hit quit hurt read slept meant sat lit led fed fought sought shot shut spread struck swept threw tore
    won't wouldn't can't couldn't shouldn't didn't wasn't weren't hadn't mightn't must might may can could
    would should will shall ought used need""".split()
)
# fmt: off
_THIRD_PERSON = {"am": "is", "'m": "is", "are": "is", "have": "has", "do": "does", "don't": "doesn't",
                 "haven't": "hasn't", "go": "goes", "aren't": "isn't", "wanna": "wants to", "gonna": "is gonna",
                 "gotta": "has to"}
_MODALS = frozenset("must might may can could would should will shall ought used need won't wouldn't can't couldn't "
                    "shouldn't didn't wasn't weren't hadn't mightn't put set cut let hit read".split())
# fmt: on
_INVERTERS = frozenset(
    "can could would will do did does should may might must shall let make made help".split()
)
_CONJUNCTIONS = frozenset("and but so or because since when if that while although though then".split())


def conjugate(word: str) -> str:
    """Third-person-singular present of a verb that followed ``I``; past forms and modals unchanged."""
    low = word.lower()
    if low in _THIRD_PERSON:
        return _THIRD_PERSON[low]
    if (
        not low.isalpha()
        or low in _IRREGULAR_PAST
        or low.endswith("ed")
        or low in _CONJUNCTIONS
        or low in ("to", "and", "too", "myself", "alone", "both", "all")
        or word[0].isupper()
    ):
        return word
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return word + "es"
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


_TOKEN_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\s+|.", re.S)
# fmt: off
_DROPPED_SUBJECT = {  # first word of a subject-less chat line -> how to restore the subject
    **{w: "{s} " + w for w in "just went got had took made started finished moved tried bought visited saw met can't "
       "wanted needed loved".split()},
    **{w: "{s} is " + w for w in "gonna going thinking planning hoping trying working heading feeling looking getting "
       "researching reading watching learning studying preparing waiting packing cooking writing doing having "
       "finishing starting moving building training practicing practising traveling travelling visiting "
       "saving applying interviewing recovering".split()},
    "been": "{s} has been", "love": "{s} loves", "hope": "{s} hopes", "think": "{s} thinks", "want": "{s} wants",
    "need": "{s} needs", "was": "{s} was", "am": "{s} is", "feel": "{s} feels", "felt": "{s} felt",
    "did": "{s} did", "didn't": "{s} didn't", "won't": "{s} won't", "don't": "{s} doesn't", "gotta": "{s} has gotta",
}
# fmt: on
_ED_ADJECTIVES = frozenset(
    "excited thrilled stoked pleased tired bored scared worried interested amazed exhausted relieved "
    "delighted surprised shocked stressed overwhelmed inspired motivated blessed".split()
)
_FINITE_RE = re.compile(
    r"(?i)\b(?:is|are|was|were|has|have|had|does|do|did|can|will|would|makes|helps|looks|seems)\b|'s\b"
)


_NOUN_THEN_PAST = re.compile(r"(?i)\s*\w+ing\s+\w+\s+\w{2,}ed\b")


@dataclass(frozen=True)
class Rewrite:
    text: str
    first_person: bool
    second_person_subject: bool


def to_third_person(sentence: str, speaker: str, addressee: str | None = None) -> Rewrite:
    """Rewrite a sentence so it stands alone: ``I moved`` -> ``Alice moved``, ``my cat`` -> ``Alice's cat``.

    ``you``/``your`` become the addressee when one is known; ``我`` becomes the speaker for Chinese.
    """
    if has_cjk(sentence):
        return _zh_third_person(sentence, speaker, addressee)
    tokens = _TOKEN_RE.findall(sentence)
    out: list[str] = []
    first = second = False
    conj_next = False
    words_seen = 0
    prev = ""  # the last non-space piece of ``out``, lowercased (what _prev_word(out) returns)
    for i, tok in enumerate(tokens):
        if tok.isspace():
            out.append(tok)
            continue
        if not tok[0].isalpha():
            out.append(tok)
            prev = tok.lower()
            conj_next = False
            continue
        low = tok.lower()
        at_start = words_seen == 0 or prev in _CONJUNCTIONS or (bool(prev) and not prev[0].isalnum())
        words_seen += 1
        if conj_next and _prev_word(out[:-2]) in _INVERTERS:
            conj_next = False  # "What can I say" -> "What can Alice say"
        if conj_next:
            out.append(tok if low in _ADVERBS else conjugate(tok))
            prev = out[-1].lower()
            conj_next = conj_next and low in _ADVERBS
            continue
        hyphenated = i + 1 < len(tokens) and tokens[i + 1] == "-"  # "me-time" stays
        repl, conj, is_first, is_second = (
            (None, False, False, False)
            if hyphenated
            else _en_pronoun(low, tok, speaker, addressee, at_start, tokens, i)
        )
        if repl is None and words_seen == 1 and not _has_subject_pronoun(tokens):
            repl = _dropped_subject(low, sentence, speaker)
            is_first = repl is not None
        out.append(tok if repl is None else repl)
        prev = out[-1].lower()
        conj_next = conj
        first = first or is_first
        second = second or is_second
    return Rewrite("".join(out), first, second)


def _dropped_subject(first: str, sentence: str, speaker: str) -> str | None:
    """Chat drops the subject: ``Gonna continue my edu`` -> ``Alice is gonna continue…``."""
    if first.endswith("ing") and first in _DROPPED_SUBJECT:
        head = re.split(r"[,;:\u2014\u2013]| - ", sentence, maxsplit=1)[0]
        # a gerund subject has a finite verb of its own: "Taking care of ourselves is vital"; a gerund naming
        # a thing has one after its noun: "Reading reminder moved to 9pm", "Parking permit expired"
        finite = _FINITE_RE.search(head) or _NOUN_THEN_PAST.match(head)
        return None if finite else _DROPPED_SUBJECT[first].format(s=speaker)
    if first in _DROPPED_SUBJECT:
        return _DROPPED_SUBJECT[first].format(s=speaker)
    if first in _ED_ADJECTIVES:
        return f"{speaker} is {first}"
    if (first.endswith("ed") and len(first) > 4) or (first in _IRREGULAR_PAST and first not in _MODALS):
        return f"{speaker} {first}"  # "Lost my job yesterday" -> "Alice lost…"
    return None


def _prev_word(out: list[str]) -> str:
    for tok in reversed(out):
        if not tok.isspace():
            return tok.lower()
    return ""


def _has_subject_pronoun(tokens: list[str]) -> bool:
    return any(
        t.lower() in ("i", "i'm", "i've", "i'd", "i'll", "we", "you", "he", "she", "they", "it")
        for t in tokens[:6]
    )


def _next_word(tokens: list[str], i: int) -> str:
    for tok in tokens[i + 1 :]:
        if tok.isspace():
            continue
        return tok.lower()
    return ""


def _en_pronoun(
    low: str, tok: str, speaker: str, addressee: str | None, at_start: bool, tokens: list[str], i: int
) -> tuple[str | None, bool, bool, bool]:
    """(replacement, conjugate-next-verb, first-person, second-person-subject) for one token."""
    if low not in _PRONOUNS:
        return None, False, False, False
    we = f"{speaker} and others"  # (OUR_WORDS)
    table = {
        "i": (speaker, True),
        "i'm": (f"{speaker} is", False),
        "i've": (f"{speaker} has", False),
        "i'll": (f"{speaker} will", False),
        "me": (speaker, False),
        "my": (f"{speaker}'s", False),
        "mine": (f"{speaker}'s", False),
        "myself": ("themselves", False),
        "we": (we, False),
        "we're": (f"{we} are", False),
        "we've": (f"{we} have", False),
        "we'll": (f"{we} will", False),
        "we'd": (f"{we} would", False),
        "us": (we, False),
        "our": (f"{speaker}'s", False),
        "ours": (f"{speaker}'s", False),
        "ourselves": ("themselves", False),
    }
    if low == "i'd":
        had = _next_word(tokens, i) in ("been", "never", "already") or _next_word(tokens, i).endswith("ed")
        return (f"{speaker} {'had' if had else 'would'}", False, True, False)
    if low in table:
        repl, conj = table[low]
        return repl, conj, True, False
    if addressee is None:
        return None, False, False, False
    if low in ("your", "yours"):
        return f"{addressee}'s", False, False, False
    second = {"you're": "is", "you've": "has", "you'll": "will", "you'd": "would", "you were": "was"}
    if low in second:
        return f"{addressee} {second[low]}", False, False, at_start
    if low == "yourself":
        return addressee, False, False, False
    if low == "you":
        nxt = _next_word(tokens, i)
        if nxt in ("guys", "all", "both", "two"):
            return None, False, False, False
        if at_start and nxt == "were":
            return addressee, False, False, True
        return addressee, at_start, False, at_start
    return None, False, False, False


_PRONOUNS = frozenset(  # every token _en_pronoun replaces; any other is returned unchanged
    "i i'm i've i'll i'd me my mine myself we we're we've we'll we'd us our ours ourselves "
    "your yours you're you've you'll you'd yourself you".split()
)
_ZH_DROP_TAGS = ("v", "d", "t")


def _zh_third_person(sentence: str, speaker: str, addressee: str | None) -> Rewrite:
    first = "我" in sentence or "咱" in sentence
    text = re.sub(r"我们|咱们|咱", f"{speaker}他们", sentence)
    text = text.replace("我", speaker)
    second = False
    if addressee:
        second = bool(re.match(r"^[，,\s]*(?:你|您)(?!们)", text))
        text = re.sub(r"(?:你|您)(?!们|好)", addressee, text)
    if not first and not second:
        tags = [t for t in cjk_tags(text) if t[1] != "x"]
        starts_with_verb = bool(tags) and (
            tags[0][1].startswith("v")
            or (tags[0][1] in _ZH_DROP_TAGS and len(tags) > 1 and tags[1][1].startswith(("v", "d", "p")))
            or (
                tags[0][0] in ("在", "从", "跟", "和", "给", "刚", "正在")
                and any(t[1].startswith("v") for t in tags[1:4])
            )
        )
        if starts_with_verb and not tags[0][0].startswith(("是", "有")):
            return Rewrite(speaker + text, True, False)
    return Rewrite(text, first, second)
