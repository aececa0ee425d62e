"""Pure LoCoMo retrieval metrics: evidence parsing, turn/session recall, aggregation."""

from __future__ import annotations

import re
from statistics import mean

_DIA = re.compile(r"D(\d+):(\d+)")
FIG_KEYS = ("turn_recall_all@5", "turn_recall_all@10", "turn_recall_any@10", "session_recall_all@10",
            "context_tokens_mean", "latency_ms_p50", "latency_ms_p95")


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


def recall(ranked_sources: list[list[str]], evidence: list[str], k: int, *, session: bool = False,
           mode: str = "all") -> float:
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
