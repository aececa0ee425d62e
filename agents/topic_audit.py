"""Error detection of topic segmentation: the pure checks behind close-time repair and the periodic audit
(design doc 001, section 6).

- :func:`check_topic` looks back at one closed topic: its cohesion (mean pairwise cosine of the members'
  vectors), and semantic breaks — a point where the windows of messages before and after are
  dissimilar, no reply or addressee link crosses it and the people change. Breaks yield a
  :class:`SplitProposal`; a topic of low cohesion is *suspicious* and gets a lower weight (soft repair: the
  topic stays, readers may trust it less).
- :func:`find_merges` finds near-duplicates among recently closed topics of one chat (centroid cosine,
  shared people, small time gap) -> :class:`MergeProposal` (over-splitting is the priority error, 6.2).
- :func:`audit_chat` runs both over a chat's recent topics -> :class:`AuditReport`.

The data (views, proposals, reports) is in :mod:`agents.topic_views` and the merge search in
:mod:`agents.topic_merge`; both are re-exported here, where readers import them from.

No I/O: topics come in as :class:`TopicView` (messages in order, optional vectors), decisions go out.
Missing vectors never fail a check: a topic without them has no cohesion and no semantic break.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from agents.config import AuditConfig
from agents.segment_signals import addressees
from agents.topic_merge import find_merges
from agents.topic_views import (
    AuditReport,
    BreakPoint,
    MergeProposal,
    SplitProposal,
    TopicCheck,
    TopicView,
    part_topic_id,
    unit_matrix,
)
from schemas import ChatMessage, TopicEvent, TopicEventKind, stable_id

__all__ = [
    "AuditReport",
    "BreakPoint",
    "MergeProposal",
    "SplitProposal",
    "TopicCheck",
    "TopicView",
    "audit_chat",
    "check_topic",
    "cohesion",
    "find_merges",
    "merge_event",
    "part_topic_id",
    "split_events",
]


# --- one topic -----------------------------------------------------------------------------------------


def cohesion(mat: np.ndarray, mask: np.ndarray) -> float | None:
    """Mean pairwise cosine of the members' unit vectors (None for fewer than two vectors). Unlike the
    cosine to the centroid it does not grow with a topic's size: ``(|sum v|^2 - n) / (n (n - 1))``."""
    n = int(mask.sum())
    if n < 2:
        return None
    total = mat[mask].sum(axis=0)
    return float((float(total @ total) - n) / (n * (n - 1)))


def _window_similarity(mat: np.ndarray, mask: np.ndarray, k: int, w: int) -> float | None:
    a, b = slice(max(0, k - w), k), slice(k, k + w)
    if not mask[a].any() or not mask[b].any():
        return None
    ca, cb = mat[a][mask[a]].mean(axis=0), mat[b][mask[b]].mean(axis=0)
    na, nb = float(np.linalg.norm(ca)), float(np.linalg.norm(cb))
    return float(ca @ cb / (na * nb)) if na > 0 and nb > 0 else None


def _links(msgs: list[ChatMessage]) -> list[tuple[int, int]]:
    """(earlier, later) positions joined by a reply, an addressee (``nick:``, @, mentions) or an answer to
    someone who addressed the sender since they last spoke."""
    names: dict[str, str] = {}
    for m in msgs:
        names.setdefault(m.sender.lower(), m.sender)
        names.setdefault((m.sender_name or m.sender).lower(), m.sender)
    where = {m.message_id: i for i, m in enumerate(msgs)}
    last_by: dict[str, int] = {}
    asked: dict[str, int] = {}  # sender -> latest position that addressed them
    links: list[tuple[int, int]] = []
    for j, m in enumerate(msgs):
        if m.reply_to in where and where[m.reply_to] < j:  # explicit replies only: inferred ones are guesses
            links.append((where[m.reply_to], j))
        to = addressees(m, names)
        for sid in to:
            if sid in last_by:
                links.append((last_by[sid], j))
        a = asked.get(m.sender)
        if a is not None and a > last_by.get(m.sender, -1):
            links.append((a, j))
        last_by[m.sender] = j
        for sid in to:
            asked[sid] = j
    return links


def _candidates(msgs: list[ChatMessage], mat, mask, lo: int, hi: int, cfg: AuditConfig) -> list[BreakPoint]:
    """Valid cuts inside ``[lo, hi)`` (positions in the primary list), best (least similar) first."""
    links = _links(msgs[lo:hi])
    covered = np.zeros(hi - lo + 1, dtype=np.int32)  # covered[k]: a link from before k to k or later
    for i, j in links:
        covered[i + 1] += 1
        covered[j + 1] -= 1
    covered = np.cumsum(covered)
    out = []
    w = max(1, cfg.window)
    for k in range(lo + cfg.min_part, hi - cfg.min_part + 1):
        if covered[k - lo] > 0:
            continue
        sim = _window_similarity(mat[lo:hi], mask[lo:hi], k - lo, w)
        if sim is None or sim >= cfg.break_similarity:
            continue
        before = {m.sender for m in msgs[max(lo, k - w) : k]}
        after = {m.sender for m in msgs[k : min(hi, k + w)]}
        overlap = len(before & after) / len(before | after)
        if overlap > cfg.participant_overlap_max:
            continue
        out.append(BreakPoint(index=k, message_id=msgs[k].message_id, similarity=round(sim, 4),
                              sender_overlap=round(overlap, 3)))  # fmt: skip
    return sorted(out, key=lambda b: (b.similarity, b.index))


def _cuts(msgs, mat, mask, cfg: AuditConfig) -> list[BreakPoint]:
    """Recursive binary splitting at the least similar valid cut, at most ``max_parts`` parts."""
    spans, cuts = [(0, len(msgs))], []
    while len(spans) < max(1, cfg.max_parts):
        best = None
        for lo, hi in spans:
            found = _candidates(msgs, mat, mask, lo, hi, cfg)
            if found and (best is None or found[0].similarity < best[0].similarity):
                best = (found[0], lo, hi)
        if best is None:
            break
        bp, lo, hi = best
        spans.remove((lo, hi))
        spans += [(lo, bp.index), (bp.index, hi)]
        cuts.append(bp)
    return sorted(cuts, key=lambda b: b.index)


def check_topic(view: TopicView, cfg: AuditConfig) -> TopicCheck:
    """Cohesion, suspicion (soft repair) and a split proposal at semantic breaks for one closed topic."""
    check = TopicCheck(topic_id=view.topic_id, messages=len(view.messages))
    primary = [i for i, m in enumerate(view.messages) if m.message_id not in view.weights]
    if not primary:
        check.notes.append("empty topic")
        return check
    msgs = [view.messages[i] for i in primary]
    mat, mask = unit_matrix(view, primary)
    if not mask.any():
        check.notes.append("no vectors: no cohesion or semantic check")
    check.cohesion = None if (c := cohesion(mat, mask)) is None else round(c, 4)
    sims = [s for k in range(1, len(msgs)) if (s := _window_similarity(mat, mask, k, max(1, cfg.window)))]
    check.min_window_similarity = round(min(sims), 4) if sims else None
    if (check.cohesion is not None and len(msgs) >= cfg.suspicious_min_messages
            and check.cohesion < cfg.suspicious_cohesion):  # fmt: skip
        check.suspicious, check.weight = True, cfg.suspicious_weight
        check.notes.append(f"low cohesion {check.cohesion:.2f} < {cfg.suspicious_cohesion:.2f}")
    if len(msgs) < 2 * cfg.min_part or not mask.any():
        return check
    cuts = _cuts(msgs, mat, mask, cfg)
    if cuts:
        check.split = _proposal(view, primary, cuts)
    return check


def _proposal(view: TopicView, primary: list[int], cuts: list[BreakPoint]) -> SplitProposal:
    """Cut the full message list (soft members go with the part they sit in) at the primary positions."""
    bounds = [0, *(primary[c.index] for c in cuts), len(view.messages)]
    pairs = list(zip(bounds, bounds[1:], strict=False))
    parts = [[m.message_id for m in view.messages[a:b]] for a, b in pairs]
    full = [c.model_copy(update={"index": primary[c.index]}) for c in cuts]
    why = "; ".join(f"before {c.message_id}: cosine {c.similarity:.2f}, no link, new people" for c in full)
    return SplitProposal(
        topic_id=view.topic_id,
        parts=parts,
        part_topic_ids=[part_topic_id(view.topic_id, i) for i in range(len(parts))],
        participants=[list(dict.fromkeys(m.sender for m in view.messages[a:b])) for a, b in pairs],
        breaks=full,
        reason=f"semantic break ({why})",
    )


# --- a chat -----------------------------------------------------------------------------------------------


def audit_chat(chat_id: str, views: list[TopicView], cfg: AuditConfig) -> AuditReport:
    """Per-topic checks, singleton rate, suspicious topics, split and merge proposals for one chat."""
    checks = [check_topic(v, cfg) for v in views if v.chat_id == chat_id]
    sized = [c for c in checks if c.messages > 0]
    cohesive = [c.cohesion for c in sized if c.cohesion is not None]
    splits = [c.split for c in checks if c.split is not None]
    split_ids = {s.topic_id for s in splits}
    merges = find_merges([v for v in views if v.chat_id == chat_id and v.topic_id not in split_ids], cfg)
    return AuditReport(
        chat_id=chat_id,
        topics=checks,
        singleton_rate=round(sum(c.messages == 1 for c in sized) / len(sized), 4) if sized else 0.0,
        mean_cohesion=round(float(np.mean(cohesive)), 4) if cohesive else None,
        suspicious=[c.topic_id for c in checks if c.suspicious],
        splits=splits,
        merges=merges,
    )


# --- repair events (new versioned events; nothing is rewritten) -----------------------------------------


def split_events(
    closed: TopicEvent, proposal: SplitProposal, prefix: str = "close-check"
) -> list[TopicEvent]:
    """One SPLIT event per part, after the original ``closed`` event (which stays in the log)."""
    out = []
    for pid, ids, people in zip(proposal.part_topic_ids, proposal.parts, proposal.participants, strict=True):
        out.append(TopicEvent(
            event_id=stable_id(closed.chat_id, closed.event_id, "split", pid, prefix="te-"),
            kind=TopicEventKind.SPLIT,
            chat_id=closed.chat_id,
            topic_id=pid,
            message_ids=list(ids),
            weights={m: w for m, w in closed.weights.items() if m in set(ids)},
            related_topic_ids=[closed.topic_id],
            participants=list(people),
            score=min((b.similarity for b in proposal.breaks), default=None),
            reason=f"{prefix}: {proposal.reason}",
            segmentation_version=closed.segmentation_version,
            at=closed.at,
        ))  # fmt: skip
    return out


def merge_event(
    chat_id: str, proposal: MergeProposal, at: datetime, version: int, prefix: str = "close-check"
) -> TopicEvent:
    """The MERGED event of a repair: ``topic_id`` the kept topic, ``related_topic_ids`` those it absorbs."""
    return TopicEvent(
        event_id=stable_id(
            chat_id, proposal.keep_topic_id, *proposal.merged_topic_ids, "merged", prefix="te-"
        ),
        kind=TopicEventKind.MERGED,
        chat_id=chat_id,
        topic_id=proposal.keep_topic_id,
        message_ids=list(proposal.message_ids),
        related_topic_ids=list(proposal.merged_topic_ids),
        participants=list(proposal.participants),
        score=proposal.similarity,
        reason=f"{prefix}: {proposal.reason}",
        segmentation_version=version,
        at=at,
    )
