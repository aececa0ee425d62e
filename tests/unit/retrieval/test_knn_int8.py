"""The int8 scan with exact rescoring returns the exact scan's top n (ids, order and scores), or says it cannot."""

from __future__ import annotations

import numpy as np
import pytest

from backends.sqlite import knn_int8
from backends.sqlite.vector_cache import ChatVectors


def unit_rows(rng: np.random.Generator, n: int, dim: int, clusters: int = 0) -> np.ndarray:
    """Random unit vectors; with ``clusters``, rows gather near that many centres (like sentence embeddings)."""
    x = rng.standard_normal((n, dim)).astype(np.float32)
    if clusters:
        centres = rng.standard_normal((clusters, dim)).astype(np.float32) * 3
        x = centres[rng.integers(0, clusters, n)] + x
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def exact_top(
    matrix: np.ndarray, query: np.ndarray, keep: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    sims = matrix @ query
    rows = np.flatnonzero(keep)
    order = rows[np.lexsort((rows, -sims[rows]))][:n]
    return order, sims[order]


def queries(rng: np.random.Generator, matrix: np.ndarray, count: int) -> list[np.ndarray]:
    """Half random directions, half near a stored row (a question close to one document)."""
    out = []
    for i in range(count):
        q = rng.standard_normal(matrix.shape[1]).astype(np.float32)
        if i % 2:
            q = matrix[rng.integers(len(matrix))] + 0.3 * q / np.linalg.norm(q)
        out.append((q / np.linalg.norm(q)).astype(np.float32))
    return out


@pytest.mark.parametrize("clusters", [0, 20])
def test_the_error_bound_holds_for_every_row(clusters):
    rng = np.random.default_rng(clusters)
    matrix = unit_rows(rng, 3000, 384, clusters)
    index = knn_int8.build(matrix)
    for q in queries(rng, matrix, 10):
        approx, bound = index.approx(q)
        error = np.abs(matrix.astype(np.float64) @ q - approx)
        assert error.max() <= bound
        assert error.max() < 0.02 and bound < 0.06  # 7-bit rows: small, and the bound not vacuous
        assert index.approx(q)[0] is approx and not approx.flags.writeable  # a repeated query reuses its scan


@pytest.mark.parametrize("clusters", [0, 20])
@pytest.mark.parametrize("n", [1, 10, 40, 120])
def test_top_equals_the_exact_scan(clusters, n):
    rng = np.random.default_rng(100 + n + clusters)
    matrix = unit_rows(rng, 6000, 384, clusters)
    index = knn_int8.build(matrix[:5000])  # the last 1,000 rows came after the index: scanned exactly
    masks = {
        "all": np.ones(len(matrix), dtype=bool),
        "70%": rng.random(len(matrix)) < 0.7,
        "few": np.zeros(len(matrix), dtype=bool),
    }
    masks["few"][4900:5100] = True  # a narrow time window across the index's end
    answered = 0
    for name, keep in masks.items():
        for q in queries(rng, matrix, 6):
            got = knn_int8.top(index, matrix, q, keep, n, first=64)
            if got is None:
                continue
            answered += 1
            want = exact_top(matrix, q, keep, n)
            assert np.array_equal(got[0], want[0]), name
            np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-6)
    assert answered >= 15  # of 18: the bound proves the answer nearly always on these shapes


def test_top_declines_when_the_bound_cannot_separate_the_rows():
    """All rows equal: every row could be the n-th, so nothing short of the whole chat proves the answer."""
    rng = np.random.default_rng(7)
    row = unit_rows(rng, 1, 64)[0]
    matrix = np.tile(row, (4000, 1))
    index = knn_int8.build(matrix)
    assert knn_int8.top(index, matrix, row, np.ones(4000, dtype=bool), 10) is None


def chat_vectors(matrix: np.ndarray, start: int = 0) -> list:
    kinds = ["turn", "fact", "summary", "qa"]
    return [(start + i, kinds[i % 4], float(i), i % 7 != 0, None, matrix[i]) for i in range(len(matrix))]


def test_a_large_chat_searches_through_the_index_and_answers_exactly():
    rng = np.random.default_rng(3)
    dim, rows = 32, knn_int8.MIN_ROWS + 2000
    matrix = unit_rows(rng, rows + 4000, dim, clusters=50)
    cv = ChatVectors.from_rows(chat_vectors(matrix[:rows]), dim)

    def check(cv: ChatVectors, m: np.ndarray) -> None:
        for q in queries(rng, m, 6):
            for kinds, live_only in ((None, True), (["fact", "qa"], True), (["turn"], False)):
                keep = cv.mask(kinds, None, None, live_only)
                want_rows, want_scores = exact_top(m, q, keep, 40)
                got = cv.top(q, keep, 40)
                assert [r for r, _ in got] == cv.rids[want_rows].tolist()
                np.testing.assert_allclose([s for _, s in got], want_scores, rtol=0, atol=1e-6)

    check(cv, matrix[:rows])
    assert cv.index is not None and cv.index.rows == rows  # built by the first search
    grown = cv.extend(chat_vectors(matrix[rows:], start=rows))  # over an eighth more: a rebuild starts
    check(grown, matrix)  # answered from the old index plus the new rows meanwhile
    assert grown.pending is not None or grown.index.rows == len(matrix)
    assert grown.int8_index(wait=True).rows == len(matrix)
    check(grown, matrix)


def test_a_chat_whose_index_cannot_prove_the_answer_falls_back_to_the_exact_scan():
    rows, dim = knn_int8.MIN_ROWS, 16
    matrix = np.zeros((rows, dim), dtype=np.float32)
    matrix[:, 0] = 1.0
    matrix[5, :2] = [0.6, 0.8]  # the one row that differs
    cv = ChatVectors.from_rows(chat_vectors(matrix), dim)
    q = np.zeros(dim, dtype=np.float32)
    q[0] = 1.0
    keep = cv.mask(None, None, None, False)
    top = cv.top(q, keep, 3)
    assert cv.index is not None and knn_int8.top(cv.index, cv.matrix, q, keep, 3) is None
    assert [s for _, s in top] == [1.0, 1.0, 1.0] and 5 not in [r for r, _ in top]


def test_kind_mask_matches_isin():
    rng = np.random.default_rng(5)
    cv = ChatVectors.from_rows(chat_vectors(unit_rows(rng, 500, 8)), 8)
    for kinds in (["turn"], ["fact", "qa", "profile"], [], ["turn", "turn"]):
        assert np.array_equal(cv.mask(kinds, None, None, False), np.isin(cv.kinds, kinds))


def test_announced_queries_are_scanned_in_one_pass_with_the_same_answers():
    from retrieval.query_vectors import expected, unit, upcoming

    rng = np.random.default_rng(7)
    matrix = unit_rows(rng, 3000, 384, 20)
    raw = [q * 3.0 for q in queries(rng, matrix, 5)]  # announced as the router has them: not yet unit
    alone = [knn_int8.build(matrix).approx(unit(q)) for q in raw]  # a fresh index per query: one pass each
    index = knn_int8.build(matrix)
    with upcoming(raw[:4]):
        assert len(expected()) == 4
        first = index.approx(unit(raw[0]))
        assert len(index.recent) == 4  # the other three announced were scored in the same pass
        later = [index.approx(unit(q)) for q in raw[1:]]
    assert expected() == ()  # the hint ends with its block
    assert len(index.recent) == 5  # the unannounced fifth had a pass of its own
    for (a, bound), (b, bound_b) in zip([first, *later], alone, strict=True):
        assert np.array_equal(a, b) and bound == bound_b
