"""What the topic checks (:mod:`agents.topic_audit`) take and give: a topic as they see it
(:class:`TopicView`), break points, split and merge proposals, per-topic checks and a chat's report.
Pure data and one helper (the unit vectors of a view's messages)."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from agents.segment_signals import as_unit
from schemas import ChatMessage


class TopicView(BaseModel):
    """One topic as the checks see it: messages in topic order, one optional vector per message."""

    chat_id: str
    topic_id: str
    messages: list[ChatMessage]
    vectors: list[list[float] | None] | None = None
    weights: dict[str, float] = Field(default_factory=dict)  # soft members (not used as evidence)
    state: str = "closed"


class BreakPoint(BaseModel):
    """A cut before ``message_id`` (position ``index`` in the topic's message list)."""

    index: int
    message_id: str
    similarity: float  # cosine of the centroids of the windows before and after
    sender_overlap: float  # Jaccard of the senders of the two windows


class SplitProposal(BaseModel):
    topic_id: str
    parts: list[list[str]]  # message ids of each part, in topic order (soft members included)
    part_topic_ids: list[str]
    participants: list[list[str]]  # senders of each part, in order of first message
    breaks: list[BreakPoint]
    reason: str


class TopicCheck(BaseModel):
    topic_id: str
    messages: int
    cohesion: float | None = None
    min_window_similarity: float | None = None
    suspicious: bool = False
    weight: float = 1.0
    split: SplitProposal | None = None
    notes: list[str] = Field(default_factory=list)


class MergeProposal(BaseModel):
    keep_topic_id: str  # the earliest topic of the group
    merged_topic_ids: list[str]
    message_ids: list[str]
    participants: list[str]
    similarity: float
    shared_participants: list[str]
    gap_s: float
    reason: str


class AuditReport(BaseModel):
    chat_id: str
    topics: list[TopicCheck] = Field(default_factory=list)
    singleton_rate: float = 0.0
    mean_cohesion: float | None = None
    suspicious: list[str] = Field(default_factory=list)
    splits: list[SplitProposal] = Field(default_factory=list)
    merges: list[MergeProposal] = Field(default_factory=list)


def part_topic_id(topic_id: str, index: int) -> str:
    """The id of part ``index`` of a split topic: derived from the original, so a repeated check agrees."""
    return f"{topic_id}.p{index}"


def unit_matrix(view: TopicView, keep: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors of the messages at ``keep`` that have one, and a mask of which have one."""
    vecs = view.vectors or []
    units = [as_unit(vecs[i]) if i < len(vecs) else None for i in keep]
    dims = {u.shape[0] for u in units if u is not None}
    if len(dims) != 1:  # none, or mixed dimensions (a model change): no semantic evidence
        return np.zeros((len(keep), 0), dtype=np.float32), np.zeros(len(keep), dtype=bool)
    dim = dims.pop()
    mat = np.zeros((len(keep), dim), dtype=np.float32)
    mask = np.zeros(len(keep), dtype=bool)
    for j, u in enumerate(units):
        if u is not None:
            mat[j], mask[j] = u, True
    return mat, mask
