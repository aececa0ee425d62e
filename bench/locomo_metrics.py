"""Pure LoCoMo retrieval metrics: evidence parsing, turn/session recall, aggregation."""

from __future__ import annotations

import re
from statistics import mean

_DIA = re.compile(r"D(\d+):(\d+)")
FIG_KEYS = (
    "turn_recall_all@5",
    "turn_recall_all@10",
    "turn_recall_any@10",
    "session_recall_all@10",
    "context_tokens_mean",
    "latency_ms_p50",
    "latency_ms_p95",
)


def parse_evidence(evidence) -> list[str]:
    """Normalise LoCoMo evidence ('D1:3', 'D8:6; D9:17', ...) to canonical dia ids."""
    items = evidence if isinstance(evidence, list) else [evidence]
    out: list[str] = []
    for item in items:
        for s, t in _DIA.findall(str(item)):
            dia = f"D{int(s)}:{int(t)}"
            if dia not in out:
                out.append(dia)
    return out


def session_of(dia_id: str) -> str | None:
    m = _DIA.search(dia_id)
    return m[1] if m else None


def recall(
    ranked_sources: list[list[str]], evidence: list[str], k: int, *, session: bool = False, mode: str = "all"
) -> float:
    """1.0 if all (or any) evidence turns/sessions are covered by the sources of the top-``k`` items."""
    if not evidence:
        return 0.0
    conv = session_of if session else (lambda x: x)
    covered = {conv(s) for srcs in ranked_sources[:k] for s in srcs}
    wanted = {conv(e) for e in evidence}
    hits = [w in covered for w in wanted]
    return float(all(hits) if mode == "all" else any(hits))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    idx = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
    return s[idx]


def aggregate(rows: list[dict]) -> dict:
    """rows: per-question dicts with the recall keys, 'tokens' and 'latency_ms'."""
    if not rows:
        return {k: 0.0 for k in FIG_KEYS} | {"n": 0}
    fig = {k: round(mean(r[k] for r in rows), 4) for k in FIG_KEYS[:4]}
    fig["context_tokens_mean"] = round(mean(r["tokens"] for r in rows), 1)
    lat = [r["latency_ms"] for r in rows]
    fig["latency_ms_p50"] = round(percentile(lat, 0.5), 3)
    fig["latency_ms_p95"] = round(percentile(lat, 0.95), 3)
    fig["n"] = len(rows)
    return fig


def score_question(ranked_sources: list[list[str]], evidence: list[str]) -> dict:
    return {
        "turn_recall_all@5": recall(ranked_sources, evidence, 5),
        "turn_recall_all@10": recall(ranked_sources, evidence, 10),
        "turn_recall_any@10": recall(ranked_sources, evidence, 10, mode="any"),
        "session_recall_all@10": recall(ranked_sources, evidence, 10, session=True),
    }


def with_budget(summary: dict, rows: list[dict]) -> dict:
    """``summary`` (overall + by category at k=10) with the figures of a run packing items up to a token budget:
    turn recall_all over every packed item, items and context tokens per question."""

    def figures(rs: list[dict]) -> dict:
        if not rs:
            return {"turn_recall_all@budget": 0.0}
        return {"turn_recall_all@budget": round(mean(r["turn_recall_all@budget"] for r in rs), 4),
                "budget_items_mean": round(mean(r["items"] for r in rs), 1),
                "budget_context_tokens_mean": round(mean(r["tokens"] for r in rs), 1),
                "budget_context_tokens_max": max(r["tokens"] for r in rs)}  # fmt: skip

    overall = summary["overall"] | figures([r for r in rows if r["category"] in ("1", "2", "3", "4")])
    by_cat = {c: v | figures([r for r in rows if r["category"] == c]) for c, v in summary["by_category"].items()}
    return summary | {"overall": overall, "by_category": by_cat}


# ---- routed retrieval: classifier and abstention metrics ----------------------------------------------

# LoCoMo category -> the query type a perfect classifier would give (3 and 5 are reported separately)
CATEGORY_TYPE = {"1": "multi_hop", "2": "temporal_reasoning", "4": "factual_extraction"}


def classifier_metrics(rows: list[dict]) -> dict:
    """rows: ``category`` and ``predicted`` type. Accuracy over categories 1, 2, 4; confusion over all."""
    confusion: dict[str, dict[str, int]] = {}
    for r in rows:
        cell = confusion.setdefault(r["category"], {})
        cell[r["predicted"]] = cell.get(r["predicted"], 0) + 1
    scored = [r for r in rows if r["category"] in CATEGORY_TYPE]
    correct = sum(r["predicted"] == CATEGORY_TYPE[r["category"]] for r in scored)
    per_cat = {c: round(sum(r["predicted"] == t for r in scored if r["category"] == c)
                        / max(1, sum(r["category"] == c for r in scored)), 4) for c, t in CATEGORY_TYPE.items()}  # fmt: skip
    return {"accuracy": round(correct / max(1, len(scored)), 4), "n": len(scored),
            "accuracy_by_category": per_cat, "confusion": dict(sorted(confusion.items()))}  # fmt: skip


def prf(scores: list[float], positive: list[bool], threshold: float) -> dict:
    """Precision/recall/F1 of ``score > threshold`` as the abstain decision (positives: category 5)."""
    tp = sum(s > threshold and p for s, p in zip(scores, positive, strict=True))
    fp = sum(s > threshold and not p for s, p in zip(scores, positive, strict=True))
    fn = sum(s <= threshold and p for s, p in zip(scores, positive, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4), "tp": tp, "fp": fp,
            "fn": fn}  # fmt: skip


def pr_curve(scores: list[float], positive: list[bool]) -> list[dict]:
    """One point per distinct score threshold (abstain when score > threshold), lowest threshold first."""
    cuts = sorted(set(scores))
    return [{"threshold": t, **prf(scores, positive, t)} for t in [cuts[0] - 1e-9, *cuts]] if cuts else []


def choose_threshold(scores: list[float], positive: list[bool]) -> float:
    """The F1-best threshold (ties: the higher, i.e. more conservative, threshold)."""
    curve = pr_curve(scores, positive)
    return max(curve, key=lambda p: (p["f1"], p["threshold"]))["threshold"] if curve else 0.0
