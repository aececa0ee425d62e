"""The light English stemmer the BM25 tokens and keyword matching share (pure)."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["stem"]


def _undouble(stem: str) -> str:
    """running -> runn -> run, stopped -> stopp -> stop; keeps ll/ss/zz (falling, missed) and short stems (add)."""
    if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "aeioulsz":
        return stem[:-1]
    return stem


def _has_vowel(stem: str) -> bool:
    return any(c in "aeiouy" for c in stem)


@lru_cache(maxsize=1 << 16)  # pure; the same words recur in every message, document and question
def stem(word: str) -> str:
    """A light, conservative suffix stemmer for ASCII words: plural s/es/ies, then -ing/-ed, then final e.

    Stems are matching keys, not words: ``move``, ``moves``, ``moved`` and ``moving`` all become ``mov``;
    ``meetings`` and ``meeting`` both become ``meet``. Words of three letters or fewer and non-alphabetic
    or non-ASCII tokens are returned unchanged; -ing/-ed are only removed when a stem of three or more
    letters with a vowel remains (``string``, ``need``, ``speed`` stay).
    """
    if not word.isascii() or not word.isalpha() or len(word) <= 3:
        return word
    w = word
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ing") and len(w) >= 6 and _has_vowel(w[:-3]):
        w = _undouble(w[:-3])
    elif w.endswith("ed") and not w.endswith("eed") and len(w) >= 5 and _has_vowel(w[:-2]):
        w = _undouble(w[:-2])
    if w.endswith("e") and len(w) > 3 and not w.endswith("ee"):
        w = w[:-1]
    return w
