"""The load step on a server of its own per embedder (bench.reliability.load_steps): seeded, loaded, stopped,
its figures tagged with the embedder and the retrieval mode."""

from __future__ import annotations

from bench import reliability as R


def test_a_load_step_on_its_own_server_reports_the_shedding_figures(tmp_path):
    (step,) = R.load_steps(tmp_path / "d", [20], 1.0, 1, "none")
    assert step["embedder"] == "none" and step["mode"] == "bm25" and step["requests"] == 20
    assert step["5xx"] == 0 and step["errors"] == 0, step["error_kinds"]
    assert 0 < step["prompt_share"] <= 1 and step["p95_answered_ms"] is not None
