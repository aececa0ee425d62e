"""Topic-segment events emitted by the segmenter, and the topic state they describe."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from schemas.base import Contract


class TopicEventKind(StrEnum):
    OPENED = "opened"
    EXTENDED = "extended"
    CLOSED = "closed"
    MERGED = "merged"
    SPLIT = "split"


class TopicEvent(Contract):
    """A change to one chat's topic segmentation.

    ``message_ids`` are the messages this event concerns (for ``closed``: the whole topic, in order);
    ``weights`` optionally gives a soft membership weight per message id; ``related_topic_ids`` names the
    topics merged into this one or split from it.

    Batch re-segmentation (``agents/resegment.py``) emits, for each topic of a new version, a ``closed``
    event with ``segmentation_version`` > 1, ``reason`` ``resegment:v<N>`` and ``related_topic_ids`` = the
    topics it supersedes; a rollback of version N emits ``closed`` events for the restored topics with
    ``reason`` ``rollback:v<N>`` and ``related_topic_ids`` = the rolled-back topics they replace again.
    """

    event_id: str
    kind: TopicEventKind
    chat_id: str
    topic_id: str
    message_ids: list[str] = Field(default_factory=list)
    weights: dict[str, float] = Field(default_factory=dict)
    related_topic_ids: list[str] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    score: float | None = None
    reason: str = ""
    segmentation_version: int = 1
    # opened/extended: the message this one most likely answers (explicit reply_to, else the reply linker's
    # best candidate in the topic; the message itself when it starts a topic)
    parent_message_id: str | None = None
    at: datetime  # event time (the time of the message that caused it), never wall time


class TopicSummary(Contract):
    """A closed (episodic) or active (working) topic as readers see it.

    ``state``: ``active``, ``closed``, ``merged`` (absorbed by another topic), ``superseded`` (replaced by a
    re-segmentation) or ``rolled_back`` (made by a version that was rolled back). The current view of a chat
    is its ``active`` and ``closed`` topics; the others are kept, never deleted.
    """

    chat_id: str
    topic_id: str
    state: str
    message_ids: list[str]
    participants: list[str]
    started_at: datetime
    last_active_at: datetime
    title: str | None = None
    segmentation_version: int = 1  # the segmentation version that made this topic (1 = streaming)
    # close-time check (agents/topic_audit.py): state ``split`` = replaced by its parts ``<id>.p<i>``;
    # cohesion = mean pairwise cosine of the members; weight < 1 = suspicious (soft repair, design doc 6.4)
    cohesion: float | None = None
    weight: float = 1.0
