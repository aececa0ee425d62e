"""The bot context builder on a small group chat (real SQLiteStore)."""

from __future__ import annotations

from language.text import count_tokens
from retrieval.router.context import active_topic, build_bot_context, reply_chain
from retrieval.router.pipeline import retrieve_routed
from retrieval.router.recipes import AbstentionConfig, RouterConfig
from schemas import RetrieveRequest


async def _group(chat):
    m1 = await chat.say("alice", "I moved to Hangzhou last month, near West Lake.", days=0)
    await chat.say("bob", "The budget review is on Friday.", days=30)
    m3 = await chat.say("carol", "Who is coming to the hotpot dinner tonight?", days=31)
    m4 = await chat.say("bob", "Me! Which place?", days=31.01, reply_to=m3)
    m5 = await chat.say(
        "carol", "The one near West Lake, @bot where does Alice live again?", days=31.02, reply_to=m4
    )
    await chat.topic("t-old", [m1], ["alice"], "closed")
    await chat.topic("t-now", [m3, m4, m5], ["carol", "bob"], "active")
    return m3, m4, m5


async def test_layers_in_order_and_within_budget(store, chat):
    m3, m4, m5 = await _group(chat)
    req = RetrieveRequest(chat_id="c1", query="Where does Alice live?", trigger_message_id=m5, asker="carol",
                          token_budget=800)  # fmt: skip
    # the layers, not the calibrated abstention: BM25 only, nothing Alice said has "live" (she "moved")
    rules = RouterConfig(abstention=AbstentionConfig(model="rules"))
    resp = await build_bot_context(store, None, req, retrieve=lambda r: retrieve_routed(store, None, r, cfg=rules),
                                   count=count_tokens)  # fmt: skip
    names = [x.name for x in resp.layers]
    assert names[0] == "reply_chain" and "direct" in names
    assert names.index("reply_chain") < names.index("direct")
    assert resp.layers[0].item_ids == [m3, m4, m5]  # oldest first
    assert "Hangzhou" in resp.context and resp.context_tokens <= 800 + 20
    assert all(x.description for x in resp.layers)
    assert resp.trace[0].step == "short_term"


async def test_asker_recent_and_topic_fallback(store, chat):
    await _group(chat)
    req = RetrieveRequest(chat_id="c1", query="hotpot", asker="bob", token_budget=400)
    resp = await build_bot_context(store, None, req, retrieve=lambda r: retrieve_routed(store, None, r),
                                   count=count_tokens)  # fmt: skip
    names = [x.name for x in resp.layers]
    assert names[0] == "active_topic"  # no trigger: the asker's active topic
    assert "reply_chain" not in names


def test_pure_helpers(chat):
    from datetime import UTC, datetime

    from schemas import ChatMessage, TopicSummary

    t = datetime(2024, 1, 1, tzinfo=UTC)
    msgs = {i: ChatMessage(chat_id="c", message_id=i, sender="a", ts=t, text=i, reply_to=r)
            for i, r in (("1", None), ("2", "1"), ("3", "2"), ("x", "x"))}  # fmt: skip
    assert [m.message_id for m in reply_chain(msgs, "3", 10)] == ["1", "2", "3"]
    assert [m.message_id for m in reply_chain(msgs, "x", 10)] == ["x"]  # a self-reply does not loop
    topics = [TopicSummary(chat_id="c", topic_id=n, state=s, message_ids=ids, participants=p, started_at=t,
                           last_active_at=t) for n, s, ids, p in (("a", "active", ["1"], ["a"]),
                                                                 ("b", "closed", ["2"], ["b"]))]  # fmt: skip
    assert active_topic(topics, "1", None).topic_id == "a" and active_topic(topics, "2", "b") is None
    # topics list display names: an asker whose sender id differs is found by the name on their message
    assert active_topic(topics, "9", "u-17") is None and active_topic(topics, "9", "u-17", "a").topic_id == "a"
