"""Pure score fusion: reciprocal rank fusion and maximal marginal relevance."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def rrf(
    rankings: list[list[str]], k: int = 60, weights: list[float] | None = None
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: ``score(d) = sum_i weights[i] / (k + rank_i(d))`` with ranks from 1.

    Each ranking is a best-first list of ids; an id missing from a ranking contributes nothing there, and a
    repeated id within one ranking counts at its first (best) position only. Ties are broken by first
    appearance (ranking order, then position), so the result is deterministic.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"got {len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[str] = set()
        for rank, doc_id in enumerate(ranking, start=1):
            if doc_id in seen:
                continue
            seen.add(doc_id)
            scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
    order = {doc_id: i for i, doc_id in enumerate(scores)}  # dicts keep first-insertion order
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def mmr(
    query: np.ndarray,
    candidates: np.ndarray,
    ids: Sequence[str],
    *,
    k: int = 10,
    lambda_: float = 0.5,
) -> list[tuple[str, float]]:
    """Maximal marginal relevance over L2-normalised vectors.

    Greedily picks the candidate maximising ``lambda_ * cos(q, d) - (1 - lambda_) * max cos(d, picked)``.
    Returns ``(id, mmr_score)`` in pick order; ties go to the earlier candidate.
    """
    if candidates.shape[0] != len(ids):
        raise ValueError("candidates and ids differ in length")
    n = len(ids)
    if n == 0 or k <= 0:
        return []
    relevance = candidates @ query
    pairwise = candidates @ candidates.T
    out: list[tuple[str, float]] = []
    remaining = np.ones(n, dtype=bool)
    max_sim = np.full(n, -np.inf)
    for _ in range(min(k, n)):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        score = lambda_ * relevance - (1.0 - lambda_) * redundancy
        score = np.where(remaining, score, -np.inf)
        best = int(np.argmax(score))
        out.append((ids[best], float(score[best])))
        remaining[best] = False
        max_sim = np.maximum(max_sim, pairwise[:, best])
    return out
