"""Segmentation versions: what a batch re-segmentation changed, and the per-chat ledger entry recording it.

Version 1 of every chat is the streaming segmentation. A re-segmentation writes version ``n + 1`` (numbers are
never reused, so topic ids derived from them never collide); a rollback marks a version ``rolled_back`` and
brings back the topics it superseded. Nothing is rewritten in place: the ledger keeps every version.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from schemas.base import Contract

ChangeKind = Literal["unchanged", "modified", "split", "merge", "reshaped", "new", "dropped"]
VersionKind = Literal["stream", "resegment", "audit"]  # audit: `memstream audit --apply` repairs
VersionStatus = Literal["active", "rolled_back", "discarded"]


class TopicChange(Contract):
    """One connected group of old and new topics (linked by messages they share).

    ``unchanged``: one old, one new, same members; ``modified``: one to one, members differ; ``split``: one
    old to several new; ``merge``: several old to one new; ``reshaped``: several to several; ``new``: a new
    topic made only of messages that had no topic; ``dropped``: an old topic none of whose messages remain.
    """

    kind: ChangeKind
    old: list[str] = Field(default_factory=list)
    new: list[str] = Field(default_factory=list)
    messages: int = 0
    moved: int = 0  # messages of this group not covered by its best one-to-one pairing


class SegmentationDiff(Contract):
    """Before/after comparison of one chat's segmentation over the same messages.

    ``one_to_one`` is the percentage of messages covered by the best one-to-one pairing of old and new
    topics; ``vi`` is ``100 * (1 - VI / log2 n)`` (100 = identical), both over the messages' main topic
    (the earliest-started topic listing them).
    """

    messages: int = 0
    topics_before: int = 0
    topics_after: int = 0
    counts: dict[str, int] = Field(default_factory=dict)  # ChangeKind -> number of groups
    moved_messages: int = 0  # messages whose main topic changed under the best one-to-one pairing
    one_to_one: float = 100.0
    vi: float = 100.0
    changes: list[TopicChange] = Field(default_factory=list)

    def count(self, kind: ChangeKind) -> int:
        return self.counts.get(kind, 0)

    @property
    def changed(self) -> bool:
        return any(c.kind != "unchanged" for c in self.changes)


class SegmentationVersion(Contract):
    """One chat's segmentation version, as kept in the versions ledger.

    ``superseded_topic_ids`` are the topics this version replaced, ``new_topic_ids`` the topics it created
    (unchanged topics keep their id and appear in neither). ``memories_created`` / ``memories_invalidated``
    are the memory records its application added / closed, so a rollback can undo exactly that (facts are
    never lost: a rollback restores what the version invalidated, as new record versions).
    """

    chat_id: str
    version: int
    kind: VersionKind = "resegment"
    status: VersionStatus = "active"
    since: datetime | None = None
    until: datetime | None = None
    reason: str = ""
    settings: dict[str, object] = Field(default_factory=dict)  # the segmenter settings it ran with
    superseded_topic_ids: list[str] = Field(default_factory=list)
    new_topic_ids: list[str] = Field(default_factory=list)
    diff: SegmentationDiff | None = None
    memories_created: list[str] = Field(default_factory=list)
    memories_invalidated: list[str] = Field(default_factory=list)
    created_at: datetime
    rolled_back_at: datetime | None = None
    rollback_reason: str = ""
