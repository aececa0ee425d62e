"""The literal screen in front of the extractors' patterns: what it reads off a pattern, and that it never
turns away a text the pattern matches (so the extractors find the same with and without it)."""

from __future__ import annotations

import ast
import copy
import importlib
import pkgutil
import random
import re
from pathlib import Path
from re import _constants as c  # type: ignore[attr-defined]
from re import _parser as sre  # type: ignore[attr-defined]

import pytest

import language.extract
from language.extract import slots
from language.extract.screen import Screen, admitted, fold, needs

TESTS = Path(__file__).parent


def _sets(pattern: str, flags: int = 0) -> list[set[str]]:
    return [set(s) for s in needs(re.compile(pattern, flags))]


def test_needs_reads_literals_alternations_groups_and_repeats() -> None:
    assert _sets(r"\bno longer\b") == [{"no longer"}]
    assert _sets(r"(?i)\b(?:Hate|can't stand) (?P<v>\w+)") == [{"hate", "can't stand"}]
    # a sequence needs each of its parts: the most selective first
    assert _sets(r"\b(?i:(?:liv(?:e|es|ing)|resid(?:e|es|ing)) in) [A-Z]\w+") == [{" in"}, {"liv", "resid"}]
    assert _sets(r"(?:ab)+cd") == [{"ab"}, {"cd"}]
    assert _sets(r"x[sz]y") == []  # one-character strings screen out nothing worth the check
    assert _sets(r"color[sz]ed") == [{"color"}, {"ed"}]


def test_needs_gives_nothing_for_what_a_match_can_do_without() -> None:
    assert _sets(r"(?:moved )?to Paris") == [{"to paris"}]  # the optional part is not needed
    assert _sets(r"\d{1,3} years") == [{" years"}]
    assert _sets(r"[A-Z]\w+|\d+") == []  # a branch with no literal: the alternation needs nothing
    assert _sets(r"(?:a|bb)?") == []
    assert _sets(r"(?=moved)\w+") == []  # lookarounds are not read
    assert _sets("不再|已经不") == []  # non-ASCII literals are left out


def test_fold_matches_what_ignorecase_matches() -> None:
    """Every character IGNORECASE matches to an ASCII letter folds to that letter: the screen admits all the
    spellings the pattern matches, the odd ones included (long s, dotless and dotted i, Kelvin sign)."""
    screen = Screen(re.compile(r"(?i)\bscrapped|\bmind\b|\bketo\b"))
    for text in ("it is SCRAPPED", "it is \u017fcrapped", "never m\u0131nd", "never M\u0130ND", "\u212aeto diet"):
        assert screen.regex.search(text) is not None
        assert screen.admits(text) and screen.search(text) is not None, text
    assert not screen.admits("nothing to see here")
    assert screen.search("nothing to see here") is None
    # the pattern's interface: keyword arguments, positions, copies (which keep the screen)
    assert screen.search(string="oh never mind", pos=3).span() == (9, 13)
    assert screen.search("oh never mind", 0, 8) is None and screen.pattern == screen.regex.pattern
    assert copy.deepcopy(screen) is screen and copy.copy(screen) is screen


def _test_sentences() -> list[str]:
    """Every sentence the extractor tests feed in (string literals of this folder), and other cases of them."""
    found: set[str] = set()
    for path in TESTS.glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and 8 <= len(node.value) <= 400:
                found.add(node.value)
    return sorted(found | {s.upper() for s in found} | {s.title() for s in found})


def _screened_patterns() -> dict[str, re.Pattern[str]]:
    """Every pattern the extractors screen: the slot rules and each module's screened patterns (their regex)."""
    found = {f"slot {i} {r.attribute}": r.pattern for i, r in enumerate(slots.EN_SLOTS)}
    for info in pkgutil.iter_modules(language.extract.__path__):
        module = importlib.import_module(f"language.extract.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, Screen):
                found[f"{info.name}.{name}"] = value.regex
    return found


PATTERNS = _screened_patterns()


_ODD = {"s": "\u017f", "i": "\u0131", "k": "\u212a"}  # other letters IGNORECASE matches to s, i, k


def _sample(items: list, rng: random.Random, icase: bool) -> str:
    """A random text built along the parse tree (lookarounds and boundaries skipped: the caller keeps
    the samples the pattern matches), letters in random case where IGNORECASE holds."""
    out = []
    for op, av in items:
        if op is c.LITERAL:
            ch = chr(av)
            if icase and ch.isalpha() and rng.random() < 0.5:
                ch = _ODD.get(ch.lower(), ch.swapcase()) if rng.random() < 0.3 else ch.swapcase()
            out.append(ch)
        elif op is c.IN:
            choices = [chr(v) for o, v in av if o is c.LITERAL]
            choices += [chr(rng.randint(lo, hi)) for o, (lo, hi) in [(o, v) for o, v in av if o is c.RANGE]]
            choices += ["a", "Z", "7", " "] if any(o is c.CATEGORY for o, _ in av) else []
            out.append(rng.choice(choices or ["x"]))
        elif op is c.ANY:
            out.append(rng.choice("aZ 7,"))
        elif op is c.BRANCH:
            out.append(_sample(list(rng.choice(av[1])), rng, icase))
        elif op is c.SUBPATTERN:
            _g, add, remove, body = av
            out.append(_sample(list(body), rng, (icase or bool(add & re.I)) and not remove & re.I))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
            low, high, body = av
            for _ in range(rng.randint(low, min(high, low + 2))):
                out.append(_sample(list(body), rng, icase))
    return "".join(out)


def _matching_samples(pattern: re.Pattern[str], n: int = 600) -> list[str]:
    rng = random.Random(7)
    tree = sre.parse(pattern.pattern, pattern.flags)
    icase = bool(tree.state.flags & re.I)
    texts = [_sample(list(tree), rng, icase) for _ in range(n)]
    texts += [f"Well, {t}." for t in texts]  # bare (patterns anchored at the end) and inside a sentence
    return [t for t in texts if pattern.search(t) is not None]


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_the_screen_admits_every_text_its_pattern_matches(name: str) -> None:
    """The test sentences the pattern matches, and texts generated from the pattern itself (so that every
    rule is tried on matches, in odd cases too): each passes the screen."""
    pattern = PATTERNS[name]
    sets = needs(pattern)
    generated = _matching_samples(pattern)
    assert len(generated) >= 5  # the generator reaches the pattern's matches
    matched = [s for s in _test_sentences() if pattern.search(s) is not None] + generated
    assert all(admitted(sets, fold(s)) for s in matched), [s for s in matched if not admitted(sets, fold(s))]


def test_the_modules_screen_their_patterns() -> None:
    assert len(PATTERNS) >= 45 and "slots._EN_RETRACT" in PATTERNS and "tasks.EN_DECISION" in PATTERNS


def test_the_rules_are_screened_and_the_screen_turns_most_sentences_away() -> None:
    """The slot rules carry their screens (all but the few whose matches need no fixed string), and on
    ordinary chat sentences most rules never run."""
    screened = [sets for sets in slots.en_screens() if sets]
    assert len(screened) >= len(slots.EN_SLOTS) - 2
    chat = ["haha that's so cool, see you tomorrow!", "did you watch the game last night?", "lol same"]
    runs = sum(admitted(sets, fold(s)) for sets in screened for s in chat)
    assert runs < len(screened) * len(chat) / 3
    assert slots.find_slots("I moved to Berlin last year", "Ann", frozenset({"Ann"}))[0].value == "Berlin"
    assert slots.is_retraction("I don't live there anymore") and not slots.is_retraction("I live there")
