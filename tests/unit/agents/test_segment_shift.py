"""The two-person topic-shift model and its use by the segmenter (``SegmenterConfig.dyadic_shift``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from agents.config import SegmenterConfig
from agents.reply_linker import LinkMsg, text_cues
from agents.segment_link import link_msg
from agents.segment_shift import (
    SHIFT_FEATURES,
    carries_no_topic,
    default_shift_weights,
    dyad_features,
    is_dyadic,
    shift_features,
    shift_p,
    skip_features,
)
from agents.segment_signals import features, keywords
from agents.segmenter import ChatPool, step
from schemas import ChatMessage, TopicEventKind

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
DIALOGUE = [
    ("A", "i just got back from a hiking trip in the mountains ."),
    ("B", "nice , which mountains did you go hiking in ?"),
    ("A", "the rocky mountains , the hiking trails there are great ."),
    ("B", "great . do you like cooking ? i make pasta every sunday ."),
]


def lm(i: int, sender: str, text: str) -> LinkMsg:
    return LinkMsg(
        message_id=f"m{i}",
        sender=sender,
        ts=T0.timestamp() + 60 * i,
        keywords=keywords(text),
        question="?" in text,
        length=min(1.0, len(text) / 200),
        **text_cues(text),
    )


def test_shipped_weights_cover_every_feature_with_provenance():
    w = default_shift_weights()
    assert set(w.weights) == set(SHIFT_FEATURES) and all(np.isfinite(v) for v in w.weights.values())
    assert 0.0 < w.threshold < 1.0
    assert {"data_sha256", "command", "date", "cv"} <= set(w.meta)


def test_a_new_question_on_new_words_is_more_likely_a_shift_than_a_continuation():
    window = [lm(i, s, t) for i, (s, t) in enumerate(DIALOGUE[:2])]
    go_on = shift_features(lm(2, *DIALOGUE[2]), window, None, [None, None])
    new = shift_features(lm(2, "A", DIALOGUE[3][1]), window, None, [None, None])
    w = default_shift_weights()
    assert shift_p(new, w) > shift_p(go_on, w)
    col = SHIFT_FEATURES.index
    assert go_on[col("kw_prev")] > 0 and new[col("kw_prev")] == 0 and new[col("question_x_new")] == 1.0
    assert go_on[col("no_vector")] == 1.0 and go_on[col("z_prev")] == 0.0


def test_vectors_feed_the_cosine_features():
    rng = np.random.default_rng(1)
    a = rng.normal(size=8)
    a /= np.linalg.norm(a)
    window = [lm(0, "A", "alpha"), lm(1, "B", "beta"), lm(2, "A", "delta")]
    x = shift_features(lm(3, "B", "gamma"), window, a, [-a, -a, a])
    col = SHIFT_FEATURES.index
    assert x[col("no_vector")] == 0.0 and x[col("z_prev")] > 0 > x[col("z_prev2")] and x[col("pct_prev")] == 0.5


def test_dyadic_means_two_people_and_a_previous_turn():
    two = [lm(0, "A", "x"), lm(1, "B", "y")]
    assert is_dyadic(lm(2, "A", "z"), two) and not is_dyadic(lm(0, "A", "z"), [])
    assert not is_dyadic(lm(2, "C", "z"), two)
    assert not is_dyadic(lm(2, "A", "z"), two, private=False)  # a group's first two speakers: no dialogue yet
    six = [lm(i, "AB"[i % 2], "z") for i in range(6)]
    assert is_dyadic(lm(6, "A", "z"), six, private=False) and not is_dyadic(lm(6, "C", "z"), six, private=False)


def chat(turns: list[tuple[str, str]], chat_id: str = "d") -> list[ChatMessage]:
    return [
        ChatMessage(chat_id=chat_id, message_id=f"m{i}", sender=s, ts=T0 + timedelta(minutes=i), text=t,
                    chat_type="private")
        for i, (s, t) in enumerate(turns)
    ]


def main_topics(messages: list[ChatMessage], cfg: SegmenterConfig) -> list[str]:
    pool, out = ChatPool(chat_id=messages[0].chat_id), []
    for m in messages:
        pool, events = step(pool, m, None, cfg)
        main = next(e for e in events if e.kind in (TopicEventKind.OPENED, TopicEventKind.EXTENDED))
        out.append(main.topic_id)
    return out


def test_the_segmenter_follows_the_shift_model_in_a_dialogue():
    cfg = SegmenterConfig(dyadic_shift=True)
    msgs = chat(DIALOGUE)
    topics = main_topics(msgs, cfg)
    w = default_shift_weights()
    pool = ChatPool(chat_id="d")
    expected = [False]
    for k, m in enumerate(msgs):  # what the model says about each turn, read from the same window
        if k:
            x = shift_features(lm(k, m.sender, m.text), pool.window, None, [None] * len(pool.window))
            expected.append(shift_p(x, w) >= w.threshold)
        pool, _ = step(pool, m, None, cfg)
    assert [k > 0 and topics[k] != topics[k - 1] for k in range(len(topics))] == expected
    assert expected[-1] and not expected[2]  # the cooking question shifts, the mountain answer continues


def test_three_people_are_left_to_the_join_score():
    turns = [("A", "grub fails after the windows install"), ("B", "A: reinstall grub from a live cd"),
             ("C", "anyone know a good pasta recipe?"), ("A", "B: thanks, grub works again")]  # fmt: skip
    msgs = chat(turns, "g")
    assert main_topics(msgs, SegmenterConfig(dyadic_shift=True)) == main_topics(msgs, SegmenterConfig())


def test_skip_features_read_the_window_without_its_last_turn():
    msgs = chat(DIALOGUE)
    pool = ChatPool(chat_id="d")
    for m in msgs[:3]:
        pool, _ = step(pool, m, None, SegmenterConfig())
    last = lm(3, *DIALOGUE[3])
    expected = shift_features(last, pool.window[:-1], None, [None] * 2, False, False)
    assert np.array_equal(skip_features(pool, last, None, DIALOGUE[3][1], False), expected)


def test_in_a_dialogue_the_centroid_cosine_merges_nothing():
    cfg = SegmenterConfig(merge_similarity=-1.0, merge_min_messages=1, shift_revise=False)  # any two would merge
    vec = np.ones(8) / np.sqrt(8)
    pool, merges, opened = ChatPool(chat_id="d"), [], 0
    for m in chat(DIALOGUE):
        pool, events = step(pool, m, vec, cfg)
        merges += [e for e in events if e.kind == TopicEventKind.MERGED]
        opened += sum(e.kind == TopicEventKind.OPENED for e in events)
    assert opened == 2 and merges == [] and len(pool.topics) == 2


def test_a_turn_that_only_reacts_carries_no_topic_in_either_language():
    for text in ("ok", "haha", "sure, will do", "thanks!", "好的", "嗯嗯", "多少钱？", "好，我去问问", "行，那就这样"):
        assert carries_no_topic(text), text
    # a marker of a new subject, or a reaction followed by a subject of its own, may still open one
    for text in ("ok, one more thing", "ok cool. do you play any instruments? I started the cello in March",
                 "好的。另外我想问一下发票怎么开", "对了，你上次说的搬家定了吗", "我们下周二去爬山吧"):
        assert not carries_no_topic(text), text


def _steps(turns: list[tuple[str, str]], vectors: list[np.ndarray]) -> list[str]:
    """Each turn's topic once the chat is read (a merge moves the merged topic's turns into the one it joined)."""
    pool, out = ChatPool(chat_id="d"), []
    for m, v in zip(chat(turns), vectors, strict=True):
        pool, events = step(pool, m, v, SegmenterConfig())
        for e in events:
            if e.kind == TopicEventKind.MERGED:
                out = [e.topic_id if t in e.related_topic_ids else t for t in out]
        out.append(next(e for e in events if e.kind in (TopicEventKind.OPENED, TopicEventKind.EXTENDED)).topic_id)
    return out


def test_the_segmenter_never_opens_a_topic_on_a_turn_that_only_reacts():
    rng = np.random.default_rng(7)
    near = [v / np.linalg.norm(v) for v in (np.eye(16)[0] + 0.1 * rng.standard_normal(16) for _ in range(4))]
    far = np.eye(16)[5]  # far from every earlier turn: its similarities alone read as a shift
    talk = [("A", "我的宽带这两天老是掉线"), ("B", "您好，我帮您查一下线路"), ("A", "晚上九点以后特别明显"),
            ("B", "查到您那边的光猫需要重启，我这边远程帮您操作了")]  # fmt: skip
    pool, cfg = ChatPool(chat_id="d"), SegmenterConfig()
    for m, v in zip(chat(talk), near, strict=True):
        pool, _ = step(pool, m, v, cfg)
    ok = chat([*talk, ("A", "好的")])[-1]
    x = dyad_features(pool, link_msg(ok, features(ok, far, pool, cfg)), far, ok.text)
    assert shift_p(x, default_shift_weights()) >= default_shift_weights().threshold  # the model alone would shift
    answered = _steps([*talk, ("A", "好的")], [*near, far])
    assert len(set(answered)) == 1
    asked = _steps([*talk, ("A", "我还想把手机套餐换成流量多一点的")], [*near, far])
    assert asked[-1] != asked[-2]  # the same vector with a subject of its own does shift
