"""Segmentation metrics on tiny cases computed by hand."""

from __future__ import annotations

import math

import pytest

from agents import seg_metrics as M


def test_parse_links_self_links_and_multiple_parents():
    lines = ["1000 1000 -", "998 1001 -", "1001 1002 -", "1000 1002 -", "1003", ""]
    assert M.parse_links(lines) == {(1000, 1000), (1001, 998), (1002, 1001), (1002, 1000), (1003, 1003)}


def test_clusters_from_links_drop_context_lines_but_keep_their_connections():
    links = {(1000, 990), (1001, 990), (1002, 1002), (1003, 1002), (1004, 1004)}
    assert M.clusters_from_links(links) == [{1000, 1001}, {1002, 1003}, {1004}]
    assert M.clusters_from_links(links, cutoff=0) == [{990, 1000, 1001}, {1002, 1003}, {1004}]


def test_vi_identical_is_100_and_one_cluster_vs_two_is_50():
    gold = {"f": [{1, 2}, {3, 4}]}
    assert M.variation_of_information(gold, gold) == pytest.approx(100.0)
    # H(gold | auto) = 1 bit, H(auto | gold) = 0, log2(4) = 2  ->  100 * (1 - 1/2)
    assert M.variation_of_information(gold, {"f": [{1, 2, 3, 4}]}) == pytest.approx(50.0)


def test_vi_is_pooled_over_files():
    gold = {"a": [{1, 2}], "b": [{1}, {2}]}
    auto = {"a": [{1}, {2}], "b": [{1}, {2}]}
    # n = 4; file a: H(auto|gold) = 0.5 bit (pooled weights), H(gold|auto) = 0  ->  1 - 0.5/2
    assert M.variation_of_information(gold, auto) == pytest.approx(75.0)


def test_vi_rejects_different_line_sets():
    with pytest.raises(ValueError):
        M.variation_of_information({"f": [{1, 2}]}, {"f": [{1}]})


def test_one_to_one_uses_the_best_pairing():
    gold = {"f": [{1, 2, 3}, {4}]}
    auto = {"f": [{1, 2}, {3, 4}]}
    # {1,2}<->{1,2,3} covers 2, {3,4}<->{4} covers 1: 3 of 4
    assert M.one_to_one(gold, auto) == pytest.approx(75.0)
    assert M.one_to_one(gold, gold) == pytest.approx(100.0)


def test_exact_match_ignores_single_message_clusters():
    gold = {"f": [{1, 2}, {3, 4}, {5}]}
    auto = {"f": [{1, 2}, {3}, {4}, {5}]}
    p, r, f = M.exact_match(gold, auto)
    assert (p, r) == (100.0, 50.0) and f == pytest.approx(200 / 3)
    assert M.exact_match(gold, {"f": [{1}, {2}, {3}, {4}, {5}]}) == (0.0, 0.0, 0.0)


def test_link_prf_counts_self_links_and_every_gold_parent():
    gold = {"f": {(1, 1), (2, 1), (3, 2), (3, 1)}}
    auto = {"f": {(1, 1), (2, 2), (3, 1)}}
    p, r, f = M.link_prf(gold, auto)
    assert p == pytest.approx(200 / 3) and r == pytest.approx(50.0)
    assert f == pytest.approx(2 * p * r / (p + r))


def test_shift_prf():
    p, r, f = M.shift_prf([True, False, True, False], [True, True, False, False])
    assert (p, r, f) == (50.0, 50.0, 50.0)
    assert M.shift_prf([False, False], [False, False]) == (0.0, 0.0, 0.0)
    assert math.isclose(M.shift_prf([True, False, False], [True, True, True])[2], 50.0)
