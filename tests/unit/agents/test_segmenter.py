"""The segmenter core: pure state in, state and events out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agents import segmenter
from agents.config import SegmenterConfig
from agents.segmenter import ChatPool, affinity, close_idle, dump_pools, flush, load_pools, step
from schemas import ChatMessage, TopicEventKind

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
CFG = SegmenterConfig(dyadic_shift=False)


def msg(i: int, sender: str, text: str, *, at: float | None = None, chat: str = "g1", **kw) -> ChatMessage:
    ts = T0 + timedelta(seconds=at if at is not None else 20 * i)
    return ChatMessage(chat_id=chat, message_id=f"m{i}", sender=sender, ts=ts, text=text, **kw)


def run(messages, vectors=None, cfg=CFG, pool=None):
    pool = pool or ChatPool(chat_id=messages[0].chat_id)
    events = []
    for k, m in enumerate(messages):
        pool, evs = step(pool, m, None if vectors is None else vectors[k], cfg)
        events += evs
    return pool, events


def topic_of(events) -> dict[str, str]:
    out = {}
    for ev in events:
        if ev.kind in (TopicEventKind.OPENED, TopicEventKind.EXTENDED) and ev.reason != "soft":
            for mid in ev.message_ids:
                out[mid] = ev.topic_id
    return out


def test_first_message_opens_a_topic_with_deterministic_ids():
    pool, events = run([msg(0, "alice", "anyone know how to resize an ext4 partition?")])
    assert [e.kind for e in events] == [TopicEventKind.OPENED]
    ev = events[0]
    assert ev.message_ids == ["m0"] and ev.participants == ["alice"] and ev.at == T0
    _, again = run([msg(0, "alice", "anyone know how to resize an ext4 partition?")])
    assert again[0].event_id == ev.event_id and again[0].topic_id == ev.topic_id


def test_explicit_reply_joins_the_replied_topic_even_late():
    first = msg(0, "alice", "deploy of the billing service failed again")
    other = msg(1, "bob", "who wants pizza for lunch?", at=60)
    late = msg(2, "carol", "looking at it now", at=600, reply_to="m0")
    _, events = run([first, other, late])
    topics = topic_of(events)
    assert topics["m2"] == topics["m0"] != topics["m1"]
    extended = [e for e in events if e.kind == TopicEventKind.EXTENDED and e.message_ids == ["m2"]]
    assert extended and extended[0].reason == "reply"


def test_affinity_breakdown_reports_each_signal():
    pool, _ = run([msg(0, "alice", "the nginx config reload fails")])
    topic = pool.topics[0]
    total, parts = affinity(topic, msg(1, "bob", "alice: nginx -t says what?"), None, pool, CFG)
    assert parts["reply"] == 1.0 and parts["entity"] > 0 and parts["semantic"] == 0.0
    assert total == pytest.approx(parts["total"])
    unrelated, parts2 = affinity(topic, msg(2, "dave", "dave here", at=3000), None, pool, CFG)
    assert unrelated < total and parts2["decay"] < 0.01


def test_interleaved_two_topic_chat_is_separated():
    lines = [
        (0, "alice", "my laptop wifi drops every few minutes on 24.04"),
        (1, "bob", "what's the best way to back up a postgres database nightly?"),
        (2, "carol", "alice: which wifi chipset is it? lspci | grep -i net"),
        (3, "dave", "bob: pg_dump from cron, or pgbackrest if it is big"),
        (4, "alice", "carol: intel ax200"),
        (5, "bob", "dave: it is about 200 GB"),
        (6, "carol", "alice: try disabling power saving for the ax200 wifi"),
        (7, "dave", "bob: then pgbackrest with incremental backups"),
        (8, "alice", "that fixed the wifi, thanks"),
        (9, "bob", "thanks, will set up pgbackrest"),
    ]
    _, events = run([msg(i, s, t) for i, s, t in lines])
    topics = topic_of(events)
    wifi = {topics[f"m{i}"] for i in (0, 2, 4, 6, 8)}
    backup = {topics[f"m{i}"] for i in (1, 3, 5, 7, 9)}
    assert len(wifi) == 1 and len(backup) == 1 and wifi != backup


def test_idle_topic_closes_by_event_time_with_all_ids_in_order():
    a = [msg(0, "alice", "release notes draft is up"), msg(1, "bob", "alice: reading it")]
    pool, events = run(a)
    assert not [e for e in events if e.kind == TopicEventKind.CLOSED]
    later = msg(2, "carol", "anyone up for a game tonight?", at=20 + 16 * 60)
    pool, events = step(pool, later, None, CFG)
    closed = [e for e in events if e.kind == TopicEventKind.CLOSED]
    assert len(closed) == 1 and closed[0].message_ids == ["m0", "m1"]
    assert closed[0].at == later.ts and events[0].kind == TopicEventKind.CLOSED
    assert [t.message_ids for t in pool.topics] == [["m2"]]


def test_close_idle_and_flush_use_the_given_time():
    pool, _ = run([msg(0, "alice", "hello"), msg(1, "bob", "standup moved to 11", at=600)])
    now = T0 + timedelta(seconds=600 + 899)
    pool2, events = close_idle(pool, now, CFG)
    assert [e.message_ids for e in events] == [["m0"]] and events[0].at == now
    assert len(pool.topics) == 2  # the input pool is untouched
    pool3, events = flush(pool2, now)
    assert [e.message_ids for e in events] == [["m1"]] and pool3.topics == []
    _, again = close_idle(pool, now + timedelta(seconds=1), CFG)
    assert again[0].event_id == events[0].event_id or again[0].topic_id != events[0].topic_id


def test_pool_bound_evicts_the_least_recently_active_topic():
    cfg = SegmenterConfig(dyadic_shift=False, max_active_topics=3)
    subjects = ["kernel panic on boot", "printer offline", "vpn split tunnel", "gpu fan noise"]
    messages = [msg(i, f"user{i}", f"question: {s}?", at=i * 5) for i, s in enumerate(subjects)]
    pool, events = run(messages, cfg=cfg)
    closed = [e for e in events if e.kind == TopicEventKind.CLOSED]
    assert len(pool.topics) == 3 and len(closed) == 1
    assert closed[0].message_ids == ["m0"] and closed[0].reason == "evicted"


def test_redelivered_message_is_idempotent():
    first = [msg(0, "alice", "ci is red on main"), msg(1, "bob", "alice: flaky test again?")]
    pool, _ = run(first)
    again, events = step(pool, first[1], None, CFG)
    assert events == [] and again.model_dump() == pool.model_dump()


def test_step_does_not_mutate_its_input():
    pool, _ = run([msg(0, "alice", "ci is red on main")])
    before = pool.model_dump_json()
    step(pool, msg(1, "bob", "alice: which job?"), None, CFG)
    assert pool.model_dump_json() == before


def test_state_round_trips_through_json():
    vecs = np.eye(4, 8, dtype=np.float32)
    pool, _ = run(
        [
            msg(0, "alice", "ci is red on main"),
            msg(1, "bob", "alice: flaky test again?"),
            msg(2, "carol", "lunch?"),
            msg(3, "alice", "bob: yes, the timeout one"),
        ],
        vectors=vecs,
    )
    restored = ChatPool.model_validate_json(pool.model_dump_json())
    assert restored.model_dump() == pool.model_dump()
    nxt = msg(4, "bob", "alice: I'll rerun it")
    a = step(pool, nxt, vecs[1], CFG)
    b = step(restored, nxt, vecs[1], CFG)
    assert a[1] == b[1]
    assert load_pools(dump_pools({"g1": pool}))["g1"].model_dump() == pool.model_dump()
    _, again = step(restored, msg(3, "alice", "bob: yes, the timeout one"), vecs[3], CFG)
    assert again == []  # the seen window survives the checkpoint


def test_chinese_messages_are_segmented():
    lines = [
        (0, "张三", "明天下午三点开会讨论项目A的技术选型"),
        (1, "李四", "周末有人去爬山吗？"),
        (2, "王五", "@张三 技术选型要不要先整理一下候选方案"),
        (3, "赵六", "@李四 我去，爬山的话几点出发？"),
        (4, "张三", "王五: 好的，我先列一下项目A的候选方案"),
        (5, "李四", "赵六: 早上八点出发爬山"),
    ]
    pool, events = run([msg(i, s, t) for i, s, t in lines])
    topics = topic_of(events)
    assert topics["m0"] == topics["m2"] == topics["m4"]
    assert topics["m1"] == topics["m3"] == topics["m5"] != topics["m0"]
    assert "选型" in pool.topic(topics["m0"]).keywords


def test_without_vectors_user_continuity_mentions_and_shared_words_keep_a_topic():
    lines = [
        (0, "alice", "my docker build fails with no space left on device"),
        (1, "alice", "even after docker system prune"),
        (2, "bob", "@alice docker keeps build cache in /var/lib/docker, check df -h there"),
        (3, "alice", "df shows /var/lib/docker at 100%"),
        (4, "carol", "is the docker build cache shared between projects?"),
    ]
    _, events = run([msg(i, s, t, at=i * 30) for i, s, t in lines])
    topics = topic_of(events)
    assert topics["m0"] == topics["m1"] == topics["m2"] == topics["m3"]
    assert topics["m4"] != topics["m0"]  # a newcomer's own question opens a topic


def test_vectors_pull_a_message_to_the_similar_topic():
    a, b = np.zeros(8, dtype=np.float32), np.zeros(8, dtype=np.float32)
    a[0], b[1] = 1.0, 1.0
    lines = [
        msg(0, "alice", "first subject here", at=0),
        msg(1, "bob", "second subject there", at=10),
        msg(2, "carol", "more words", at=20),
    ]
    _, events = run(lines, vectors=[a, b, a], cfg=SegmenterConfig(dyadic_shift=False, use_linker=False))  # the vector signal alone
    topics = topic_of(events)
    assert topics["m2"] == topics["m0"] != topics["m1"]


def test_near_duplicate_topics_merge():
    cfg = SegmenterConfig(dyadic_shift=False, merge_similarity=0.9, merge_min_messages=2)
    v = np.ones(8, dtype=np.float32)
    lines = [
        msg(0, "alice", "gpu driver crash", at=0),
        msg(1, "alice", "nvidia 550 again", at=10),
        msg(2, "bob", "alice: which kernel?", at=20),
    ]
    pool = ChatPool(chat_id="g1")
    pool, _ = step(pool, lines[0], v, cfg)
    # force a second topic with the same centroid and a shared participant
    pool = pool.model_copy(
        update={
            "topics": [
                *pool.topics,
                segmenter.ActiveTopic(
                    topic_id="t-other",
                    message_ids=["x1", "x2"],
                    participants=["alice"],
                    started_at=T0,
                    last_active_at=T0,
                    last_ts=T0.timestamp(),
                    centroid=[1.0] * 8,
                    centroid_n=2,
                    last_by_sender={"alice": T0.timestamp()},
                ),
            ]
        }
    )
    pool, events = step(pool, lines[1], v, cfg)
    merged = [e for e in events if e.kind == TopicEventKind.MERGED]
    assert len(merged) == 1 and len(pool.topics) == 1
    assert set(merged[0].message_ids) == {"m0", "m1", "x1", "x2"} and merged[0].related_topic_ids
    pool, events = step(pool, lines[2], v, cfg)
    assert events[-1].topic_id == pool.topics[0].topic_id


def test_soft_membership_weights_a_close_runner_up():
    cfg = SegmenterConfig(dyadic_shift=False, soft_ratio=0.5, use_linker=False)  # the linker would favour one of the two
    lines = [
        msg(0, "alice", "printer on floor two is jammed", at=0),
        msg(1, "bob", "printer toner is empty on floor three", at=5),
        msg(2, "carol", "the printer vendor visits today", at=10, mentions=["alice", "bob"]),
    ]
    _, events = run(lines, cfg=cfg)
    soft = [e for e in events if e.reason == "soft"]
    assert len(soft) == 1 and 0 < soft[0].weights["m2"] <= 1.0
    primary = topic_of(events)["m2"]
    assert soft[0].topic_id != primary


def test_wrong_chat_is_rejected():
    with pytest.raises(ValueError):
        step(ChatPool(chat_id="other"), msg(0, "alice", "hi"), None, CFG)


def test_a_topics_vector_matrix_grown_message_by_message_is_the_one_built_from_its_lists():
    """The segmenter keeps each topic's matrix (unit centroid, then the recent vectors) and its centroid as
    float32 up to date as vectors join (ActiveTopic.changed) instead of converting every list again; both must
    equal, bit for bit, what is built from the topic's lists, also past ``recent_k`` and for a message without
    a vector."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal(384)
    texts = [f"the backup job on server {i % 3} failed with disk errors again" for i in range(14)]
    vectors = [(base + 0.3 * rng.standard_normal(384)).astype(np.float32) for _ in texts]
    vectors[5] = None  # a message the model could not embed
    pool = ChatPool(chat_id="g1")
    for k, text in enumerate(texts):
        pool, _ = step(pool, msg(k, ["ann", "bob", "cy"][k % 3], text), vectors[k], CFG)
        for topic in pool.topics:
            grown = topic.vectors()
            assert topic.centroid is not None, (k, topic.topic_id)
            kept = topic.centroid32()  # the centroid as float32, kept from the step that made it
            topic.changed()
            assert grown is not None and np.array_equal(grown, topic.vectors()), (k, topic.topic_id)
            assert np.array_equal(kept, np.asarray(topic.centroid, dtype=np.float32)), (k, topic.topic_id)
            topic.centroid = list(topic.centroid)  # a new list (as a merge or an erasure makes): read afresh
            assert topic.centroid32() is not kept and np.array_equal(topic.centroid32(), kept)
    assert max(len(t.recent_vectors) for t in pool.topics) == CFG.recent_k  # the window was passed


def test_a_forked_pool_still_knows_what_it_saw_and_only_that():
    """fork hands the seen set to the copy: the pool it came from rebuilds its own from its list."""
    pool, _ = run([msg(0, "alice", "ci is red on main"), msg(1, "bob", "alice: which job?")])
    assert pool.has_seen("m1")
    later, _ = step(pool, msg(2, "cyd", "the arm64 one"), None, CFG)
    assert later.has_seen("m2") and later.has_seen("m0")
    assert pool.has_seen("m1") and not pool.has_seen("m2")  # the given pool kept what it saw, nothing more
    other, events = step(pool, msg(2, "cyd", "the arm64 one"), None, CFG)  # the same step again: same result
    assert events and other.model_dump() == later.model_dump() and other.has_seen("m2")
    assert not pool.has_seen("m2")
