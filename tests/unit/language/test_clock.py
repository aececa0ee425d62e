"""Clock times as chats say them: a bare "at 7" is a time when what follows says when it holds."""

from __future__ import annotations

from datetime import time

import pytest

from language.time.clock import find_clocks


@pytest.mark.parametrize(("text", "said", "at"), [
    ("we're on thursdays at 7 from next week", "at 7", time(7, 0)),
    ("let's do at 6 instead", "at 6", time(18, 0)),
    ("kick-off at 8 sharp", "at 8", time(8, 0)),
    ("see you at 9 then", "at 9", time(9, 0)),
    ("doors open at 7 o'clock", "at 7 o'clock", time(7, 0)),
    ("it starts 8 o'clock tonight", "8 o'clock", time(20, 0)),
    ("晚上七点半集合", "晚上七点半", time(19, 30)),
])  # fmt: skip
def test_a_clock_time_is_read(text, said, at):
    clocks = find_clocks(text)
    assert [(text[c.start : c.end], c.at) for c in clocks] == [(said, at)]


@pytest.mark.parametrize("text", ["the kids are at 7 and 9 years now", "the office is at 7 Main Street", "我们班有7个人"])
def test_a_number_that_is_no_time_is_not(text):
    assert find_clocks(text) == []
