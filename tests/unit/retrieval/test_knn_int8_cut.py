"""The int8 scan's candidate cut (a threshold from a sample, not a partition) proves the exact top n all the
same: ids, order and scores of the exact scan, with and without filters."""

from __future__ import annotations

import numpy as np
import pytest

from backends.sqlite import knn_int8


def unit_rows(rng: np.random.Generator, n: int, dim: int, clusters: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    if clusters:
        x += 3 * rng.standard_normal((clusters, dim)).astype(np.float32)[rng.integers(0, clusters, n)]
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("r", [512, 2048])
def test_the_cut_keeps_the_r_best_and_names_the_best_left_out(r):
    rng = np.random.default_rng(r)
    approx = rng.standard_normal(60_000).astype(np.float32)
    masked = np.where(rng.random(60_000) < 0.5, approx, -np.inf).astype(np.float32)
    sparse = np.where(rng.random(60_000) < 0.01, approx, -np.inf).astype(np.float32)  # the sample sees -inf
    for a in (approx, masked, sparse):
        if r >= np.isfinite(a).sum():  # never asked: ``top`` scans exactly when few rows pass its filters
            continue
        cand, left = knn_int8._candidates(a, r)
        best_r = np.argsort(-a, kind="stable")[:r]
        assert set(best_r.tolist()) <= set(cand.tolist()) and cand.size <= 4 * r
        rest = np.setdiff1d(np.arange(a.size), cand)
        assert left == a[rest].max() and left.dtype == a.dtype
        assert a[cand].min() >= left


@pytest.mark.parametrize("clusters", [0, 30])
def test_top_over_a_large_index_is_the_exact_scan(clusters):
    rng = np.random.default_rng(clusters)
    matrix = unit_rows(rng, 40_000, 48, clusters)
    index = knn_int8.build(matrix[:38_000])  # the last rows came after the index: scanned exactly
    masks = {"all": np.ones(40_000, bool), "half": rng.random(40_000) < 0.5, "tenth": rng.random(40_000) < 0.1}
    proved = 0
    for i in range(12):
        q = rng.standard_normal(48).astype(np.float32)
        if i % 2:
            q = matrix[rng.integers(40_000)] + 0.3 * q / np.linalg.norm(q)
        q = (q / np.linalg.norm(q)).astype(np.float32)
        sims = np.einsum("ij,j->i", matrix, q)
        for keep in masks.values():
            for n in (10, 40):
                got = knn_int8.top(index, matrix, q, keep, n)
                if got is None:  # the bound could not prove it: the caller scans exactly
                    continue
                proved += 1
                rows = np.flatnonzero(keep)
                order = rows[np.lexsort((rows, -sims[rows]))][:n]
                assert got[0].tolist() == order.tolist()
                assert got[1].tolist() == sims[order].tolist()
    assert proved >= 24  # the cut is exercised, not only the exact fallback
