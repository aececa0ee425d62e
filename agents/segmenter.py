"""Streaming topic segmenter: the pure decision core (design doc 001, sections 3.2 and 5.1-6.4).

Each chat keeps a :class:`ChatPool` of active topics. For every message, in event time:

1. topics idle for more than ``idle_close_s`` (relative to the message time) are closed;
2. the message is scored against every active topic (:func:`affinity`); it joins the best one if the score
   clears the chat's adaptive threshold (EXTENDED), else it opens a new topic (OPENED). A runner-up that also
   clears the threshold and scores close to the best gets the message as a soft member (a weighted EXTENDED);
3. two topics that became near-duplicates (centroid cosine and shared participants) are MERGED;
4. when the pool holds more than ``max_active_topics``, the least recently active topic is CLOSED.

No I/O here: state in, state and events out. The state is plain pydantic so a runner checkpoints it with its
consumer offset (``model_dump_json`` / ``model_validate_json``); a message seen before yields no events.
"""

from __future__ import annotations

import statistics
from datetime import UTC, datetime

import numpy as np
from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter

from agents.segment_signals import Features, addressees, as_unit, join_threshold, keywords, score_topic
from memstream.settings import SegmenterConfig
from schemas import ChatMessage, TopicEvent, TopicEventKind, stable_id

__all__ = [
    "ActiveTopic",
    "ChatPool",
    "SenderSeen",
    "affinity",
    "close_idle",
    "dump_pools",
    "features",
    "flush",
    "load_pools",
    "step",
]

MSG_TOPIC_MAX = 2000
SEEN_MAX = 5000
SENDERS_MAX = 1000
KEYWORDS_MAX = 96
RECENT_BEST_MAX = 64


class ActiveTopic(BaseModel):
    """One open topic. ``message_ids`` lists members in arrival order, soft members (``soft``) included."""

    topic_id: str
    message_ids: list[str] = Field(default_factory=list)
    soft: dict[str, float] = Field(default_factory=dict)
    participants: list[str] = Field(default_factory=list)
    started_at: datetime
    last_active_at: datetime
    last_ts: float  # last_active_at as epoch seconds (hot path)
    centroid: list[float] | None = None
    centroid_n: int = 0
    recent_vectors: list[list[float]] = Field(default_factory=list)
    keywords: dict[str, int] = Field(default_factory=dict)
    last_sender: str | None = None
    count: int = 0
    last_by_sender: dict[str, float] = Field(default_factory=dict)
    addressed: dict[str, float] = Field(default_factory=dict)  # sender id -> when someone here addressed them
    _matrix: np.ndarray | None = PrivateAttr(default=None)

    def primary_ids(self) -> list[str]:
        return [m for m in self.message_ids if m not in self.soft]

    def vectors(self) -> np.ndarray | None:
        """Unit centroid followed by the last-k vectors, as one matrix (cached until the topic changes)."""
        if self._matrix is None and self.centroid is not None:
            mat = np.asarray([self.centroid, *self.recent_vectors], dtype=np.float32)
            mat[0] /= max(float(np.linalg.norm(mat[0])), 1e-9)
            self._matrix = mat
        return self._matrix

    def owned_copy(self) -> ActiveTopic:
        """A copy whose containers may be mutated without touching this topic."""
        return self.model_copy(
            update={
                "message_ids": list(self.message_ids),
                "soft": dict(self.soft),
                "participants": list(self.participants),
                "recent_vectors": list(self.recent_vectors),
                "keywords": dict(self.keywords),
                "last_by_sender": dict(self.last_by_sender),
                "addressed": dict(self.addressed),
            }
        )


class SenderSeen(BaseModel):
    ts: float
    topic_id: str
    message_id: str


class ChatPool(BaseModel):
    """All segmentation state of one chat."""

    chat_id: str
    topics: list[ActiveTopic] = Field(default_factory=list)
    msg_topic: dict[str, str] = Field(default_factory=dict)  # bounded: the last MSG_TOPIC_MAX messages
    seen: list[str] = Field(default_factory=list)  # bounded idempotency window
    senders: dict[str, SenderSeen] = Field(default_factory=dict)
    names: dict[str, str] = Field(default_factory=dict)  # lowercased nick / display name / id -> sender id
    recent_best: list[float] = Field(default_factory=list)
    segmentation_version: int = 1
    last_at: datetime | None = None
    counters: dict[str, int] = Field(default_factory=dict)
    _seen_set: set[str] | None = PrivateAttr(default=None)

    def topic(self, topic_id: str) -> ActiveTopic | None:
        return next((t for t in self.topics if t.topic_id == topic_id), None)

    def has_seen(self, message_id: str) -> bool:
        if self._seen_set is None:
            self._seen_set = set(self.seen)
        return message_id in self._seen_set

    def mark_seen(self, message_id: str) -> None:
        self.has_seen(message_id)
        self.seen.append(message_id)
        self._seen_set.add(message_id)  # type: ignore[union-attr]
        if len(self.seen) > SEEN_MAX:
            self._seen_set.discard(self.seen.pop(0))  # type: ignore[union-attr]

    def bump(self, counter: str, n: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + n

    def fork(self) -> ChatPool:
        """A copy sharing only immutable parts (topics are copied on write by :meth:`own`): ``step`` never
        mutates the pool it was given, so a failed step leaves the caller's state intact."""
        new = self.model_copy(
            update={
                "topics": list(self.topics),
                "msg_topic": dict(self.msg_topic),
                "seen": list(self.seen),
                "senders": dict(self.senders),
                "names": dict(self.names),
                "recent_best": list(self.recent_best),
                "counters": dict(self.counters),
            }
        )
        new._seen_set = set(self._seen_set) if self._seen_set is not None else None
        return new

    def own(self, topic: ActiveTopic) -> ActiveTopic:
        """Replace ``topic`` in this pool by a private copy and return the copy."""
        mine = topic.owned_copy()
        self.topics = [mine if t is topic else t for t in self.topics]
        return mine


_POOLS = TypeAdapter(dict[str, ChatPool])


def dump_pools(pools: dict[str, ChatPool]) -> str:
    return _POOLS.dump_json(pools).decode()


def load_pools(raw: str) -> dict[str, ChatPool]:
    return _POOLS.validate_json(raw)


def features(msg: ChatMessage, vector: object, pool: ChatPool) -> Features:
    return Features(
        sender=msg.sender,
        ts=msg.ts.timestamp(),
        addressees=addressees(msg, pool.names),
        keywords=keywords(msg.text),
        reply_to=msg.reply_to,
        vector=as_unit(vector),
        question="?" in msg.text or "\uff1f" in msg.text,
        length=min(1.0, len(msg.text) / 200),
    )


def affinity(
    topic: ActiveTopic, msg: ChatMessage, vector: object, pool: ChatPool, cfg: SegmenterConfig
) -> tuple[float, dict[str, float]]:
    """Affinity of ``msg`` (optionally with its embedding) to ``topic``: total and per-signal breakdown."""
    return score_topic(topic, features(msg, vector, pool), pool, cfg)


def effective_threshold(pool: ChatPool, f: Features, cfg: SegmenterConfig) -> float:
    """The join threshold for this message in this chat. Adaptive: in chats whose messages usually score
    high against some topic (one dense conversation) the bar rises, in loose chats it falls, within
    ``[adaptive_min, adaptive_max]`` times the message's own threshold."""
    base = join_threshold(f, f.sender in pool.senders, cfg)
    if not cfg.adaptive_threshold or cfg.adaptive_gain == 0 or len(pool.recent_best) < 8:
        return base
    typical = statistics.median(pool.recent_best)
    scale = 1.0 + cfg.adaptive_gain * (typical - cfg.adaptive_reference) / max(cfg.adaptive_reference, 1e-9)
    return base * min(cfg.adaptive_max, max(cfg.adaptive_min, scale))


def step(
    pool: ChatPool, msg: ChatMessage, vector: object, cfg: SegmenterConfig
) -> tuple[ChatPool, list[TopicEvent]]:
    """Process one message of ``pool``'s chat; returns the new state and the topic events it caused."""
    if msg.chat_id != pool.chat_id:
        raise ValueError(f"message of chat {msg.chat_id!r} given to the pool of {pool.chat_id!r}")
    if pool.has_seen(msg.message_id):
        return pool, []
    pool = pool.fork()
    at = msg.ts
    events = _close_idle(pool, at, cfg, msg.message_id)
    f = features(msg, vector, pool)
    scored = sorted(
        ((score_topic(t, f, pool, cfg), t) for t in pool.topics), key=lambda x: x[0][0], reverse=True
    )
    threshold = effective_threshold(pool, f, cfg)
    if scored:
        pool.recent_best = [*pool.recent_best, scored[0][0][0]][-RECENT_BEST_MAX:]
    if scored and scored[0][0][0] >= threshold:
        (score, parts), topic = scored[0]
        topic = pool.own(topic)
        _attach(topic, msg, f, cfg)
        _remember(pool, msg, f, topic)
        reason = max(("reply", "user", "semantic", "entity"), key=lambda k: parts[k] * _weight(cfg, k))
        events.append(_event(pool, msg, TopicEventKind.EXTENDED, topic, [msg.message_id], score, reason))
        pool.bump("extended")
        events += _soft_members(pool, msg, scored, threshold, cfg)
        events += _maybe_merge(pool, msg, topic, cfg)
    else:
        topic = _open(pool, msg, f, cfg)
        _remember(pool, msg, f, topic)
        best = scored[0][0][0] if scored else None
        events.append(_event(pool, msg, TopicEventKind.OPENED, topic, [msg.message_id], best, "new"))
        pool.bump("opened")
    events += _evict(pool, msg, cfg)
    pool.last_at = max(pool.last_at, at) if pool.last_at else at
    return pool, events


def close_idle(pool: ChatPool, now: datetime, cfg: SegmenterConfig) -> tuple[ChatPool, list[TopicEvent]]:
    """Close the topics silent for more than ``idle_close_s`` at ``now`` (event time of the stream)."""
    pool = pool.fork()
    return pool, _close_idle(pool, now, cfg, None)


def flush(pool: ChatPool, now: datetime | None = None) -> tuple[ChatPool, list[TopicEvent]]:
    """Close every active topic (end of a finite stream or replay)."""
    pool = pool.fork()
    now = now or pool.last_at or datetime.now(UTC)
    events = [_closed(pool, t, now, "flush") for t in pool.topics]
    pool.topics = []
    return pool, events


# --- internals ---------------------------------------------------------------------------------------


def _weight(cfg: SegmenterConfig, signal: str) -> float:
    return {"reply": cfg.w_reply, "user": cfg.w_user, "semantic": cfg.w_semantic, "entity": cfg.w_entity}[signal]


def _event(
    pool: ChatPool,
    msg: ChatMessage,
    kind: TopicEventKind,
    topic: ActiveTopic,
    message_ids: list[str],
    score: float | None,
    reason: str,
    weights: dict[str, float] | None = None,
    related: list[str] | None = None,
) -> TopicEvent:
    return TopicEvent(
        event_id=stable_id(pool.chat_id, msg.message_id, kind.value, topic.topic_id, prefix="te-"),
        kind=kind,
        chat_id=pool.chat_id,
        topic_id=topic.topic_id,
        message_ids=message_ids,
        weights=weights or {},
        related_topic_ids=related or [],
        participants=list(topic.participants),
        score=None if score is None else round(score, 4),
        reason=reason,
        segmentation_version=pool.segmentation_version,
        at=msg.ts,
    )


def _closed(pool: ChatPool, topic: ActiveTopic, at: datetime, reason: str) -> TopicEvent:
    """CLOSED carries the whole topic; its id depends only on the topic (closing twice is idempotent)."""
    pool.bump("closed")
    last_id = topic.message_ids[-1] if topic.message_ids else topic.topic_id
    kind = TopicEventKind.CLOSED
    return TopicEvent(
        event_id=stable_id(pool.chat_id, last_id, kind.value, topic.topic_id, prefix="te-"),
        kind=kind,
        chat_id=pool.chat_id,
        topic_id=topic.topic_id,
        message_ids=list(topic.message_ids),
        weights=dict(topic.soft),
        participants=list(topic.participants),
        reason=reason,
        segmentation_version=pool.segmentation_version,
        at=at,
    )


def _close_idle(pool: ChatPool, now: datetime, cfg: SegmenterConfig, _by: str | None) -> list[TopicEvent]:
    cutoff = now.timestamp() - cfg.idle_close_s
    idle = [t for t in pool.topics if t.last_ts < cutoff]
    pool.topics = [t for t in pool.topics if t.last_ts >= cutoff]
    return [_closed(pool, t, now, "idle") for t in idle]


def _open(pool: ChatPool, msg: ChatMessage, f: Features, cfg: SegmenterConfig) -> ActiveTopic:
    topic = ActiveTopic(
        topic_id=stable_id(pool.chat_id, msg.message_id, prefix="t-"),
        started_at=msg.ts,
        last_active_at=msg.ts,
        last_ts=f.ts,
    )
    _attach(topic, msg, f, cfg)
    pool.topics.append(topic)
    return topic


def _attach(topic: ActiveTopic, msg: ChatMessage, f: Features, cfg: SegmenterConfig) -> None:
    topic._matrix = None
    topic.message_ids.append(msg.message_id)
    topic.count += 1
    if msg.sender not in topic.participants:
        topic.participants.append(msg.sender)
    if f.ts >= topic.last_ts:
        topic.last_active_at, topic.last_ts = msg.ts, f.ts
    topic.last_sender = msg.sender
    topic.last_by_sender[msg.sender] = f.ts
    for sid in f.addressees:
        topic.addressed[sid] = f.ts
    for w in f.keywords:
        topic.keywords[w] = topic.keywords.get(w, 0) + 1
    if len(topic.keywords) > KEYWORDS_MAX:  # keep the most used, newest first among ties
        keep = sorted(topic.keywords.items(), key=lambda kv: kv[1], reverse=True)[: KEYWORDS_MAX * 3 // 4]
        topic.keywords = dict(keep)
    if f.vector is not None:
        vec = f.vector
        if topic.centroid is None:
            topic.centroid, topic.centroid_n = _rounded(vec), 1
        else:
            n = topic.centroid_n
            topic.centroid = _rounded((np.asarray(topic.centroid, dtype=np.float32) * n + vec) / (n + 1))
            topic.centroid_n = n + 1
        topic.recent_vectors = [*topic.recent_vectors, _rounded(vec)][-cfg.recent_k :]


def _rounded(vec: np.ndarray) -> list[float]:
    return [round(float(x), 5) for x in vec]


def _remember(pool: ChatPool, msg: ChatMessage, f: Features, topic: ActiveTopic) -> None:
    pool.mark_seen(msg.message_id)
    pool.msg_topic[msg.message_id] = topic.topic_id
    if len(pool.msg_topic) > MSG_TOPIC_MAX:
        del pool.msg_topic[next(iter(pool.msg_topic))]
    pool.senders.pop(msg.sender, None)
    pool.senders[msg.sender] = SenderSeen(ts=f.ts, topic_id=topic.topic_id, message_id=msg.message_id)
    for name in {msg.sender.lower(), (msg.sender_name or msg.sender).lower()}:
        pool.names[name] = msg.sender
    while len(pool.senders) > SENDERS_MAX:
        gone = next(iter(pool.senders))
        del pool.senders[gone]
        pool.names = {k: v for k, v in pool.names.items() if v != gone}
    pool.bump("messages")


def _soft_members(pool, msg, scored, threshold: float, cfg: SegmenterConfig) -> list[TopicEvent]:
    if len(scored) < 2:
        return []
    best = scored[0][0][0]
    (score, _), runner = scored[1]
    if score < threshold or score < cfg.soft_ratio * best:
        return []
    weight = round(score / best, 3) if best > 0 else 0.0
    runner = pool.own(runner)
    runner.message_ids.append(msg.message_id)
    runner.soft[msg.message_id] = weight
    weights = {msg.message_id: weight}
    return [_event(pool, msg, TopicEventKind.EXTENDED, runner, [msg.message_id], score, "soft", weights)]


def _maybe_merge(pool: ChatPool, msg: ChatMessage, topic: ActiveTopic, cfg: SegmenterConfig) -> list:
    """Merge an active topic into ``topic`` when both centroids nearly coincide and they share people."""
    if topic.centroid is None or topic.centroid_n < cfg.merge_min_messages:
        return []
    mine = as_unit(topic.centroid)
    for other in pool.topics:
        if other is topic or other.centroid is None or other.centroid_n < cfg.merge_min_messages:
            continue
        shared = set(other.participants) & set(topic.participants)
        if not shared or float(as_unit(other.centroid) @ mine) < cfg.merge_similarity:
            continue
        keep, gone = (topic, other) if topic.started_at <= other.started_at else (other, topic)
        keep = pool.own(keep)
        _absorb(keep, gone, pool.seen)
        pool.topics = [t for t in pool.topics if t is not gone]
        for mid in gone.message_ids:
            if pool.msg_topic.get(mid) == gone.topic_id:
                pool.msg_topic[mid] = keep.topic_id
        for sid, seen in list(pool.senders.items()):
            if seen.topic_id == gone.topic_id:
                pool.senders[sid] = seen.model_copy(update={"topic_id": keep.topic_id})
        pool.bump("merged")
        ev = _event(pool, msg, TopicEventKind.MERGED, keep, list(keep.message_ids), None, "near-duplicate")
        return [ev.model_copy(update={"related_topic_ids": [gone.topic_id], "weights": dict(keep.soft)})]
    return []


def _absorb(keep: ActiveTopic, gone: ActiveTopic, arrival: list[str]) -> None:
    keep._matrix = None
    order = {m: i for i, m in enumerate(arrival)}  # ids older than the seen window sort first, stably
    keep.message_ids = sorted(dict.fromkeys(keep.message_ids + gone.message_ids), key=lambda m: order.get(m, -1))
    primary = set(keep.primary_ids()) | set(gone.primary_ids())
    keep.soft = {m: w for m, w in {**gone.soft, **keep.soft}.items() if m not in primary}
    keep.participants += [p for p in gone.participants if p not in keep.participants]
    if gone.centroid is not None and keep.centroid is not None:
        n, k = keep.centroid_n, gone.centroid_n
        mix = (np.asarray(keep.centroid) * n + np.asarray(gone.centroid) * k) / (n + k)
        keep.centroid, keep.centroid_n = _rounded(mix), n + k
    keep.recent_vectors = (gone.recent_vectors + keep.recent_vectors)[-len(keep.recent_vectors) or None :]
    for w, c in gone.keywords.items():
        keep.keywords[w] = keep.keywords.get(w, 0) + c
    for s, ts in gone.last_by_sender.items():
        keep.last_by_sender[s] = max(ts, keep.last_by_sender.get(s, ts))
    for s, ts in gone.addressed.items():
        keep.addressed[s] = max(ts, keep.addressed.get(s, ts))
    keep.count += gone.count
    if gone.last_ts > keep.last_ts:
        keep.last_ts, keep.last_active_at, keep.last_sender = gone.last_ts, gone.last_active_at, gone.last_sender
    keep.started_at = min(keep.started_at, gone.started_at)


def _evict(pool: ChatPool, msg: ChatMessage, cfg: SegmenterConfig) -> list[TopicEvent]:
    events = []
    while len(pool.topics) > cfg.max_active_topics:
        oldest = min(pool.topics, key=lambda t: t.last_ts)
        pool.topics = [t for t in pool.topics if t is not oldest]
        events.append(_closed(pool, oldest, msg.ts, "evicted"))
    return events
