"""The pure cores' own settings: plain frozen models, read from nowhere (``memstream.settings.Settings``
composes them under the same environment names, ``MEMSTREAM_SEGMENTER__*`` etc.)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["AuditConfig", "ConsolidatorConfig", "DistillerConfig", "GraphMemoryConfig", "SegmenterConfig"]


class SegmenterConfig(BaseModel):
    """Weights and thresholds of the multi-signal topic segmenter (design doc 001, 3.2.1-3.2.2).

    A message joins the best active topic if ``w_reply*reply + decay*(w_user*user + w_semantic*semantic +
    w_entity*entity + w_time) - w_mismatch*mismatch`` reaches ``threshold`` moved by the message cues
    (``threshold_*``); see ``agents/segment_signals.py``. Defaults were tuned on the Ubuntu IRC
    disentanglement dev set (``bench/irc.py``), keeping the design doc's ``w_reply = 0.4`` as the scale.
    """

    model_config = ConfigDict(frozen=True)

    w_reply: float = 0.4
    w_user: float = 0.6
    w_semantic: float = 1.0
    w_entity: float = 0.9
    time_decay_half_life_s: float = 300.0
    user_window_s: float = 120.0
    threshold: float = 0.85
    max_active_topics: int = 12
    idle_close_s: float = 900.0
    # a two-person chat answers at its own pace: a reply an hour later still continues the exchange
    idle_close_private_s: float = 10800.0
    recent_k: int = 5
    # reply-chain shades: addressing someone who spoke in the topic but last spoke elsewhere; answering after
    # being addressed in the topic
    mention_elsewhere: float = 0.25
    addressed_reply: float = 0.95
    # group chats: a known name spoken to after a greeting or thanks ("Thanks Priya") or a final comma counts
    # as addressing them; naming in passing someone whose latest message is in the topic is this much of a
    # reply (0: off). Neither in a private chat, where every turn is spoken to the other person
    vocative: bool = True
    named_reply: float = 0.5
    # same-user continuity in a topic that is not where the sender last spoke
    user_elsewhere: float = 0.8
    # pull of a topic that is still going on (times the time decay) and the penalty for addressing only
    # people absent from a topic
    w_time: float = 0.4
    w_mismatch: float = 0.7
    # cosine below which two chat lines count as unrelated (sentence embeddings rarely go lower)
    semantic_floor: float = 0.2
    # message cues that move the join threshold: a question or a long message (typical openers) raise it,
    # a sender already talking or a message addressed to someone lowers it
    threshold_question: float = 0.15
    threshold_length: float = 0.2
    threshold_known_sender: float = -0.23
    threshold_addressed: float = -0.45
    # a message opening with a revision cue ("Small change:", "Correction:", "更正") refers back to something
    # said: the bar falls by this and the linker's new-conversation probability does not raise it
    threshold_revision: float = -0.3
    # soft membership: a runner-up above threshold and within this ratio of the best also gets the message
    soft_ratio: float = 0.85
    # real-time merge of near-duplicate active topics (needs vectors)
    merge_similarity: float = 0.9
    merge_min_messages: int = 3
    # per-chat adaptive threshold (when enabled): the message's threshold times
    # clamp(1 + gain * (median recent best score - reference) / reference, min, max); off by default because
    # it did not help on IRC dev (the message cues above already adapt the bar per message)
    # the reply linker (agents/reply_linker.py): its probability that the message answers a topic's message
    # adds ``w_link`` times that to the topic's score; its probability of a new conversation raises the join
    # threshold by ``w_link_self`` times it
    use_linker: bool = True
    linker_weights: str | None = None  # a weight file of your own (python -m bench.train_linker --out FILE)
    w_link: float = 1.0
    w_link_self: float = 0.5
    # two-person chats (agents/segment_shift.py): a learned topic-shift model decides whether a turn continues
    # the previous turn's topic or opens a new one (off: the join score and threshold decide, as in group
    # chats, which on two-party dialogue do worse than cutting at every turn; docs/BENCHMARKS.md "Two-party
    # topic shifts")
    dyadic_shift: bool = True
    shift_weights: str | None = None  # a weight file of your own (python -m bench.tiage_train --out FILE)
    # one turn later a shift may be withdrawn on two-sided evidence (agents/segment_revise.py): the one-turn
    # topic is merged back into the topic it left (a MERGED event)
    shift_revise: bool = True
    # per-chat pace: time_decay_half_life_s and user_window_s are multiplied by clamp(median recent gap /
    # pace_reference_s, pace_min, pace_max) (agents/segment_signals.pace_scale). Off by default: on IRC dev,
    # as is and with every timestamp stretched x0.5 / x3, it moved VI and exact F1 by under a point either
    # way (docs/BENCHMARKS.md); the reply linker and the 15-minute idle close carry most of the time signal
    pace_adaptive: bool = False
    pace_reference_s: float = 10.0
    pace_min: float = 0.5
    pace_max: float = 4.0
    # slow chats (agents/segment_signals.slow_scale): the time decay and same-user window are stretched by
    # the chat's median gap over slow_reference_s (from its first gap, shrunk towards 1 by a prior of
    # slow_prior_n gaps), at most slow_max times; never shrunk, so chats faster than one message a minute
    # (IRC, LoCoMo's 30 s turns) are unchanged. slow_max <= 1 turns it off; pace_adaptive replaces it. The
    # idle close is never stretched: a topic of a slow chat still closes after 15 silent minutes
    slow_reference_s: float = 60.0
    slow_prior_n: float = 2.0
    slow_max: float = 8.0


class DistillerConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Literal["extractive", "llm"] = "extractive"
    max_facts_per_topic: int = 40
    summary_sentences: int = 3
    llm_max_messages: int = 200  # newest messages of a topic shown to the LLM
    llm_max_chars_per_message: int = 1500


class ConsolidatorConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Literal["rules", "llm", "add-only"] = "rules"
    similar_k: int = 10
    noop_similarity: float = 0.95
    update_similarity: float = 0.6
    llm_max_memories: int = 40  # existing memories shown to the LLM in one consolidation call
    profiles: bool = True  # per-person profile records by attribute class (agents/profile.py)


class GraphMemoryConfig(BaseModel):
    """Graph memory knobs (``agents/graph.py``; ``MEMSTREAM_GRAPH__*``)."""

    model_config = ConfigDict(frozen=True)

    merge_threshold: float = 0.92  # name-embedding cosine above which two entities of one type are merged
    similar_k: int = 3  # stored entities compared with each new name
    mention_edges: bool = True  # ``subject —mentions→ entity`` edges for entities a fact names
    max_mentions_per_fact: int = 3


class AuditConfig(BaseModel):
    """Error detection and repair of topic segmentation (design doc 001, section 6; ``agents/topic_audit.py``).

    Three levels: the segmenter's own real-time merge (``SegmenterConfig.merge_*``), a check when a topic
    closes (cohesion, semantic break -> split; near-duplicate of a recently closed topic -> merge) and a
    periodic audit of recently closed topics. Repairs are new events (SPLIT / MERGED), never rewrites.
    Defaults were measured on the Ubuntu IRC dev set (``bench/audit_eval.py``, docs/BENCHMARKS.md).
    """

    model_config = ConfigDict(frozen=True)

    close_check: bool = True  # run the close-time check (cohesion and soft repair; the repairs below if on)
    # Off by default: on IRC dev, files held out, both cost exact-match F1 (docs/BENCHMARKS.md). The audit
    # reports their proposals either way; these flags gate applying them (close time and ``memstream audit
    # --apply``).
    split: bool = False  # split a topic at a semantic break no link or person crosses
    merge: bool = False  # merge near-duplicate recently closed topics
    # semantic break: adjacent windows of ``window`` primary messages whose centroids' cosine is below
    # ``break_similarity``, no reply/addressee link crossing, senders' overlap (Jaccard) of the two windows
    # at most ``participant_overlap_max``; parts of at least ``min_part`` messages, at most ``max_parts``
    window: int = 5
    break_similarity: float = 0.4
    participant_overlap_max: float = 0.34
    min_part: int = 5
    max_parts: int = 4
    # near-duplicates: centroid cosine, shared senders, gap between the end of one and the start of the other
    merge_similarity: float = 0.8
    merge_min_shared: int = 1
    merge_gap_s: float = 900.0
    merge_min_messages: int = 2
    # soft repair: topics with at least ``suspicious_min_messages`` and a cohesion (mean pairwise cosine of
    # the members) below ``suspicious_cohesion`` are reported suspicious with ``suspicious_weight``
    suspicious_cohesion: float = 0.15
    suspicious_min_messages: int = 3
    suspicious_weight: float = 0.5
    # the periodic audit: every ``audit_interval_s``, topics closed within ``audit_window_s``
    audit_interval_s: float = 3600.0
    audit_window_s: float = 86400.0
    audit_apply: bool = False  # the timer emits repairs (else it only reports)
