"""Cheap pre-checks before costly regex passes (find_dates' rules, the favourite patterns): a check must never
rule out a sentence one of the patterns it guards matches."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from language.extract.cue_slots import _EN_FAV, _EN_FAV_CUE, _ZH_FAV, cue_slots
from language.time.dates import _MAY_HAVE_DATE, _may_have_date, find_dates
from language.time.rules import ABSOLUTE_RULES, EN_RULES, TAIL_RULES

RULES = EN_RULES + ABSOLUTE_RULES + TAIL_RULES
REF = datetime(2024, 3, 6, 15, 0, tzinfo=UTC)

DATED = [
    "the day before yesterday", "The day after tomorrow", "the week before last", "the week after next",
    "by the end of next month", "end of the year", "YESTERDAY we met", "last night was fun", "tonight!",
    "this afternoon", "tomorrow", "next Friday", "this weekend", "last month", "next summer", "in March",
    "two weeks ago", "in a few days", "three days from now", "on Sunday", "2024-03-08", "3月8日", "March 8th, 2024",
    "8 of March", "the week before", "on the 5th", "5号", "wEdNeSdAy", "since May", "early September",
    "Sept 2023", "back in 2019", "the second week of November", "the October dates", "see you thurs", "on SAT",
    "sun 10am?", "a week from Friday",
]  # fmt: skip
WORDS = [w for s in DATED for w in s.split()] + "a I we had fun on at in the of ok 7 pm it's ſunday K ٣ MAY".split()


def test_every_rule_is_covered_and_passes_the_check() -> None:
    for pattern, kind in RULES:
        hits = [s for s in DATED if pattern.search(s)]
        assert hits, f"no sample sentence for rule {kind}: {pattern.pattern[:60]}"
        assert all(_MAY_HAVE_DATE.search(s) and _may_have_date(s) for s in hits)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(WORDS) | st.text(max_size=6), max_size=8))
def test_the_check_only_rules_out_sentences_without_a_match(words: list[str]) -> None:
    sentence = " ".join(words)
    assert _may_have_date(sentence) == (_MAY_HAVE_DATE.search(sentence) is not None), sentence  # ASCII path
    if _MAY_HAVE_DATE.search(sentence) is None:
        assert not any(p.search(sentence) for p, _ in RULES), sentence


def test_sentences_without_dates_resolve_to_nothing() -> None:
    assert find_dates("We had a great time at the concert!", REF) == []
    assert [d.day.isoformat() for d in find_dates("We met yesterday at 3pm", REF)] == ["2024-03-05"]
    assert find_dates("We met yesterday at 3pm", REF)[0].clock is not None


FAVOURITES = ["Pizza is my favorite food", "my favourite band is Muse", "Arsenal all the way, my favorite team",
              "Tea is the best drink", "best song: Yesterday", "火锅是我最爱的菜", "最喜欢的歌是晴天", "迷上了滑雪，我最爱的运动"]


def test_every_favourite_pattern_needs_its_cue() -> None:
    for pattern in _EN_FAV:
        assert any(pattern.search(s) for s in FAVOURITES), pattern.pattern[:60]
        assert "(?:favou?rite|best" in pattern.pattern  # a required group, the cue's words
    for pattern in _ZH_FAV:
        assert any(pattern.search(s) for s in FAVOURITES), pattern.pattern[:60]
        assert all(pattern.search(s) is None for s in FAVOURITES if "最" not in s)
    assert all(_EN_FAV_CUE.search(s) for s in FAVOURITES if s.isascii())
    assert [c.attribute for c in cue_slots("Pizza is my favorite food", "Ann", frozenset({"Ann"}), False)] == [
        "favorite_food"
    ]
    assert cue_slots("Pizza is my food", "Ann", frozenset({"Ann"}), False) == []


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from([w for s in FAVOURITES for w in s.split()]) | st.text(max_size=6), max_size=8))
def test_the_favourite_cue_only_rules_out_sentences_without_a_match(words: list[str]) -> None:
    sentence = " ".join(words)
    if _EN_FAV_CUE.search(sentence) is None:
        assert not any(p.search(sentence) for p in _EN_FAV), sentence
