"""Streaming topic segmenter: the pure decision core (design doc 001, sections 3.2 and 5.1-6.4).

Each chat keeps a :class:`ChatPool` of active topics. For every message, in event time:

1. topics idle for more than ``idle_close_s`` (``idle_close_private_s`` in a two-person chat; relative to the
   message time) are closed;
2. the message is scored against every active topic (:func:`affinity`); it joins the best one if the score
   clears its join threshold (EXTENDED), else it opens a new topic (OPENED); an explicit ``reply_to`` into an
   active topic always joins it. A runner-up that also clears the threshold and scores close to the best gets
   the message as a soft member (a weighted EXTENDED);
3. two topics that became near-duplicates (centroid cosine and shared participants) are MERGED;
4. when the pool holds more than ``max_active_topics``, the least recently active topic is CLOSED.

No I/O here: state in, state and events out. The state (:mod:`agents.segment_state`) is plain pydantic so a
runner checkpoints it with its consumer offset; a message seen before yields no events.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from agents.config import SegmenterConfig
from agents.segment_link import link_msg, read_links, remember
from agents.segment_revise import next_look, revise_p, revise_row
from agents.segment_shift import (
    carries_no_topic,
    closing_cue,
    default_shift_weights,
    dyad_features,
    is_dyadic,
    logistic,
    shift_logit,
    skip_features,
)
from agents.segment_signals import Features, effective_threshold, features, score_topic
from agents.segment_state import (
    ActiveTopic,
    ChatPool,
    PendingShift,
    SenderSeen,
    absorb,
    dump_pools,
    load_pools,
    rounded_array,
)
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
SENDERS_MAX = 1000
KEYWORDS_MAX = 96
GAPS_MAX = 64
_SIGNALS = ("reply", "link", "user", "semantic", "entity")


def affinity(
    topic: ActiveTopic, msg: ChatMessage, vector: object, pool: ChatPool, cfg: SegmenterConfig
) -> tuple[float, dict[str, float]]:
    """Affinity of ``msg`` (optionally with its embedding) to ``topic``: total and per-signal breakdown."""
    return score_topic(topic, features(msg, vector, pool, cfg), pool, cfg)


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
    pool.private = msg.chat_type == "private"
    events = _close_idle(pool, at, cfg)
    f = features(msg, vector, pool, cfg)
    lm = link_msg(msg, f)
    turn_x, logit = _shift_reading(pool, lm, f, msg.text, cfg, msg.chat_type == "private") or (None, None)
    pending, pool.pending_shift = pool.pending_shift, None
    if logit is not None and pending is not None:
        events += _revise(pool, msg, lm, f, pending, logit, cfg)
    links = read_links(pool, lm, f, cfg)
    scored = sorted(
        ((score_topic(t, f, pool, cfg, links.topic_mass.get(t.topic_id, 0.0)), t) for t in pool.topics),
        key=lambda x: x[0][0],
        reverse=True,
    )
    # the linker's new-conversation probability raises the bar, except for a revision, which refers back
    threshold = effective_threshold(pool, f, cfg) + cfg.w_link_self * links.p_self * (not f.revision)
    replied = pool.msg_topic.get(msg.reply_to) if msg.reply_to else None
    explicit = next((x for x in scored if x[1].topic_id == replied), None)
    dyad = None if explicit is not None or logit is None else _dyadic(pool, logit, cfg, msg.text)
    if dyad is not None:  # a two-person chat: the shift model decides between the previous turn's topic and a new one
        choice = None if dyad[0] else next(x for x in scored if x[1] is dyad[1])
    else:  # an explicit reply has priority (design doc 3.2.1)
        choice = explicit or (scored[0] if scored and scored[0][0][0] >= threshold else None)
    if choice is not None:
        (score, parts), chosen = choice
        others = [x for x in scored if x[1] is not chosen]
        parent = msg.reply_to if explicit is not None else _parent_in(links, chosen)
        if dyad is not None:
            parent = pool.window[-1].message_id
        topic = pool.own(chosen)
        _attach(topic, msg, f, cfg)
        _remember(pool, msg, f, topic)
        reason = max(_SIGNALS, key=lambda k: parts[k] * _weight(cfg, k))  # the largest contribution
        events.append(_event(pool, msg, TopicEventKind.EXTENDED, topic, [msg.message_id], score, reason, parent=parent))
        pool.bump("extended")
        events += _soft_members(pool, msg, others, threshold, score, cfg)
        if dyad is None:  # in a dialogue the shift model decides, not the raw centroid cosine
            events += _maybe_merge(pool, msg, topic, cfg)
    else:
        topic = _open(pool, msg, f, cfg)
        _remember(pool, msg, f, topic)
        best = scored[0][0][0] if scored else None
        related = [replied] if replied else []  # a reply to a topic that is already closed
        reason = "reply-to-closed" if replied else "new"
        parent = msg.reply_to or msg.message_id
        kind = TopicEventKind.OPENED
        events.append(_event(pool, msg, kind, topic, [msg.message_id], best, reason, None, related, parent))
        pool.bump("opened")
        if dyad is not None and cfg.shift_revise:
            left, before, kept = dyad[1].topic_id, pool.last_closing, [float(v) for v in turn_x]  # type: ignore[union-attr]
            pool.pending_shift = PendingShift(
                topic_id=topic.topic_id, left_id=left, logit=logit, closing_before=before, features=kept
            )
    remember(pool, lm, f.vector, cfg, parent)
    pool.last_closing = closing_cue(msg.text)
    if pool.last_at is not None:
        pool.gaps = [*pool.gaps, max(0.0, f.ts - pool.last_at.timestamp())][-GAPS_MAX:]
    events += _evict(pool, msg, cfg)
    pool.last_at = max(pool.last_at, at) if pool.last_at else at
    return pool, events


def _weight(cfg: SegmenterConfig, signal: str) -> float:
    return getattr(cfg, f"w_{signal}")


def _shift_reading(
    pool: ChatPool, lm, f: Features, text: str, cfg: SegmenterConfig, private: bool
) -> tuple[np.ndarray, float] | None:
    """In a two-person chat with ``dyadic_shift`` on: the shift model's features of the turn and its log-odds
    that the turn starts a new topic (:mod:`agents.segment_shift`). None: not a dialogue; the join score
    decides."""
    if not cfg.dyadic_shift or not is_dyadic(lm, pool.window, private):
        return None
    x = dyad_features(pool, lm, f.vector, text)
    return x, shift_logit(x, default_shift_weights(cfg.shift_weights))


def _dyadic(pool: ChatPool, logit: float, cfg: SegmenterConfig, text: str) -> tuple[bool, ActiveTopic] | None:
    """Does the turn shift topic (its log-odds against the model's threshold; a turn that only reacts never
    does), and the active topic of the previous turn it would otherwise continue. None: that topic is
    closed; the join score decides."""
    previous = pool.topic(pool.msg_topic.get(pool.window[-1].message_id, ""))
    if previous is None:
        return None
    shift = logistic(logit) >= default_shift_weights(cfg.shift_weights).threshold
    return shift and not carries_no_topic(text), previous


def _revise(pool: ChatPool, msg: ChatMessage, lm, f: Features, pending: PendingShift, logit: float,
            cfg: SegmenterConfig) -> list[TopicEvent]:  # fmt: skip
    """Withdraw the previous turn's shift when this turn reads as going on from the turns before it
    (:mod:`agents.segment_revise`): the one-turn topic is merged back into the topic it left, if both are
    still active. A shift kept without its features (a checkpoint from before they were kept) stays."""
    opened, left = pool.topic(pending.topic_id), pool.topic(pending.left_id)
    if opened is None or left is None or opened.primary_ids() != [pool.window[-1].message_id] or not pending.features:
        return []
    weights = default_shift_weights(cfg.shift_weights)
    skip = shift_logit(skip_features(pool, lm, f.vector, msg.text, pending.closing_before), weights)
    row = revise_row(np.asarray(pending.features), pending.logit, logit, skip, next_look(pool, lm, f.vector))
    if revise_p(row, weights) >= weights.revise_threshold:
        return []
    return [_merge(pool, msg, pool.own(left), opened, "shift-revised")]


def _parent_in(links, topic: ActiveTopic) -> str | None:
    """The most likely parent among the topic's messages (None if the linker is off)."""
    best = links.best_in(set(topic.message_ids))
    return best[0] if best else None


def close_idle(pool: ChatPool, now: datetime, cfg: SegmenterConfig) -> tuple[ChatPool, list[TopicEvent]]:
    """Close the topics silent for more than ``idle_close_s`` at ``now`` (event time of the stream)."""
    pool = pool.fork()
    return pool, _close_idle(pool, now, cfg)


def flush(pool: ChatPool, now: datetime | None = None) -> tuple[ChatPool, list[TopicEvent]]:
    """Close every active topic (end of a finite stream or replay)."""
    pool = pool.fork()
    now = now or pool.last_at or datetime.now(UTC)
    events = [_closed(pool, t, now, "flush") for t in pool.topics]
    pool.topics = []
    return pool, events


# --- internals ---------------------------------------------------------------------------------------


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
    parent: str | None = None,
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
        parent_message_id=parent,
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


def _close_idle(pool: ChatPool, now: datetime, cfg: SegmenterConfig) -> list[TopicEvent]:
    cutoff = now.timestamp() - (cfg.idle_close_private_s if pool.private else cfg.idle_close_s)
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
    before = topic.built_vectors()  # the matrix scored against: updated below, not rebuilt from the lists
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
    for w in sorted(f.keywords):  # sorted: set order depends on the hash seed (replay must be exact)
        topic.keywords[w] = topic.keywords.get(w, 0) + 1
    if len(topic.keywords) > KEYWORDS_MAX:  # keep the most used, newest first among ties
        keep = sorted(topic.keywords.items(), key=lambda kv: kv[1], reverse=True)[: KEYWORDS_MAX * 3 // 4]
        topic.keywords = dict(keep)
    if f.vector is None:
        topic.changed(before)
        return
    vec = f.vector
    if topic.centroid is None:
        centroid, topic.centroid_n = rounded_array(vec), 1
    else:
        n = topic.centroid_n
        centroid = rounded_array((topic.centroid32() * n + vec) / (n + 1))
        topic.centroid_n = n + 1
    row = rounded_array(vec)
    topic.centroid = centroid.tolist()
    topic.recent_vectors = [*topic.recent_vectors, row.tolist()][-cfg.recent_k :]
    topic.changed(before, grown=True, last=(centroid, row))


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


def _soft_members(pool, msg, others, threshold: float, best: float, cfg: SegmenterConfig) -> list[TopicEvent]:
    """The best other topic also gets the message, weighted, if it clears the bar and is close to the best."""
    if not others:
        return []
    (score, _), runner = others[0]
    if score < threshold or best <= 0 or score < cfg.soft_ratio * best:
        return []
    weight = round(min(1.0, score / best), 3)
    runner = pool.own(runner)
    runner.message_ids.append(msg.message_id)
    runner.soft[msg.message_id] = weight
    weights = {msg.message_id: weight}
    return [_event(pool, msg, TopicEventKind.EXTENDED, runner, [msg.message_id], score, "soft", weights)]


def _maybe_merge(pool: ChatPool, msg: ChatMessage, topic: ActiveTopic, cfg: SegmenterConfig) -> list:
    """Merge an active topic into ``topic`` when both centroids nearly coincide and they share people."""
    if topic.centroid is None or topic.centroid_n < cfg.merge_min_messages or cfg.merge_similarity > 1:
        return []
    mine = topic.vectors()[0]  # type: ignore[index]
    for other in pool.topics:
        if other is topic or other.centroid is None or other.centroid_n < cfg.merge_min_messages:
            continue
        if not set(other.participants) & set(topic.participants):
            continue
        if float(other.vectors()[0] @ mine) < cfg.merge_similarity:  # type: ignore[index]
            continue
        keep, gone = (topic, other) if topic.started_at <= other.started_at else (other, topic)
        return [_merge(pool, msg, pool.own(keep), gone, "near-duplicate")]
    return []


def _merge(pool: ChatPool, msg: ChatMessage, keep: ActiveTopic, gone: ActiveTopic, reason: str) -> TopicEvent:
    """Merge the active topic ``gone`` into ``keep`` (already the pool's own copy); the MERGED event."""
    absorb(keep, gone, pool.seen)
    pool.topics = [t for t in pool.topics if t is not gone]
    for mid in gone.message_ids:
        if pool.msg_topic.get(mid) == gone.topic_id:
            pool.msg_topic[mid] = keep.topic_id
    for sid, seen in list(pool.senders.items()):
        if seen.topic_id == gone.topic_id:
            pool.senders[sid] = seen.model_copy(update={"topic_id": keep.topic_id})
    pool.bump("merged")
    ev = _event(pool, msg, TopicEventKind.MERGED, keep, list(keep.message_ids), None, reason)
    return ev.model_copy(update={"related_topic_ids": [gone.topic_id], "weights": dict(keep.soft)})


def _evict(pool: ChatPool, msg: ChatMessage, cfg: SegmenterConfig) -> list[TopicEvent]:
    events = []
    while len(pool.topics) > cfg.max_active_topics:
        oldest = min(pool.topics, key=lambda t: t.last_ts)
        pool.topics = [t for t in pool.topics if t is not oldest]
        events.append(_closed(pool, oldest, msg.ts, "evicted"))
    return events
