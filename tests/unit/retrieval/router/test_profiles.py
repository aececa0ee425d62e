"""Set questions answered from profile records (retrieval/router/profiles.py), English and Chinese."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents.profile import profile_decisions
from retrieval.router.pipeline import retrieve_routed
from retrieval.router.profiles import ProfileConfig, asked, select_lines
from retrieval.router.query import analyse
from retrieval.router.recipes import RouterConfig
from schemas import CandidateFact, RetrieveRequest

from .conftest import T0, Chat

T = datetime(2024, 3, 1, tzinfo=UTC)


def test_asked_classes_only_for_set_questions():
    people = ["Ann", "Bo", "小王"]
    assert asked(analyse("What books has Ann read?", people, T)) == ["reading"]
    assert "sports" in asked(analyse("What are Bo's hobbies?", people, T))
    assert "travel" in asked(analyse("小王去过哪些城市？", people, T))
    assert asked(analyse("Where does Ann work?", people, T)) == []  # one value, not a set
    assert asked(analyse("When did Bo adopt the puppy?", people, T)) == []


def test_select_lines_keeps_all_that_fit_else_the_matching_ones():
    from agents.profile import ProfileLine

    lines = [ProfileLine(message_id=f"m{i}", at=T + timedelta(days=i), text=f"went hiking on trail {i}")
             for i in range(20)] + [ProfileLine(message_id="mx", at=T, text="camped at the beach with the kids")]  # fmt: skip
    qa = analyse("Where has Ann camped?", ["Ann"], T)
    few = select_lines(lines[-3:], qa, {}, ProfileConfig())
    assert [ln.message_id for ln in few] == ["mx", "m18", "m19"]  # all, oldest first
    some = select_lines(lines, qa, {"m3": 1.0}, ProfileConfig(max_lines=3))
    assert {ln.message_id for ln in some} >= {"mx", "m3"} and len(some) == 3


async def _ask(chat: Chat, facts: list[CandidateFact], people: list[str], mids: list[str], query: str,
               cfg: RouterConfig | None = None):  # fmt: skip
    """Profiles from ``facts``, one closed topic of ``mids``, then the routed answer to ``query``."""
    for d in profile_decisions(chat.chat_id, facts, people, {}, "r1", T0 + timedelta(days=30)):
        await chat.store.apply_decision(d, None)
    await chat.topic("t1", mids, people, "closed")
    req = RetrieveRequest(chat_id=chat.chat_id, query=query, k=5, now=T0 + timedelta(days=40))
    return await retrieve_routed(chat.store, None, req, cfg=cfg or RouterConfig())


def _fact(chat: Chat, mid: str, text: str, who: str, days: float) -> CandidateFact:
    return CandidateFact(fact_id=f"f-{mid}", chat_id=chat.chat_id, topic_id="t", text=text, speaker=who,
                         subject=who, event_time=T0 + timedelta(days=days), source_message_ids=[mid])  # fmt: skip


async def test_routed_set_question_gets_the_profile_item_first(store):
    chat = Chat(store)
    said = [("ann", "I finally read Dune, what a book!", 1), ("bo", "Nice, I read it years ago.", 1.1),
            ("ann", "Went to the gym and then the bakery.", 5), ("ann", "Just finished Piranesi, loved it.", 9),
            ("bo", "I read mostly comics these days.", 9.1), ("ann", "My sister visited this weekend.", 12)]  # fmt: skip
    mids = [await chat.say(s, t, days=d, name=s.capitalize()) for s, t, d in said]
    facts = [_fact(chat, mids[0], "Ann finally read Dune.", "Ann", 1),
             _fact(chat, mids[1], "Bo read Dune years ago.", "Bo", 1.1),
             _fact(chat, mids[3], "Ann finished the novel Piranesi.", "Ann", 9),
             _fact(chat, mids[4], "Bo reads mostly comics.", "Bo", 9.1)]  # fmt: skip
    resp = await _ask(chat, facts, ["Ann", "Bo"], mids, "What books has Ann read?")
    assert resp.query_type == "multi_hop"
    first = resp.items[0]
    assert first.kind == "profile" and first.speaker == "Ann"
    assert first.source_message_ids == [mids[0], mids[3]]  # Ann's reading lines only, oldest first
    assert "Dune" in first.text and "Piranesi" in first.text and "comics" not in first.text
    off = RouterConfig().model_copy(update={"profiles": ProfileConfig(enabled=False)})
    resp = await retrieve_routed(store, None, RetrieveRequest(chat_id=chat.chat_id, query="What books has Ann read?",
                                                             k=5, now=T0 + timedelta(days=40)), cfg=off)  # fmt: skip
    assert all(it.kind != "profile" for it in resp.items)


async def test_routed_chinese_set_question(store):
    chat = Chat(store)
    said = [
        ("wang", "我上个月去了成都旅游", 1),
        ("li", "成都的火锅很好吃", 1.1),
        ("wang", "五一我又去了西安", 20),
    ]
    mids = [await chat.say(s, t, days=d, name={"wang": "小王", "li": "小李"}[s]) for s, t, d in said]
    facts = [_fact(chat, mids[0], "小王上个月去了成都旅游。", "小王", 1),
             _fact(chat, mids[2], "小王五一去了西安旅游。", "小王", 20)]  # fmt: skip
    resp = await _ask(chat, facts, ["小王", "小李"], mids, "小王去过哪些城市旅游？")
    profile = [it for it in resp.items if it.kind == "profile"]
    assert profile and profile[0].source_message_ids == [mids[0], mids[2]]
    assert "成都" in profile[0].text and "西安" in profile[0].text
