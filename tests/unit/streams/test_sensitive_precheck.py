"""detect() skips the digit kinds on a text without a digit and email on a text without "@": no pattern of those
kinds may ever match such a text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.sensitive import _NEED_DIGIT, _PATTERNS, detect

SAMPLES = "13812345678 010-12345678 +44 20 7946 0958 (555) 123-4567 110101199003074514 4111 1111 1111 1111 " \
    "ssn 123-45-6789 221 Baker Street 北京市朝阳区建国路88号 a@b.co password: hunter22 sk-abcdefghijklmnopqrstuv " \
    "Road Street St Apt 号 路 - ( ) +".split()  # fmt: skip


def test_every_digit_kind_pattern_needs_a_digit() -> None:
    for kind in _NEED_DIGIT:
        for pattern in _PATTERNS[kind]:
            assert r"\d" in pattern.pattern, (kind, pattern.pattern)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(SAMPLES) | st.text(max_size=8), max_size=8))
def test_skipped_kinds_cannot_match(words: list[str]) -> None:
    text = " ".join(words)
    if not any(c.isdigit() for c in text):  # str.isdigit() is wider than \d: a superset of skipped texts
        assert not any(p.search(text) for k in _NEED_DIGIT for p in _PATTERNS[k]), text
    if "@" not in text:
        assert not any(p.search(text) for p in _PATTERNS["email"]), text


def test_findings_are_unchanged() -> None:
    text = "call 13812345678 or mail a@b.co, password: hunter22; I live at 221 Baker Street"
    assert [f.kind for f in detect(text)] == ["phone", "email", "secret", "address"]
    assert [f.kind for f in detect("my password is hunter22 and nothing else")] == ["secret"]
