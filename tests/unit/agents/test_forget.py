"""agents.forget: a segmenter pool without a deleted sender's messages (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from agents.config import SegmenterConfig
from agents.forget import forget_in_pool, forget_in_pool_json
from agents.segmenter import ChatPool, step
from schemas import ChatMessage

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
CFG = SegmenterConfig()
DIM = 16


def msg(i: int, sender: str, text: str, **kw) -> ChatMessage:
    return ChatMessage(chat_id="g1", message_id=f"m{i}", sender=sender, sender_name=sender.title(),
                       ts=T0 + timedelta(seconds=20 * i), text=text, **kw)  # fmt: skip


def vec(i: int) -> np.ndarray:
    v = np.random.default_rng(i).normal(size=DIM).astype(np.float32)
    v[0] += 4.0  # all close enough to share a topic
    return v / np.linalg.norm(v)


MESSAGES = [
    msg(0, "alice", "the billing deploy failed again on the staging cluster"),
    msg(1, "mallory", "my locker combination is quokka seven seven three one", reply_to="m0"),
    msg(2, "bob", "I will look at the billing deploy logs now", reply_to="m0"),
    msg(3, "mallory", "billing deploy: the quokka script crashed", reply_to="m2"),
    msg(4, "carol", "thanks bob, the staging cluster is back", reply_to="m2"),
]
TEXTS = {m.message_id: m.text for m in MESSAGES}
GONE = {"m1", "m3"}


def pool_of(messages, with_vectors: bool = True) -> ChatPool:
    pool = ChatPool(chat_id="g1")
    for m in messages:
        pool, _ = step(pool, m, vec(int(m.message_id[1:])) if with_vectors else None, CFG)
    return pool


def test_the_pool_keeps_nothing_of_the_sender_and_the_input_is_untouched():
    pool = pool_of(MESSAGES)
    before = pool.model_dump_json()
    assert "mallory" in before and "quokka" in before and '"m1"' in before
    vectors = {m: vec(int(m[1:])).tolist() for m in GONE}
    out = forget_in_pool(pool, GONE, sender="mallory", texts=TEXTS, vectors=vectors)
    assert pool.model_dump_json() == before  # never mutated
    dumped = out.model_dump_json()
    assert "mallory" not in dumped and "quokka" not in dumped
    assert not any(f'"{m}"' in dumped for m in GONE)
    for topic in out.topics:
        assert not GONE & set(topic.message_ids) and topic.count == len(topic.primary_ids())
    assert len(out.window) == len(out.window_vectors) == len(pool.window) - 2
    assert not out.has_seen("m1") and out.has_seen("m2")


def test_keywords_and_vectors_are_those_of_the_remaining_messages():
    kept = [m for m in MESSAGES if m.message_id not in GONE]
    vectors = {m: vec(int(m[1:])).tolist() for m in GONE}
    out = forget_in_pool(pool_of(MESSAGES), GONE, sender="mallory", texts=TEXTS, vectors=vectors)
    reference = pool_of(kept)  # the pool as if the sender had never spoken
    assert len(out.topics) == len(reference.topics) == 1
    got, want = out.topics[0], reference.topics[0]
    assert got.keywords == want.keywords  # "billing"/"deploy" counted once less, "quokka" gone
    assert got.message_ids == want.message_ids and got.participants == want.participants
    assert got.centroid_n == want.centroid_n
    assert np.allclose(got.centroid, want.centroid, atol=1e-4)
    assert len(got.recent_vectors) == len(want.recent_vectors)


def test_a_topic_of_only_their_messages_goes_and_json_round_trips():
    pool = pool_of([msg(0, "mallory", "quokka quokka"), msg(1, "mallory", "more quokka talk")], with_vectors=False)
    out = forget_in_pool_json(pool.model_dump_json(), {"m0", "m1"}, sender="mallory", texts={})
    again = ChatPool.model_validate_json(out)
    assert again.topics == [] and again.msg_topic == {} and again.senders == {} and again.names == {}


def test_without_a_sender_only_the_messages_go():
    out = forget_in_pool(pool_of(MESSAGES, with_vectors=False), {"m4"}, texts=TEXTS)
    assert "carol" in out.topics[0].participants and "m4" not in out.topics[0].message_ids
    assert "mallory" in out.names.values()
