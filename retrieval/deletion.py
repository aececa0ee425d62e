"""What a deletion removes from a memory store, decided the same way for every backend (pure).

A user's deletion removes their messages and everything derived from them: every memory record version
whose ``source_message_ids`` meet the deleted messages, or which they spoke, and every summary and title
of a topic that held one of their messages (they quote them, in their text or their entities). A record that only a deleted version had
superseded is live again (its replacement never happened). Topics keep their other members: the deleted
ids leave ``message_ids`` and the sender leaves ``participants``; a topic left empty goes, and a closed one
that keeps others' messages is distilled again (:func:`to_redistil`, decided before anything is removed: the
trimmed topic no longer says what it lost). The backends
(:mod:`backends.sqlite.delete`, :class:`backends.es.store.ESStore`) apply these decisions and report a
:class:`Forgotten`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from agents.profile import parse_lines, render_lines
from schemas import MemoryKind, MemoryRecord, TopicSummary

__all__ = ["Forgotten", "affected_topics", "doomed_memories", "reopened", "restored", "to_redistil", "trim_topic",
           "trimmed_profiles"]


@dataclass
class Forgotten:
    """What a store deletion removed, and what its caller needs next.

    ``removed`` counts messages and docs (and, for a chat, topics) as ``delete_user``/``delete_chat``
    always reported; ``texts`` are the deleted messages' and records' texts (their embedding-cache keys
    are computed from them); ``vectors`` the deleted messages' turn vectors (for the segmenter's pool).
    """

    removed: int = 0
    message_ids: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    texts: dict[str, str] = field(default_factory=dict)  # message id -> text
    record_texts: list[str] = field(default_factory=list)
    vectors: dict[str, list[float]] = field(default_factory=dict)
    memories: int = 0
    memory_ids: set[str] = field(default_factory=set)  # the deleted record versions
    topic_ids: set[str] = field(default_factory=set)  # the topics that held a deleted message
    reopened: int = 0
    topics_trimmed: int = 0
    topics_dropped: int = 0

    def all_texts(self) -> list[str]:
        return [*self.texts.values(), *self.record_texts]


TOPIC_WIDE = frozenset({MemoryKind.SUMMARY, MemoryKind.TITLE})  # drawn from the whole topic (its entities too)


def derived_from(record: MemoryRecord, message_ids: Collection[str], speakers: Collection[str]) -> bool:
    return bool(set(record.source_message_ids) & set(message_ids)) or record.speaker in speakers


def affected_topics(
    records: Iterable[MemoryRecord], topics: Iterable[TopicSummary], message_ids: Collection[str]
) -> set[str]:
    """Topics that held a deleted message (by membership, or by a record drawn from one)."""
    ids = set(message_ids)
    out = {t.topic_id for t in topics if ids & set(t.message_ids)}
    return out | {r.topic_id for r in records if r.topic_id and ids & set(r.source_message_ids)}


def doomed_memories(
    records: Iterable[MemoryRecord],
    message_ids: Collection[str],
    speakers: Collection[str],
    topic_ids: Collection[str] = (),
) -> dict[str, MemoryRecord]:
    """Every version derived from the deleted messages or spoken by the deleted sender, and every summary
    or title of a topic that held one of them (a summary's sources name only the messages its sentences
    came from, but its entities, like its title, are drawn from the whole topic), by memory id."""
    ids, who, topics = set(message_ids), set(speakers), set(topic_ids)
    return {r.memory_id: r for r in records
            if derived_from(r, ids, who) or (r.kind in TOPIC_WIDE and r.topic_id in topics)}  # fmt: skip


def reopened(records: Iterable[MemoryRecord], doomed: Collection[str]) -> list[MemoryRecord]:
    """Kept versions to make live again: closed by a version that is being deleted, whose chain of
    successors is deleted up to a still-live end (so nothing of theirs replaced it)."""
    by_id = {r.memory_id: r for r in records}
    gone = set(doomed)
    out = []
    for r in by_id.values():
        if r.memory_id in gone or r.valid_to is None or r.superseded_by not in gone:
            continue
        nxt: MemoryRecord | None = by_id.get(r.superseded_by or "")
        seen = {r.memory_id}
        while nxt is not None and nxt.memory_id in gone and nxt.superseded_by and nxt.memory_id not in seen:
            seen.add(nxt.memory_id)
            nxt = by_id.get(nxt.superseded_by)
        if nxt is not None and nxt.memory_id in gone and nxt.valid_to is None:
            out.append(r.model_copy(update={"valid_to": None, "superseded_by": None}))
    return out


def trimmed_profiles(
    doomed: Mapping[str, MemoryRecord], message_ids: Collection[str], speakers: Collection[str]
) -> list[MemoryRecord]:
    """The live profiles among ``doomed`` that are about someone else (not spoken by a deleted sender) and
    keep a line of another message: each without the deleted messages' lines, to be written back under its
    id once the doomed versions are gone (the text is rendered again from the kept lines only)."""
    ids, who = set(message_ids), set(speakers)
    out = []
    for r in doomed.values():
        if r.kind != MemoryKind.PROFILE or not r.live or r.speaker in who:
            continue
        kept = [ln for ln in parse_lines(r) if ln.message_id not in ids]
        if kept:
            out.append(r.model_copy(update={"text": render_lines(kept),
                                            "source_message_ids": [ln.message_id for ln in kept]}))  # fmt: skip
    return out


def restored(
    records: Iterable[MemoryRecord],
    doomed: Mapping[str, MemoryRecord],
    message_ids: Collection[str],
    speakers: Collection[str],
) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """What a deletion writes back: (versions made live again, :func:`trimmed_profiles`). A profile written
    back without the deleted lines takes the place of any older version of it that would be reopened."""
    kept = trimmed_profiles(doomed, message_ids, speakers)
    own = {(r.subject, r.attribute) for r in kept}
    back = [r for r in reopened(records, doomed)
            if r.kind != MemoryKind.PROFILE or (r.subject, r.attribute) not in own]  # fmt: skip
    return back, kept


def trim_topic(topic: TopicSummary, message_ids: Collection[str], names: Collection[str]) -> TopicSummary | None:
    """``topic`` without the deleted messages and people; None when no message is left; ``topic`` itself
    when it holds none of them."""
    ids, who = set(message_ids), set(names)
    if not ids & set(topic.message_ids) and not who & set(topic.participants):
        return topic
    kept = [m for m in topic.message_ids if m not in ids]
    if not kept:
        return None
    return topic.model_copy(
        update={"message_ids": kept, "participants": [p for p in topic.participants if p not in who],
                "title": None}
    )  # fmt: skip


def to_redistil(topics: Iterable[TopicSummary], message_ids: Collection[str]) -> list[str]:
    """The closed topics that hold a deleted message and keep another's: distilled again without them."""
    ids = set(message_ids)
    return [t.topic_id for t in topics
            if t.state == "closed" and ids & set(t.message_ids) and set(t.message_ids) - ids]  # fmt: skip
