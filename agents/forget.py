"""Forget messages in the segmenter's state: a chat's pool without a deleted sender's messages (pure).

The pool checkpoint (:class:`~agents.segment_state.ChatPool`) holds recent message ids, keywords drawn from
their texts, their vectors and the reply linker's window. After a deletion none of that may keep what the
deleted messages said: their ids leave every topic and index, their keywords are subtracted from their
topics' counts, their vectors are taken out of the centroids (when the caller has them) and the recent
vectors, their window entries go, and the sender leaves the topics' participants, the speaker index and the
name table. A topic left without messages is dropped. The input pool is never mutated.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from agents.reply_linker import LinkMsg
from agents.segment_signals import keywords, rounded
from agents.segment_state import ActiveTopic, ChatPool

__all__ = ["forget_in_pool", "forget_in_pool_json"]

_SAME_VECTOR = 0.9995  # cosine above which a stored (rounded) recent vector is the deleted message's


def forget_in_pool(
    pool: ChatPool,
    message_ids: Collection[str],
    *,
    sender: str | None = None,
    texts: Mapping[str, str] | None = None,
    vectors: Mapping[str, Sequence[float]] | None = None,
) -> ChatPool:
    """``pool`` without ``message_ids`` (and, given ``sender``, without that sender at all).

    ``texts`` (message id -> text) lets the topics' keyword counts drop those messages' keywords;
    ``vectors`` (message id -> embedding) lets centroids and recent vectors drop theirs.
    """
    gone = set(message_ids)
    texts, vectors = texts or {}, vectors or {}
    new = pool.fork()
    topics: list[ActiveTopic] = []
    for topic in new.topics:
        if not (gone & set(topic.message_ids)) and not _mentions_sender(topic, sender):
            topics.append(topic)
            continue
        mine = _forget_in_topic(topic.owned_copy(), gone, sender, texts, vectors)
        if mine.message_ids:
            topics.append(mine)
    new.topics = topics
    alive = {t.topic_id for t in topics}
    new.msg_topic = {m: t for m, t in new.msg_topic.items() if m not in gone and t in alive}
    new.seen = [m for m in new.seen if m not in gone]
    new._seen_set = None
    new.senders = {s: seen for s, seen in new.senders.items() if s != sender and seen.message_id not in gone}
    if sender is not None:
        new.names = {k: v for k, v in new.names.items() if v != sender}
    kept = [i for i, lm in enumerate(new.window) if lm.message_id not in gone and lm.sender != sender]
    aligned = len(new.window_vectors) == len(new.window)
    new.window = [_unlink(new.window[i], gone, sender) for i in kept]
    new.window_vectors = [new.window_vectors[i] for i in kept] if aligned else []
    return new


def forget_in_pool_json(
    raw: str,
    message_ids: Collection[str],
    *,
    sender: str | None = None,
    texts: Mapping[str, str] | None = None,
    vectors: Mapping[str, Sequence[float]] | None = None,
) -> str:
    """:func:`forget_in_pool` over a serialized pool (working memory and the log keep pools as JSON)."""
    pool = ChatPool.model_validate_json(raw)
    return forget_in_pool(pool, message_ids, sender=sender, texts=texts, vectors=vectors).model_dump_json()


def _mentions_sender(topic: ActiveTopic, sender: str | None) -> bool:
    return sender is not None and (
        sender in topic.participants or sender in topic.last_by_sender or sender in topic.addressed
    )


def _forget_in_topic(
    t: ActiveTopic,
    gone: set[str],
    sender: str | None,
    texts: Mapping[str, str],
    vectors: Mapping[str, Sequence[float]],
) -> ActiveTopic:
    primary = [m for m in t.message_ids if m in gone and m not in t.soft]
    t.message_ids = [m for m in t.message_ids if m not in gone]
    t.soft = {m: w for m, w in t.soft.items() if m not in gone}
    t.count = max(0, t.count - len(primary))
    for mid in primary:
        for word in keywords(texts.get(mid, "")):
            left = t.keywords.get(word, 0) - 1
            if left > 0:
                t.keywords[word] = left
            else:
                t.keywords.pop(word, None)
    _forget_vectors(t, [np.asarray(vectors[m], dtype=np.float64) for m in primary if m in vectors])
    if sender is not None:
        t.participants = [p for p in t.participants if p != sender]
        t.last_by_sender.pop(sender, None)
        t.addressed.pop(sender, None)
        if t.last_sender == sender:
            t.last_sender = max(t.last_by_sender, key=lambda s: t.last_by_sender[s], default=None)
    t.changed()
    return t


def _forget_vectors(t: ActiveTopic, vecs: list[np.ndarray]) -> None:
    """Take the deleted members' vectors out of the running centroid and the recent vectors."""
    if not vecs:
        return
    units = [v / n for v in vecs if (n := float(np.linalg.norm(v))) > 0]
    if t.centroid is not None and units:
        left = t.centroid_n - len(units)
        if left <= 0:
            t.centroid, t.centroid_n = None, 0
        else:
            total = np.asarray(t.centroid, dtype=np.float64) * t.centroid_n - np.sum(units, axis=0)
            t.centroid, t.centroid_n = rounded(total / left), left
    t.recent_vectors = [r for r in t.recent_vectors if not _matches(r, units)]


def _matches(stored: Sequence[float], units: list[np.ndarray]) -> bool:
    v = np.asarray(stored, dtype=np.float64)
    n = float(np.linalg.norm(v))
    return n > 0 and any(float(v @ u) / n >= _SAME_VECTOR for u in units if u.shape == v.shape)


def _unlink(lm: LinkMsg, gone: set[str], sender: str | None) -> LinkMsg:
    """A window entry that no longer points at a deleted message or sender as its parent."""
    if lm.parent in gone or (sender is not None and lm.parent_sender == sender):
        return lm.model_copy(update={"parent": None, "parent_sender": None})
    return lm
