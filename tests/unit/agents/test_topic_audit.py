"""The pure segmentation checks: cohesion, semantic breaks -> split, near-duplicates -> merge, the audit."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agents import topic_audit as A
from agents.config import AuditConfig
from schemas import ChatMessage, TopicEvent, TopicEventKind

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
CFG = AuditConfig(split=True, break_similarity=0.3, participant_overlap_max=0.0, window=3, min_part=3)


def msg(i: int, sender: str, text: str, *, at: float | None = None, **kw) -> ChatMessage:
    ts = T0 + timedelta(seconds=at if at is not None else 30 * i)
    return ChatMessage(chat_id="g1", message_id=f"m{i}", sender=sender, ts=ts, text=text, **kw)


def unit(axis: int, noise: float = 0.1, seed: int = 0, dim: int = 16) -> list[float]:
    v = np.random.default_rng(seed).normal(0, noise, dim)
    v[axis] += 1.0
    return (v / np.linalg.norm(v)).tolist()


def view(messages, vectors=None, topic_id="t-1", **kw) -> A.TopicView:
    return A.TopicView(chat_id="g1", topic_id=topic_id, messages=messages, vectors=vectors, **kw)


def glued(n: int = 6, *, first=("alice", "bob"), second=("carol", "dave"), **kw):
    """``n`` messages of one conversation on axis 0, then ``n`` of another on axis 1."""
    msgs = [msg(i, first[i % 2], f"first topic line {i}") for i in range(n)]
    msgs += [msg(n + i, second[i % 2], f"second topic line {i}") for i in range(n)]
    vecs = [unit(0, seed=i) for i in range(n)] + [unit(1, seed=100 + i) for i in range(n)]
    return msgs, vecs


def test_two_glued_conversations_are_split_at_the_break():
    msgs, vecs = glued()
    check = A.check_topic(view(msgs, vecs), CFG)
    assert check.split is not None
    assert check.split.parts == [[f"m{i}" for i in range(6)], [f"m{i}" for i in range(6, 12)]]
    assert check.split.part_topic_ids == ["t-1.p0", "t-1.p1"]
    assert check.split.participants == [["alice", "bob"], ["carol", "dave"]]
    assert check.split.breaks[0].message_id == "m6" and check.split.breaks[0].similarity < 0.3
    assert "semantic break" in check.split.reason
    assert check.cohesion is not None and check.cohesion < 0.9


def test_one_conversation_is_cohesive_and_not_split():
    msgs = [msg(i, ["alice", "bob"][i % 2], f"line {i}") for i in range(12)]
    check = A.check_topic(view(msgs, [unit(0, seed=i) for i in range(12)]), CFG)
    assert check.split is None and not check.suspicious and check.weight == 1.0
    assert check.cohesion > 0.8


def test_a_reply_across_the_break_prevents_the_split():
    msgs, vecs = glued()
    msgs[8] = msgs[8].model_copy(update={"reply_to": "m2"})
    assert A.check_topic(view(msgs, vecs), CFG).split is None


def test_an_addressee_across_the_break_prevents_the_split():
    msgs, vecs = glued()
    msgs[7] = msgs[7].model_copy(update={"text": "alice: what do you think?"})
    assert A.check_topic(view(msgs, vecs), CFG).split is None


def test_the_same_people_across_the_break_prevent_the_split():
    msgs, vecs = glued(second=("alice", "bob"))
    assert A.check_topic(view(msgs, vecs), CFG).split is None
    loose = CFG.model_copy(update={"participant_overlap_max": 1.0})
    assert A.check_topic(view(msgs, vecs), loose).split is not None


def test_three_conversations_give_three_parts_and_soft_members_stay_in_place():
    msgs = [msg(i, ["a", "b", "c", "d", "e", "f"][2 * (i // 5) + i % 2], f"line {i}") for i in range(15)]
    vecs = [unit(i // 5, seed=i) for i in range(15)]
    check = A.check_topic(view(msgs, vecs, weights={"m7": 0.9}), CFG)
    assert check.split is not None and len(check.split.parts) == 3
    assert [p[0] for p in check.split.parts] == ["m0", "m5", "m10"]
    assert "m7" in check.split.parts[1]


def test_chinese_topic_with_a_mention_link_is_kept_whole():
    texts = [
        "周末去杭州玩吗",
        "好啊，西湖边走走",
        "订哪家酒店",
        "我看看携程",
        "龙井村也不错",
        "那就定了",
        "@张三 服务器又挂了",
        "我在查日志",
        "是磁盘满了",
        "清理一下 /var/log",
        "好了恢复了",
        "谢谢",
    ]
    people = ["张三", "李四"] * 3 + ["王五", "赵六"] * 3
    msgs = [msg(i, people[i], t) for i, t in enumerate(texts)]
    vecs = [unit(0, seed=i) for i in range(6)] + [unit(1, seed=i) for i in range(6)]
    assert A.check_topic(view(msgs, vecs), CFG).split is None  # 王五 addresses 张三 of the first part
    msgs[6] = msgs[6].model_copy(update={"text": "服务器又挂了"})
    check = A.check_topic(view(msgs, vecs), CFG)
    assert check.split is not None and check.split.parts[1][0] == "m6"


@pytest.mark.parametrize(
    "vectors",
    [None, [], [None] * 12, [[0.0] * 16] * 12, [[1.0, 0.0]] * 6 + [[0.0] * 3] * 6, [[1.0, 0.0]] * 3],
    ids=["none", "empty", "all-missing", "zero", "mixed-dims", "too-few"],
)
def test_missing_or_bad_vectors_never_crash(vectors):
    msgs, _ = glued()
    check = A.check_topic(view(msgs, vectors), CFG)
    assert check.split is None and check.messages == 12


def test_empty_and_tiny_topics():
    empty = A.check_topic(view([]), CFG)
    assert empty.messages == 0 and empty.split is None and "empty topic" in empty.notes
    one = A.check_topic(view([msg(0, "a", "hi")], [unit(0)]), CFG)
    assert one.cohesion is None and one.split is None
    report = A.audit_chat("g1", [view([]), view([msg(0, "a", "hi")], [unit(0)], topic_id="t-2")], CFG)
    assert report.singleton_rate == 1.0 and report.merges == [] and report.splits == []


def test_low_cohesion_is_suspicious_with_a_lower_weight():
    msgs = [msg(i, "a", f"line {i}") for i in range(4)]
    vecs = [unit(i, noise=0.0) for i in range(4)]  # four orthogonal lines: no common subject
    check = A.check_topic(view(msgs, vecs), CFG)
    assert check.suspicious and check.weight == CFG.suspicious_weight < 1.0
    assert check.cohesion == pytest.approx(0.0, abs=1e-3)


def _pair(gap_s: float, second_people=("bob", "carol"), axis2: int = 0):
    first = [msg(i, ["alice", "bob"][i % 2], "x") for i in range(3)]
    start = 60 + gap_s
    second = [msg(10 + i, second_people[i % 2], "y", at=start + 30 * i) for i in range(3)]
    return [
        view(first, [unit(0, seed=i) for i in range(3)], topic_id="t-a"),
        view(second, [unit(axis2, seed=50 + i) for i in range(3)], topic_id="t-b"),
    ]


def test_near_duplicate_closed_topics_are_merged():
    merges = A.find_merges(_pair(60), CFG)
    assert len(merges) == 1
    m = merges[0]
    assert m.keep_topic_id == "t-a" and m.merged_topic_ids == ["t-b"] and m.shared_participants == ["bob"]
    assert m.message_ids == ["m0", "m1", "m2", "m10", "m11", "m12"] and m.similarity >= CFG.merge_similarity
    assert A.find_merges(_pair(60), CFG, only={"t-x"}) == []


@pytest.mark.parametrize(
    "gap, people, axis",
    [(5000, ("bob", "carol"), 0), (60, ("carol", "dave"), 0), (60, ("bob", "carol"), 1)],
    ids=["too-late", "no-shared-people", "different-subject"],
)
def test_no_merge_without_all_three_signals(gap, people, axis):
    assert A.find_merges(_pair(gap, people, axis), CFG) == []


def test_split_and_merge_events_are_new_versioned_events():
    msgs, vecs = glued()
    closed = TopicEvent(event_id="te-1", kind=TopicEventKind.CLOSED, chat_id="g1", topic_id="t-1",
                        message_ids=[m.message_id for m in msgs], weights={"m8": 0.9},
                        segmentation_version=3, at=msgs[-1].ts)  # fmt: skip
    proposal = A.check_topic(view(msgs, vecs), CFG).split
    events = A.split_events(closed, proposal)
    assert [e.kind for e in events] == [TopicEventKind.SPLIT] * 2
    assert [e.topic_id for e in events] == ["t-1.p0", "t-1.p1"]
    assert all(e.related_topic_ids == ["t-1"] and e.segmentation_version == 3 for e in events)
    assert all(e.reason.startswith("close-check: semantic break") for e in events)
    assert events[1].weights == {"m8": 0.9} and events[0].weights == {}
    assert events == A.split_events(closed, proposal)  # deterministic ids: a repeated check agrees
    merge = A.merge_event("g1", A.find_merges(_pair(60), CFG)[0], T0, 2, prefix="audit")
    assert (
        merge.kind == TopicEventKind.MERGED and merge.topic_id == "t-a" and merge.related_topic_ids == ["t-b"]
    )
    assert merge.reason.startswith("audit: near-duplicate") and merge.participants == [
        "alice",
        "bob",
        "carol",
    ]


# --- real MiniLM embeddings ------------------------------------------------------------------------------

NGINX = [
    ("alice", "my nginx reverse proxy returns 502 bad gateway for the node app"),
    ("bob", "is the upstream node process actually listening on port 3000?"),
    ("alice", "netstat shows it listening on 127.0.0.1:3000"),
    ("bob", "check proxy_pass in the server block, maybe it points at localhost:8080"),
    ("alice", "yes proxy_pass had the wrong port, fixed it and reloaded nginx"),
    ("bob", "great, the 502 errors should be gone now"),
]
BREAD = [
    ("carol", "my sourdough bread came out flat and dense again"),
    ("dave", "how long did you let the dough proof before baking?"),
    ("carol", "about four hours at room temperature, the starter was bubbly"),
    ("dave", "try a longer cold fermentation in the fridge overnight"),
    ("carol", "should I bake it in a dutch oven at high heat?"),
    ("dave", "yes, 250 degrees with the lid on for the first twenty minutes"),
]


def _embed(minilm, texts):
    return asyncio.run(minilm.embed(texts)).tolist()


def test_minilm_glued_english_conversations_are_split(minilm):
    lines = NGINX + BREAD
    msgs = [msg(i, s, t) for i, (s, t) in enumerate(lines)]
    check = A.check_topic(view(msgs, _embed(minilm, [t for _, t in lines])), CFG)
    assert check.split is not None and check.split.breaks[0].message_id == "m6"
    assert len(check.split.parts) == 2


def test_minilm_one_english_conversation_is_not_split(minilm):
    lines = NGINX + [
        ("carol", "I had the same 502 from nginx last week"),
        ("dave", "was it also the upstream port in proxy_pass?"),
        ("carol", "no, the node app crashed, so nginx had no upstream"),
        ("dave", "pm2 can restart the node process when it crashes"),
    ]
    msgs = [msg(i, s, t) for i, (s, t) in enumerate(lines)]
    check = A.check_topic(view(msgs, _embed(minilm, [t for _, t in lines])), CFG)
    assert check.split is None and check.cohesion > 0.3 and not check.suspicious


def test_minilm_audit_of_a_chat(minilm):
    lines = NGINX + BREAD
    msgs = [msg(i, s, t) for i, (s, t) in enumerate(lines)]
    vecs = _embed(minilm, [t for _, t in lines])
    views = [
        view(msgs, vecs, topic_id="t-glued"),
        view(msgs[:6], vecs[:6], topic_id="t-nginx"),
        view([msg(20, "eve", "hi all")], None, topic_id="t-1"),
    ]
    report = A.audit_chat("g1", views, CFG)
    assert [s.topic_id for s in report.splits] == ["t-glued"]
    assert report.singleton_rate == pytest.approx(1 / 3, abs=1e-3) and report.mean_cohesion is not None
    assert [c.topic_id for c in report.topics] == ["t-glued", "t-nginx", "t-1"]
