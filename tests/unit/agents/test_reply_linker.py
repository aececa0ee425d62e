"""The reply linker: ranking of candidate parents, and its use inside the streaming segmenter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from agents.config import SegmenterConfig
from agents.reply_linker import FEATURES, LinkMsg, Threads, candidate_matrix, default_weights, rank, text_cues
from agents.segment_link import decode_vec, encode_vec
from agents.segmenter import ChatPool, dump_pools, load_pools, step
from schemas import ChatMessage, TopicEventKind

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def lm(i: int, sender: str, *, to: str | None = None, words: str = "", q: bool = False, text: str = "") -> LinkMsg:
    return LinkMsg(
        message_id=f"m{i}",
        sender=sender,
        ts=T0.timestamp() + 20 * i,
        addressees=(to,) if to else (),
        keywords=frozenset(words.split()),
        question=q,
        **text_cues(text),
    )


def best(msg: LinkMsg, window: list[LinkMsg], cosines=None) -> str:
    return rank(msg, window, cosines)[0][0]


def test_shipped_weights_cover_every_feature():
    w = default_weights()
    assert set(w.weights) == set(FEATURES)
    assert w.window >= 20 and all(np.isfinite(v) for v in w.weights.values())


def test_first_message_of_a_chat_starts_a_conversation():
    ranking = rank(lm(0, "alice", words="grub boot", q=True), [])
    assert ranking == [("m0", 1.0)]


def test_addressing_someone_links_to_their_message_not_the_previous_line():
    window = [
        lm(0, "alice", words="grub boot windows", q=True),
        lm(1, "carol", words="pizza lunch"),
        lm(2, "dave", words="wifi driver broadcom", q=True),
    ]
    reply = lm(3, "bob", to="alice", words="grub install boot")
    assert best(reply, window) == "m0"


def test_a_thank_you_links_to_the_message_that_helped_the_sender():
    window = [
        lm(0, "alice", words="sound card alsa", q=True),
        lm(1, "bob", to="alice", words="alsamixer unmute"),
        lm(2, "carol", words="kernel panic boot", q=True),
    ]
    thanks = lm(3, "alice", to="bob", text="thanks, that worked")
    assert best(thanks, window) == "m1"


def test_an_unaddressed_answer_goes_back_to_whoever_answered_the_sender():
    # bob answered alice without naming her (the link the linker inferred is kept in the window): alice's next
    # unaddressed line ranks bob's answer above the strangers in between; without that link, it loses that place
    window = [
        lm(0, "alice", words="printer cups driver", q=True),
        lm(1, "bob", words="hplip package").model_copy(update={"parent": "m0", "parent_sender": "alice"}),
        lm(2, "carol", words="steam games nvidia", q=True),
        lm(3, "dave", words="steam proton"),
    ]
    unlinked = [m.model_copy(update={"parent": None, "parent_sender": None}) for m in window]
    topics = Threads({"m0": "t1", "m1": "t1", "m2": "t2", "m3": "t2"}, sender_topic="t1")  # as the segmenter has them
    ranked = dict(rank(lm(4, "alice", words="installed now"), window, threads=topics))
    ranked_unlinked = dict(rank(lm(4, "alice", words="installed now"), unlinked, threads=topics))
    assert ranked["m1"] > max(ranked["m2"], ranked["m3"])
    assert ranked_unlinked["m1"] < max(ranked_unlinked["m2"], ranked_unlinked["m3"]) and ranked_unlinked["m1"] < ranked["m1"]
    x_linked = candidate_matrix(lm(4, "alice"), window, None)
    x_unlinked = candidate_matrix(lm(4, "alice"), unlinked, None)
    col = FEATURES.index("cand_answered_sender")
    assert x_linked[1, col] == 1.0 and x_unlinked[1, col] == 0.0 and x_linked[:, col].sum() == 1.0


def test_unaddressed_messages_use_their_own_pair_weights():
    window = [lm(0, "alice", words="grub boot", q=True), lm(1, "bob", words="kernel")]
    n_pair = FEATURES.index("self_bias")
    plain = [i for i, name in enumerate(FEATURES) if name.startswith("plain_")]
    x_plain = candidate_matrix(lm(2, "carol", words="grub"), window, None)
    x_addressed = candidate_matrix(lm(2, "carol", to="alice", words="grub"), window, None)
    assert np.array_equal(x_plain[:-1, plain], x_plain[:-1, :n_pair])  # same cues, second set of weights
    assert not x_addressed[:, plain].any() and not x_plain[-1, plain].any()  # the self-link row never


def test_probabilities_sum_to_one_and_missing_vectors_are_tolerated():
    window = [lm(i, f"u{i % 3}", words=f"w{i}") for i in range(10)]
    cos = np.full(10, np.nan)
    cos[3] = 0.9
    ranking = rank(lm(10, "u1", words="w3"), window, cos)
    assert abs(sum(p for _, p in ranking) - 1.0) < 1e-9
    assert {m for m, _ in ranking} == {f"m{i}" for i in range(11)}


def test_vector_codec_round_trips_at_half_precision():
    v = np.random.default_rng(0).normal(size=384).astype(np.float32)
    v /= np.linalg.norm(v)
    back = decode_vec(encode_vec(v))
    assert back is not None and back.shape == v.shape and float(back @ v) > 0.999
    assert decode_vec(encode_vec(None)) is None


def msg(i: int, sender: str, text: str) -> ChatMessage:
    return ChatMessage(chat_id="irc", message_id=f"m{i}", sender=sender, ts=T0 + timedelta(seconds=20 * i), text=text)


def test_segmenter_events_carry_the_inferred_parent_and_survive_a_checkpoint():
    cfg = SegmenterConfig()
    chat = [
        msg(0, "alice", "how do I reinstall grub after installing windows?"),
        msg(1, "carol", "anyone tried the new nvidia driver on 24.04?"),
        msg(2, "bob", "alice: boot a live cd and run grub-install /dev/sda"),
        msg(3, "alice", "bob: thanks, grub is back"),
    ]
    pool, events = ChatPool(chat_id="irc"), []
    for m in chat[:2]:
        pool, evs = step(pool, m, None, cfg)
        events += evs
    pool = load_pools(dump_pools({"irc": pool}))["irc"]  # a worker restarts between messages
    for m in chat[2:]:
        pool, evs = step(pool, m, None, cfg)
        events += evs
    parents = {
        e.message_ids[0]: e.parent_message_id
        for e in events
        if e.kind in (TopicEventKind.OPENED, TopicEventKind.EXTENDED) and e.reason != "soft"
    }
    assert parents["m0"] == "m0"  # starts a conversation
    assert parents["m2"] == "m0" and parents["m3"] == "m2"
    assert len(pool.window) == len(pool.window_vectors) == 4
    kept = {m.message_id: (m.parent, m.parent_sender) for m in pool.window}  # what later messages read
    assert kept["m0"] == ("m0", None) and kept["m2"] == ("m0", "alice") and kept["m3"] == ("m2", "bob")


def test_linker_off_keeps_the_plain_segmenter():
    cfg = SegmenterConfig(use_linker=False)
    pool, events = step(ChatPool(chat_id="irc"), msg(0, "alice", "hello there"), None, cfg)
    pool, events = step(pool, msg(1, "bob", "alice: hi"), None, cfg)
    assert pool.window == [] and events[-1].parent_message_id is None


def test_pace_scale_follows_the_chat_median_gap_within_bounds():
    from agents.segment_signals import pace_scale

    cfg = SegmenterConfig(pace_adaptive=True, pace_reference_s=10.0, pace_min=0.5, pace_max=4.0)
    assert pace_scale([5.0] * 3, cfg) == 1.0  # too young to tell
    assert pace_scale([20.0] * 10, cfg) == 2.0
    assert pace_scale([1.0] * 10, cfg) == 0.5 and pace_scale([600.0] * 10, cfg) == 4.0
    assert pace_scale([600.0] * 10, SegmenterConfig()) == 1.0  # off by default


def test_pace_is_measured_per_chat_from_its_own_messages():
    def chat(gap: float) -> list[ChatMessage]:
        people = ["ann", "ben", "cid"]
        return [
            ChatMessage(chat_id="c", message_id=f"m{i}", sender=people[i % 3], ts=T0 + timedelta(seconds=gap * i),
                        text=f"line {i}")
            for i in range(12)
        ]  # fmt: skip

    def last_features(cfg: SegmenterConfig, gap: float):
        from agents.segment_signals import features

        pool = ChatPool(chat_id="c")
        for m in chat(gap):
            pool, _ = step(pool, m, None, cfg)
        return features(chat(gap)[-1], None, pool, cfg)

    on = SegmenterConfig(pace_adaptive=True, pace_reference_s=10.0)
    assert last_features(on, 40.0).pace == 4.0 and last_features(on, 10.0).pace == 1.0
    assert last_features(SegmenterConfig(), 40.0).pace == 1.0
