"""Near-duplicates among a chat's closed topics (over-splitting, the priority error of design doc 001,
6.2): centroid cosine, shared people and a small time gap -> :class:`MergeProposal`. Pure."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from agents.config import AuditConfig
from agents.topic_views import MergeProposal, TopicView, unit_matrix

__all__ = ["find_merges"]


def _span(view: TopicView) -> tuple[datetime, datetime]:
    ts = [m.ts for m in view.messages]
    return min(ts), max(ts)


def _centroid(view: TopicView) -> np.ndarray | None:
    primary = [i for i, m in enumerate(view.messages) if m.message_id not in view.weights]
    mat, mask = unit_matrix(view, primary)
    if not mask.any():
        return None
    c = mat[mask].mean(axis=0)
    n = float(np.linalg.norm(c))
    return c / n if n > 0 else None


def find_merges(
    views: list[TopicView], cfg: AuditConfig, *, only: set[str] | None = None
) -> list[MergeProposal]:
    """Groups of near-duplicate topics (centroid cosine >= ``merge_similarity``, at least
    ``merge_min_shared`` shared senders, the later starting within ``merge_gap_s`` of the earlier's end).
    With ``only``, just the groups that contain one of those topic ids."""
    items = []
    for v in views:
        if len(v.messages) < max(1, cfg.merge_min_messages) or v.state not in ("closed", "active"):
            continue
        c = _centroid(v)
        if c is not None:
            items.append((v, c, *_span(v), {m.sender for m in v.messages}))
    items.sort(key=lambda x: (x[2], x[0].topic_id))
    parent = list(range(len(items)))
    best: dict[int, tuple[float, set[str], float]] = {}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a in range(len(items)):
        va, ca, _, end_a, people_a = items[a]
        for b in range(a + 1, len(items)):
            vb, cb, start_b, _, people_b = items[b]
            gap = (start_b - end_a).total_seconds()
            if gap > cfg.merge_gap_s or ca.shape != cb.shape:
                continue
            sim, shared = float(ca @ cb), people_a & people_b
            if sim < cfg.merge_similarity or len(shared) < cfg.merge_min_shared:
                continue
            if only is not None and not ({va.topic_id, vb.topic_id} & only):
                continue
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
                root = min(ra, rb)
                prev = best.get(root, (1.0, set(), 0.0))
                best[root] = (min(prev[0], sim), prev[1] | shared, max(prev[2], gap))
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(find(i), []).append(i)
    out = []
    for root, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        sim, shared, gap = best.get(root, (0.0, set(), 0.0))
        views_ = [items[i][0] for i in members]
        ids = [m.message_id for v in views_ for m in v.messages]
        order = {m.message_id: m.ts for v in views_ for m in v.messages}
        out.append(MergeProposal(
            keep_topic_id=views_[0].topic_id,
            merged_topic_ids=[v.topic_id for v in views_[1:]],
            message_ids=sorted(dict.fromkeys(ids), key=lambda i: order[i]),
            participants=list(dict.fromkeys(m.sender for v in views_ for m in v.messages)),
            similarity=round(sim, 4),
            shared_participants=sorted(shared),
            gap_s=round(gap, 1),
            reason=f"near-duplicate (cosine {sim:.2f}, shared {', '.join(sorted(shared))}, gap {gap:.0f}s)",
        ))  # fmt: skip
    return out
