"""The reliability bench's deletion steps on a real `memstream serve`: a deletion killed midway leaves no
byte of the user's after the restart (nothing asked again), and every delete path (embedded, and Kafka after
a Faust worker over Tansu) leaves none."""

from __future__ import annotations

import random

from bench import reliability_delete as D


def test_serve_killed_during_a_deletion_leaves_nothing_after_its_restart(tmp_path):
    res = D.kill_during_delete(tmp_path / "kill", 2, random.Random(5), max_after=0.05)
    assert res["kills"] == 2 and res["killed_midway"] >= 1  # the kills land inside the deletion
    assert res["remnants"] == 0, repr(res["runs"])
    assert all(r["pending_after"] == 0 and not r["files_with_canary"] for r in res["runs"])


def test_every_delete_path_leaves_no_byte_of_what_it_deleted(tmp_path):
    res = D.byte_scan(tmp_path / "scan")
    kafka = [] if "kafka_skipped" in res else list(D.KAFKA_PATHS)  # skipped without Redis
    assert all(res[p]["ok"] for p in ("cli_user", "cli_chat", "api_user", "api_chat", *kafka)), res
    assert all(res[p]["files_with_canary_before"] for p in kafka), res  # the worker had stored them
    assert res["remnants"] == 0, res
