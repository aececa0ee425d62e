"""A literal screen in front of the extractors' rule patterns: strings one of which every match contains.

The distiller runs dozens of rule patterns over every sentence (slots, retractions, plans), and nearly all
of them find nothing: ~400 slot matches in ~9,000 sentences of LoCoMo and IRC, ~100 us of matching per
sentence. Most rules need a word the sentence rarely holds ("moved to", "vegan", "anymore"). :func:`needs`
reads those words off the pattern's parse tree, and :meth:`Screen.admits` checks them with ``in`` on the
sentence's :func:`fold` before the regex runs. The screen is exact: a pattern that would match always
passes it (a match contains one of the strings, whatever case it is in), so what the rules find is the same
with and without it; a pattern whose matches need no fixed string (``\\d{1,3}``, ``[A-Z]\\w+``) gets no
screen and always runs.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from re import _constants as c  # type: ignore[attr-defined]
from re import _parser as sre  # type: ignore[attr-defined]
from typing import Any

from language.text import text_cache

__all__ = ["Screen", "admitted", "fold", "needs", "screened"]

# the characters that IGNORECASE matches to an ASCII letter but ``str.lower`` leaves apart (found by trying
# every code point against every letter): dotted and dotless i, the long s. The Kelvin sign lowers to "k".
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
_MAX_STRINGS = 96  # a set of more alternatives costs about what the regex does
_END = sys.maxsize  # re.Pattern's default endpos
_MAX_SETS = 3  # the most selective sets are checked, the rest add little


@text_cache(4096)
def fold(text: str) -> str:
    """``text`` as the screen compares it: lower case, with the few letters :data:`re.IGNORECASE` matches
    to ASCII that lower() does not map there. Memoised: each extractor screens the same sentence."""
    return text.translate(_FOLD).lower()


def needs(pattern: re.Pattern[str]) -> tuple[frozenset[str], ...]:
    """Sets of folded ASCII strings such that every match of ``pattern`` contains a string of each set
    (empty: nothing known, the pattern always runs).

    Read off the parse tree: a run of literal characters is a set of one string; a sequence needs what each
    of its parts needs; an alternation needs, of each branch, its most selective set (the longest shortest
    string), united; a group or a repeat of at least one needs what its body needs. Only ASCII literals
    are used, folded: IGNORECASE matches them in any case (:func:`fold` maps those cases alike), and
    case-sensitive literals are folded on both sides."""
    tree = sre.parse(pattern.pattern, pattern.flags)
    found = [s for s in _sequence(list(tree), bool(tree.state.flags & re.IGNORECASE)) if min(map(len, s)) > 1]
    return tuple(frozenset(s) for s in sorted(found, key=_selectivity, reverse=True)[:_MAX_SETS])


def admitted(sets: tuple[frozenset[str], ...], folded: str) -> bool:
    """Whether a text whose :func:`fold` is ``folded`` holds a string of each of ``sets`` (:func:`needs`)."""
    for strings in sets:  # loops, not all(any(...)): this runs ~30 times a sentence
        for s in strings:
            if s in folded:
                break
        else:
            return False
    return True


class Screen:
    """A compiled pattern behind its :func:`needs`: the regex runs only on a text whose :func:`fold` holds
    them. It answers what the pattern would (``search``, ``match``, ``finditer``, ``sub``…; other attributes
    are the pattern's), so a module swaps ``re.compile(…)`` for ``screened(re.compile(…))``. The needs are
    read on first use, not at import (a CLI that never distils does not pay for them)."""

    __slots__ = ("_needs", "regex")

    def __init__(self, regex: re.Pattern[str]) -> None:
        self.regex = regex
        self._needs: tuple[frozenset[str], ...] | None = None

    def __getattr__(self, name: str) -> Any:  # pattern, flags, groupindex, groups
        if name in self.__slots__:  # not set yet (a copy made without __init__): no recursion
            raise AttributeError(name)
        return getattr(self.regex, name)

    def __repr__(self) -> str:
        return f"Screen({self.regex!r})"

    @property
    def needs(self) -> tuple[frozenset[str], ...]:
        if self._needs is None:
            self._needs = needs(self.regex)
        return self._needs

    def admits(self, text: str) -> bool:
        """Whether the pattern may match ``text`` (False: it cannot)."""
        sets = self._needs if self._needs is not None else self.needs
        return not sets or admitted(sets, fold(text))

    def search(self, string: str, pos: int = 0, endpos: int = _END) -> re.Match[str] | None:
        return self.regex.search(string, pos, endpos) if self.admits(string) else None

    def match(self, string: str, pos: int = 0, endpos: int = _END) -> re.Match[str] | None:
        return self.regex.match(string, pos, endpos) if self.admits(string) else None

    def fullmatch(self, string: str, pos: int = 0, endpos: int = _END) -> re.Match[str] | None:
        return self.regex.fullmatch(string, pos, endpos) if self.admits(string) else None

    def finditer(self, string: str, pos: int = 0, endpos: int = _END) -> Iterator[re.Match[str]]:
        return self.regex.finditer(string, pos, endpos) if self.admits(string) else iter(())

    def findall(self, string: str, pos: int = 0, endpos: int = _END) -> list[Any]:
        return self.regex.findall(string, pos, endpos) if self.admits(string) else []

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        return self.regex.sub(repl, string, count) if self.admits(string) else string

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        return self.regex.split(string, maxsplit) if self.admits(string) else [string]

    def __copy__(self) -> Screen:
        return self  # immutable, like a compiled pattern (whose copies are itself)

    def __deepcopy__(self, memo: dict[int, Any]) -> Screen:
        return self


def screened(regex: re.Pattern[str]) -> re.Pattern[str]:
    """``regex`` behind a :class:`Screen` (with the pattern's interface)."""
    return Screen(regex)  # type: ignore[return-value]


def _selectivity(strings: set[str] | frozenset[str]) -> tuple[int, int]:
    return min(map(len, strings)), -len(strings)


def _sequence(items: list[tuple[Any, Any]], icase: bool) -> list[set[str]]:
    """What a sequence of parse items needs: what each of its mandatory parts needs."""
    found: list[set[str]] = []
    run = ""
    for op, av in items:
        if op is c.LITERAL and av < 128:
            run += chr(av).lower()
            continue
        if run:
            found.append({run})
            run = ""
        found += _item(op, av, icase)
    if run:
        found.append({run})
    return found


def _item(op: Any, av: Any, icase: bool) -> list[set[str]]:
    if op is c.BRANCH:
        union: set[str] = set()
        for branch in av[1]:
            sets = _sequence(list(branch), icase)
            if not sets:
                return []  # a branch that needs nothing: neither does the alternation
            union |= max(sets, key=_selectivity)
        return [union] if len(union) <= _MAX_STRINGS else []
    if op is c.SUBPATTERN:
        _group, add, remove, body = av
        inner = (icase or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
        return _sequence(list(body), inner)
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
        low, _high, body = av
        return _sequence(list(body), icase) if low >= 1 else []
    if op is getattr(c, "ATOMIC_GROUP", None):
        return _sequence(list(av), icase)
    if op is c.IN and av and all(o is c.LITERAL and v < 128 for o, v in av):
        return [{chr(v).lower() for _, v in av}]  # [sz]: one of a few characters
    return []  # a boundary, a lookaround, a class, a non-ASCII literal, a backreference: no string
