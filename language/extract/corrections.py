"""Corrections (pure): a sentence that gives a new value and names the one it replaces.

People correct themselves and each other in a few shapes that hold whatever the topic: "X, not Y",
"not Y but X", "X instead of Y", "不是Y，是X", "是X不是Y", "Y改成X", and a cue with no old value ("scratch
that", "I meant …", "更正", "说错了"). What is corrected is decided elsewhere (the consolidator replaces the
live fact holding the old value's words; read-time supersession ranks the newer statement first); this module
only finds the shape. A correction is a change, not a retraction: "it's Delft, not Rotterdam" states Delft.
"""

from __future__ import annotations

import re

from language.lazy_re import lazy
from language.text import has_cjk, text_cache

__all__ = ["corrected_span", "corrected_value", "denied_values", "is_correction"]

# ", not Y" closes a correction when Y is a value, not a hedge ("…, not sure", "…, not yet", "not bad")
_EN_HEDGE = frozenset(
    "sure yet really bad much many that this so too quite exactly always necessarily entirely just only even "
    "now ever very a an the me you him her us them it anymore again".split()
)
_EN_HEDGE_ANY = frozenset("yet sure really anymore all enough either".split())  # "not there yet", "not at all"
_EN_NOT_Y = lazy(
    r"(?i)(?:[,;–—]|\s-)\s*(?:and\s+|but\s+)?not\s+(?:on\s+|at\s+|in\s+|the\s+)?(?P<old>[^,.;:!?()]{1,40}?)"
    r"\s*(?=[,.;:!?()]|$|\s+(?:as|like)\s+(?:i|we)\s+(?:said|wrote|thought)\b)"
)
_EN_NOT_Y_BUT = lazy(
    r"(?i)\b(?:it's|its|it is|that's|that is|is|was|it was)\s+not\s+(?:on\s+|at\s+|in\s+)?(?P<old>[^,.;:!?()]{1,40}?)"
    r"\s*,?\s+(?:but|it's|its|it is)\s+"
)
_EN_CUE = lazy(
    r"(?i)\b(?:scratch that|i meant|i mean(?=[,\s])|correction\b|my mistake|my bad|typo|i misspoke|i was wrong|"
    r"wrong (?:day|date|time|place|number)|(?:let me|to) correct)"
)
_ZH_NOT_Y_IS_X = lazy(r"(?:^|[，,。！!；;：:\s]|其实|而且|应该|并)不是(?P<old>[^，,。！？!?；;是]{1,12})[，,]?\s*(?:而|其实|应该)?是")
_ZH_IS_X_NOT_Y = lazy(r"是[^，,。！？!?；;]{1,12}?[，,]?\s*(?:而)?不是(?P<old>[^，,。！？!?；;吗呢]{1,12})(?=$|[，,。！？!?；;了])")
_ZH_CUE = lazy(r"更正|纠正一下|说错了|口误|搞错了|记错了|写错了|打错了")


def corrected_span(sentence: str) -> tuple[int, int] | None:
    """Where the old value a correction names stands in the sentence, or None."""
    if has_cjk(sentence):
        for rx in (_ZH_NOT_Y_IS_X, _ZH_IS_X_NOT_Y):
            m = rx.search(sentence)
            if m:
                return m.span("old")
        return None
    m = _EN_NOT_Y_BUT.search(sentence)
    if m:
        return m.span("old")
    for m in _EN_NOT_Y.finditer(sentence):
        words = re.findall(r"[\w'-]+", m["old"].lower())
        if words and words[0] not in _EN_HEDGE and not _EN_HEDGE_ANY & set(words) and len(words) <= 6 and m.start():
            return m.span("old")
    return None


def corrected_value(sentence: str) -> str:
    """The old value a correction names ("Thursday the 12th, not Friday" -> "Friday"; "是周日，不是周六" ->
    "周六"), or ""."""
    span = corrected_span(sentence)
    return sentence[span[0] : span[1]].strip() if span else ""


def is_correction(sentence: str) -> bool:
    """The sentence corrects something said before: it names the old value or says it is a correction."""
    return bool(corrected_value(sentence)) or (_ZH_CUE if has_cjk(sentence) else _EN_CUE).search(sentence) is not None


# what a line says is not (or no longer) so, in any of its clauses: "it's the 29th not the 26th", "Delft, not
# Rotterdam", "wednesday instead of thursday", "不是周五了", "而不是周三"; the words right after the cue
_DENIED = lazy(r"(?i)\b(?:not|instead of|rather than|no longer|scratch|forget)\s+(?:the |a |an |on |at |in |to |from |by )?"
               r"(?P<en>[\w:'£$€.,-]+(?: [\w:'£$€.-]+)?)|(?:不是|而不是|不在|不去|不用|取消了?|别)(?P<zh>[^，。！？,.!?\s]{1,8})")
# an English word that names a value: a digit, a capital, a day's or month's name ("not sure" names none)
_VALUE = lazy(r"\d|^[A-Z]|^(?i:(?:mon|tues|wednes|thurs|fri|satur|sun)day|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*$)")


def denied_values(sentence: str) -> list[str]:
    """The values ``sentence`` says are not so, wherever it says it (a broader reading than
    :func:`corrected_value`, which needs the shape of a whole correction): in English the words after a
    negation that name a value, in Chinese the span after it."""
    out: list[str] = []
    for m in _DENIED.finditer(sentence):
        if m["zh"]:
            out.append(m["zh"].rstrip("了啦呢吧的"))
        else:
            out += [w for w in m["en"].replace(",", " ").split() if _VALUE.search(w)]
    return out


_NUMBER = lazy(r"\d+(?::\d+)?")


@text_cache(1 << 13)
def numbers(text: str) -> frozenset[str]:
    """The numbers and clock times a line says ("1pm lunch": 1; "at 8:30": 8:30): no keywords, but values."""
    return frozenset(_NUMBER.findall(text))


def denied_numbers(sentence: str) -> frozenset[str]:
    """The numbers and clock times among :func:`denied_values` ("12:30 instead of 1": 1; "make it 8:30 not 9": 9)."""
    return frozenset(n for v in denied_values(sentence) for n in _NUMBER.findall(v))
