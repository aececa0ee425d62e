"""Pk / WindowDiff (NLTK's definitions, checked on NLTK's own doctest values) and the two-party shift
model's similarity features, which must mean the same whatever band an embedder packs its cosines into."""

from __future__ import annotations

import numpy as np

from agents.reply_linker import LinkMsg
from agents.seg_metrics import half_mean_segment, pk, windowdiff
from agents.segment_shift import SHIFT_FEATURES, closing_cue, new_topic_cue, shift_features


def test_pk_and_windowdiff_match_nltk_doctests():
    assert round(pk("0100" * 100, "1" * 400, 2), 2) == 0.5  # NLTK prints these to two places
    assert round(pk("0100" * 100, "0" * 400, 2), 2) == 0.5
    assert pk("0100" * 100, "0100" * 100, 2) == 0.0
    s1, s2, s3 = "000100000010", "000010000100", "100000010000"
    assert windowdiff(s1, s1, 3) == 0.0
    assert abs(windowdiff(s1, s2, 3) - 0.3) < 1e-6
    assert abs(windowdiff(s2, s3, 3) - 0.8) < 1e-6


def test_k_is_half_the_mean_reference_segment():
    assert half_mean_segment("0001000") == 2  # 8 units, 2 segments of 4
    assert half_mean_segment("00") == 2 and half_mean_segment("11") == 1


def _compress(vecs: np.ndarray, c: float) -> np.ndarray:
    """Unit vectors whose pairwise cosines are exactly ``(1 - c) * cos + c`` (a narrow band near 1)."""
    extra = np.full((len(vecs), 1), np.sqrt(c))
    return np.hstack([np.sqrt(1 - c) * vecs, extra])


def test_similarity_features_are_the_same_in_a_narrow_cosine_band():
    rng = np.random.default_rng(7)
    topic_a, topic_b = rng.normal(size=32), rng.normal(size=32)
    raw = np.asarray([t + 0.6 * rng.normal(size=32) for t in [topic_a] * 6 + [topic_b]])
    raw /= np.linalg.norm(raw, axis=1, keepdims=True)
    window = [LinkMsg(message_id=str(i), sender="AB"[i % 2], ts=float(i), length=0.2) for i in range(6)]
    msg = LinkMsg(message_id="6", sender="A", ts=6.0, length=0.2)
    wide = shift_features(msg, window, raw[6], list(raw[:6]))
    narrow_vecs = _compress(raw, 0.85)
    narrow = shift_features(msg, window, narrow_vecs[6], list(narrow_vecs[:6]))
    assert np.allclose(wide, narrow, atol=1e-6)
    z_prev = wide[SHIFT_FEATURES.index("z_prev")]
    assert z_prev < -1  # the turn on the new topic sits well below the chat's neighbour cosines


def test_cues_of_a_new_request_and_of_a_closed_one():
    assert new_topic_cue("好的。另外我想把宽带升级一下") and new_topic_cue("By the way, is the gym open?")
    assert not new_topic_cue("我们昨天在会上讨论了很多问题，另外的那个方案也不错")
    assert closing_cue("好的，谢谢") and closing_cue("You're welcome, have a nice day!")
    assert not closing_cue("Can you check my bill from last month?")
