"""LoCoMo metrics: recall at k and over a token budget, the classifier's accuracy."""

from __future__ import annotations

from bench.locomo_metrics import aggregate, classifier_metrics, recall, score_question, with_budget


def _row(category: str, ranked: list[list[str]], evidence: list[str], tokens: int) -> dict:
    return score_question(ranked, evidence) | {
        "turn_recall_all@budget": recall(ranked, evidence, len(ranked)), "items": len(ranked),
        "tokens": tokens, "latency_ms": 1.0, "category": category}  # fmt: skip


def test_budget_recall_counts_every_packed_item():
    ranked = [[f"D1:{i}"] for i in range(1, 16)]  # 15 items packed; the evidence at ranks 3 and 14
    row = _row("1", ranked, ["D1:3", "D1:14"], 600)
    assert row["turn_recall_all@10"] == 0.0 and row["turn_recall_all@budget"] == 1.0
    other = _row("2", ranked[:4], ["D1:3"], 150)
    rows = [row, other]
    summary = {"overall": aggregate(rows), "by_category": {c: aggregate([r for r in rows if r["category"] == c])
                                                           for c in ("1", "2", "5")}}  # fmt: skip
    got = with_budget(summary, rows)
    assert got["overall"]["turn_recall_all@budget"] == 1.0 and got["overall"]["turn_recall_all@10"] == 0.5
    assert got["overall"]["budget_context_tokens_max"] == 600 and got["overall"]["budget_items_mean"] == 9.5
    assert got["by_category"]["1"]["turn_recall_all@budget"] == 1.0
    assert got["by_category"]["5"]["turn_recall_all@budget"] == 0.0  # no questions there


def test_classifier_accuracy_over_categories_1_2_4():
    rows = [{"category": "1", "predicted": "multi_hop"}, {"category": "2", "predicted": "factual_extraction"},
            {"category": "4", "predicted": "factual_extraction"}, {"category": "5", "predicted": "abstention"}]  # fmt: skip
    got = classifier_metrics(rows)
    assert got["n"] == 3 and abs(got["accuracy"] - 2 / 3) < 1e-3
    assert got["confusion"]["5"] == {"abstention": 1}
