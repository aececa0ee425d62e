"""The load step's shedding figures (bench/reliability_load.py): what counts as answered or refused in
time."""

from __future__ import annotations

from bench.reliability_load import mixed_request, shedding


def test_a_refusal_in_time_counts_a_late_answer_or_an_error_does_not():
    outcomes = [(200, 40.0), (202, 90.0), (429, 3.0), (429, 2500.0), (200, 2100.0), (500, 5.0), (0, 10_000.0),
                (200, 20.0)]  # fmt: skip
    out = shedding(outcomes)
    assert out["5xx"] == 1 and out["429"] == 2
    assert out["prompt_share"] == 4 / 8  # 200 @40, 202 @90, 429 @3, 200 @20
    assert out["p95_answered_ms"] == 2100.0  # answered: 20, 40, 90, 2100 (refusals and errors left out)
    assert shedding([]) == {"5xx": 0, "429": 0, "prompt_share": 0.0, "p95_answered_ms": None}


def test_retrievals_name_the_mode_asked_for_or_none():
    assert b'"mode": "bm25"' in mixed_request(1, lambda *a: {}, "bm25")[1]
    path, body = mixed_request(1, lambda *a: {}, None)
    assert path == "/v1/retrieve" and b"mode" not in body
    assert mixed_request(5, lambda chat, i: {"chat_id": chat}, None)[0] == "/v1/messages"
