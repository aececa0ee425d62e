"""One turn later the segmenter may take a two-person chat's shift back (agents/segment_revise.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from agents.config import SegmenterConfig
from agents.segment_link import decode_vec
from agents.segment_revise import (
    LOOK_FEATURES,
    REVISE_FEATURES,
    look_features,
    next_look,
    revise_p,
    revise_row,
)
from agents.segment_shift import SHIFT_FEATURES, default_shift_weights, shift_features, shift_logit
from agents.segmenter import ChatPool, step
from schemas import TopicEventKind
from tests.unit.agents.test_segment_shift import DIALOGUE, chat, lm

HIKING = [
    ("A", "the hiking trail in the mountains was steep"),
    ("B", "which mountains did you hike"),
    ("A", "the rocky mountains , long trails"),
    ("B", "hiking boots matter on those trails"),
]
SHIFT = ("A", "do you like cooking pasta ?")
GOES_ON = ("B", "yes , i cook pasta every sunday")
BACK = ("B", "the trail had great views of the mountains")


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def vectors(seed: int = 3) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, np.ndarray]:
    """Four turns near one direction, a shift turn near another, a next turn near each."""
    rng = np.random.default_rng(seed)
    a, b = unit(rng.normal(size=16)), unit(rng.normal(size=16))
    near = lambda c: unit(c + 0.3 * rng.normal(size=16))  # noqa: E731
    return [near(a) for _ in HIKING], near(b), near(b), near(a)


def test_shipped_weights_carry_a_revision_over_every_feature():
    w = default_shift_weights()
    assert set(w.revise) == set(REVISE_FEATURES) and 0.0 < w.revise_threshold < 1.0
    assert len(REVISE_FEATURES) == 4 + len(SHIFT_FEATURES) - 1 + len(LOOK_FEATURES)
    assert w.revise["logit_turn"] > 0 and w.revise["logit_next_skip"] > w.revise["logit_next"]


def test_the_look_reads_which_side_of_the_shift_the_next_turn_goes_on_from():
    before = [lm(i, s, t) for i, (s, t) in enumerate(HIKING)]
    old, turn_vec, on_vec, back_vec = vectors()
    shift = lm(4, *SHIFT)
    col = LOOK_FEATURES.index
    on = look_features(before, shift, lm(5, *GOES_ON), old, turn_vec, on_vec)
    back = look_features(before, shift, lm(5, *BACK), old, turn_vec, back_vec)
    assert on[col("next_turn")] > back[col("next_turn")] and on[col("next_left")] < back[col("next_left")]
    assert on[col("next_prev")] < back[col("next_prev")] and on[col("next_two")] < back[col("next_two")]
    assert on[col("kw_next_turn")] > 0 == on[col("kw_next_left")] and back[col("kw_next_left")] > 0
    bare = look_features(before, shift, lm(5, *BACK), [None] * 4, None, None)
    assert not bare[: col("kw_two")].any() and bare[col("kw_next_left")] == back[col("kw_next_left")]


def test_a_next_turn_that_goes_on_from_before_the_shift_withdraws_it_more_readily():
    before = [lm(i, s, t) for i, (s, t) in enumerate(HIKING)]
    old, turn_vec, on_vec, back_vec = vectors()
    shift = lm(4, *SHIFT)
    w = default_shift_weights()
    x = shift_features(shift, before, turn_vec, old)

    def p(next_turn: tuple[str, str], vec: np.ndarray) -> float:
        nxt = lm(5, *next_turn)
        logit_next = shift_logit(shift_features(nxt, [*before, shift], vec, [*old, turn_vec]), w)
        logit_skip = shift_logit(shift_features(nxt, before, vec, old), w)
        look = look_features(before, shift, nxt, old, turn_vec, vec)
        return revise_p(revise_row(x, shift_logit(x, w), logit_next, logit_skip, look), w)

    assert p(BACK, back_vec) < p(GOES_ON, on_vec)


def test_next_look_reads_the_pool_with_its_last_turn_as_the_shift_turn():
    old, turn_vec, on_vec, _ = vectors()
    pool = ChatPool(chat_id="d")
    for m, v in zip(chat([*HIKING, SHIFT]), [*old, turn_vec], strict=True):
        pool, _ = step(pool, m, v, SegmenterConfig())
    nxt = lm(5, *GOES_ON)
    stored = [decode_vec(v) for v in pool.window_vectors]
    expected = look_features(pool.window[:-1], pool.window[-1], nxt, stored[:-1], stored[-1], on_vec)
    assert np.array_equal(next_look(pool, nxt, on_vec), expected)


def test_revision_is_off_without_revise_weights():
    weights = default_shift_weights().model_copy(update={"revise": {}, "revise_threshold": 0.0})
    row = revise_row(np.ones(len(SHIFT_FEATURES)), -5.0, 5.0, -5.0, np.ones(len(LOOK_FEATURES)))
    assert revise_p(row, weights) >= weights.revise_threshold


def withdraw_every_shift() -> SegmenterConfig:
    weights = default_shift_weights().model_copy(update={"revise_threshold": 1.0})
    path = Path(tempfile.mkdtemp()) / "w.json"
    path.write_text(weights.model_dump_json())
    default_shift_weights.cache_clear()
    return SegmenterConfig(shift_weights=str(path))


def test_a_withdrawn_shift_merges_its_one_turn_topic_back():
    cfg = withdraw_every_shift()
    turns = [*DIALOGUE, ("A", "i love cooking , mostly pasta and curry .")]
    pool, log = ChatPool(chat_id="d"), []
    for m in chat(turns):
        pool, events = step(pool, m, None, cfg)
        log.append(events)
    opened = next(e for e in log[3] if e.kind == TopicEventKind.OPENED)  # the cooking question shifts
    merged = [e for e in log[4] if e.kind == TopicEventKind.MERGED]
    assert len(merged) == 1 and merged[0].related_topic_ids == [opened.topic_id] and merged[0].reason == "shift-revised"
    assert [t.message_ids for t in pool.topics] == [[f"m{i}" for i in range(5)]]
    off, _ = step(ChatPool(chat_id="d"), chat(turns)[0], None, cfg.model_copy(update={"shift_revise": False}))
    assert off.pending_shift is None


def test_a_pending_shift_keeps_its_turn_features_and_one_kept_without_them_stays():
    cfg = withdraw_every_shift()
    msgs = chat([*DIALOGUE, ("A", "i love cooking , mostly pasta and curry .")])
    pool = ChatPool(chat_id="d")
    for m in msgs[:4]:
        pool, _ = step(pool, m, None, cfg)
    assert pool.pending_shift is not None and len(pool.pending_shift.features) == len(SHIFT_FEATURES)
    older = pool.model_copy(update={"pending_shift": pool.pending_shift.model_copy(update={"features": []})})
    _, events = step(older, msgs[4], None, cfg)
    assert not [e for e in events if e.kind == TopicEventKind.MERGED]
