from __future__ import annotations

import numpy as np
import pytest

from retrieval.fusion import mmr, rrf


def test_rrf_hand_computed():
    # a: 1/(60+1) + 1/(60+3) ; b: 1/(60+2) + 1/(60+1) ; c: 1/(60+3) ; d: 1/(60+2)
    fused = dict(rrf([["a", "b", "c"], ["b", "d", "a"]]))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)
    assert [doc for doc, _ in rrf([["a", "b", "c"], ["b", "d", "a"]])] == ["b", "a", "d", "c"]


def test_rrf_small_k_and_weights():
    # k=1: x: 2*(1/2) = 1.0 ; y: 2*(1/3) + 1*(1/2) = 1.1667
    fused = rrf([["x", "y"], ["y"]], k=1, weights=[2.0, 1.0])
    assert fused[0][0] == "y" and fused[0][1] == pytest.approx(2 / 3 + 1 / 2)
    assert fused[1] == ("x", pytest.approx(1.0))


def test_rrf_ties_break_by_first_appearance():
    fused = rrf([["a", "b"], ["b", "a"]])
    assert fused[0][1] == pytest.approx(fused[1][1])
    assert [d for d, _ in fused] == ["a", "b"]
    assert [d for d, _ in rrf([["q"], ["p"]])] == ["q", "p"]


def test_rrf_duplicates_count_once_and_empty_inputs():
    assert rrf([["a", "a", "b"]]) == [("a", pytest.approx(1 / 61)), ("b", pytest.approx(1 / 63))]
    assert rrf([]) == []
    assert rrf([[], []]) == []


def test_rrf_rejects_mismatched_weights():
    with pytest.raises(ValueError):
        rrf([["a"], ["b"]], weights=[1.0])


def test_mmr_prefers_diverse_results():
    q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    cands = np.array([[0.9, 0.436, 0.0], [0.9, 0.435, 0.0], [0.8, 0.0, 0.6]], dtype=np.float32)
    cands /= np.linalg.norm(cands, axis=1, keepdims=True)
    picked = [d for d, _ in mmr(q, cands, ["a", "a2", "b"], k=2, lambda_=0.5)]
    assert picked == ["a2", "b"]  # the near-duplicate of the first pick is skipped
    assert [d for d, _ in mmr(q, cands, ["a", "a2", "b"], k=3, lambda_=1.0)] == ["a2", "a", "b"]
    assert mmr(q, cands[:0], [], k=3) == []
