"""The sensitive-information detector on the generated set (bench/sensitive_gen.py), two seeds."""

from __future__ import annotations

import pytest

from bench.sensitive_gen import generate, score
from streams.sensitive import KINDS


@pytest.mark.parametrize("seed", [7, 2024])
def test_every_kind_is_found_and_look_alikes_are_not(seed):
    result = score(generate(n_per_kind=100, seed=seed))
    assert set(result) == set(KINDS)
    for kind, s in result.items():
        assert s["n"] == 100 and s["recall"] >= 0.95 and s["precision"] >= 0.95, (kind, s)
