"""Features of the reply linker (:mod:`agents.reply_linker`): one row per (message, candidate parent) pair.

Pure functions over :class:`LinkMsg` (what the linker keeps of a message): cues of the pair itself (distance,
time, who addresses whom, shared words, embedding cosine), of who answered whom in the window (the parents the
linker already chose), and of the candidate's topic in the segmenter's state (is it that topic's latest
message, does the topic share words or meaning with the message, has the sender or the person addressed
spoken in it). A message that addresses nobody gets its pair cues in a second block of columns
(``plain_*``), so a linear layer can weigh them apart.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.reply_pairs import pair_rows

__all__ = [
    "FEATURES", "PAIR_FEATURES", "SELF_FEATURES", "TOPIC_FEATURES", "LinkMsg", "Threads",
    "candidate_matrix", "pair_rows", "self_features", "text_cues", "topic_features",
]  # fmt: skip

_GREETING_RE = re.compile(r"\b(hi|hello|hey|anyone|anybody|somebody|someone|help|question)\b", re.I)
_THANKS_RE = re.compile(r"\b(thanks?|thx|ty|cheers|works|worked|great|cool|ok|okay|yes|no|yeah|nope)\b|谢谢|好的", re.I)

_COMMAND_RE = re.compile(r"\s*[!/][a-z]\w*", re.I)

PAIR_FEATURES = (
    "prev",  # the candidate is the message right before
    "log_dist",  # log1p(messages in between)
    "log_gap_min",  # log1p(minutes between them)
    "addresses_cand_sender",  # the message addresses the candidate's sender
    "addresses_cand_sender_latest",  # ... and the candidate is that sender's latest message
    "cand_addresses_sender",  # the candidate addressed the message's sender
    "cand_addresses_sender_latest",  # ... and is the latest message addressed to them
    "same_sender",
    "same_sender_no_other",  # same sender and nobody else spoke in between
    "cand_sender_latest",  # the candidate is its sender's latest message
    "addressee_mismatch",  # the message addresses someone, not the candidate's sender
    "same_addressee",  # both address the same third person
    "cand_question",
    "cand_no_addressee",
    "msg_no_addressee",
    "keyword_overlap",  # Jaccard of content words
    "keyword_any",
    "cosine",  # embedding cosine (0 without vectors)
    "no_vector",
    "sender_spoke_since",  # the message's sender spoke after the candidate
    "cand_sender_spoke_since",  # the candidate's sender spoke again after it
    "cand_sender_new",  # the candidate was its sender's first message in the window
    "msg_thanks",  # a short acknowledgement ("thanks", "ok", "works") ...
    "msg_thanks_x_cand_addresses",  # ... answering someone who addressed the sender
    "pair_talked",  # the two senders addressed each other earlier in the window
    "cand_sender_last_addressed_sender",  # the candidate's sender's latest addressee is the message's sender
    "sender_last_addressed_cand_sender",  # the message's sender last addressed the candidate's sender
    "latest_involving_sender",  # the latest message by or to the message's sender
    "mentions_cand_sender",  # the candidate's sender is named anywhere in the message
    "cand_mentions_sender",
    "keyword_best",  # the candidate has the window's largest keyword overlap (> 0)
    "cosine_gap",  # cosine minus the window's best cosine (0 for the best)
    "addressed_x_cand_question",  # addressing the candidate's sender, and the candidate asks a question
    "addressed_x_keyword",  # addressing the candidate's sender, and they share content words
    "cand_sender_rank",  # log1p(how many later messages its sender wrote before this one)
    "dist_1",  # one message in between
    "dist_2",
    "dist_3_5",
    "dist_6_10",
    "cand_sender_recent",  # the candidate's sender wrote one of the last five messages
    "cand_long",  # the candidate's length (characters / 200, capped at 1)
    "cand_greeting",  # the candidate reads like an opener ("hi", "anyone", "help")
    "same_thread_as_sender",  # the candidate is in the topic where the sender last spoke (segmenter state)
    "same_thread_as_addressee",  # ... where the person addressed last spoke
    # from the links already inferred for the window (each message's chosen parent and its sender)
    "cand_answered_sender",  # the candidate answered the message's sender (implicitly or not)
    "cand_answers_my_latest",  # ... it answered the sender's latest message
    "my_latest_answered_cand",  # the sender's latest message answered the candidate
    "linked_pair",  # the two senders answered each other earlier in the window
    "cand_has_reply",  # someone already answered the candidate
    "cand_replied_by_sender",  # the message's sender already answered the candidate
    "cand_root",  # the candidate started a conversation
    "cand_latest_answered_sender",  # the candidate is its sender's latest, and it answered the message's sender
    "cand_thanks",  # the candidate is a short acknowledgement
    "cand_open_question",  # the candidate asks a question nobody answered yet
    "cand_command",  # the candidate is a bot command ("!factoid", "/cmd")
    "rare_overlap",  # content words shared with the candidate that are rare in the window
)
SELF_FEATURES = (
    "self_bias",
    "self_addressed",  # the message addresses someone (rarely a conversation start)
    "self_question",
    "self_greeting",
    "self_sender_new",  # the sender has not spoken in the window
    "self_long",
    "self_was_addressed",  # someone addressed the sender recently (they are answering)
    "self_gap_min",  # log1p(minutes since the previous message)
)
# Messages that address nobody get a second set of pair weights: who they answer is read from other cues
# (content, who answered whom) than for addressed ones, and one linear model serves both badly.
PLAIN_FEATURES = tuple(f"plain_{name}" for name in PAIR_FEATURES)
# The candidate's topic in the segmenter's state (its messages in the window): in IRC an answer usually goes
# to the latest message of a conversation that is still going on, and shares its words or meaning.
TOPIC_FEATURES = (
    "topic_latest",  # the candidate is its topic's latest message in the window
    "topic_later",  # log1p(messages of its topic after it)
    "topic_size",  # log1p(messages of its topic in the window)
    "topic_keywords",  # share of the message's content words used in the topic
    "topic_cosine",  # best cosine of the message to the topic's messages (0 without vectors)
    "topic_cosine_gap",  # ... minus the best topic's
    "topic_has_sender",  # the message's sender spoke in the topic
    "topic_has_addressee",  # the person the message addresses spoke in the topic
    "topic_idle",  # log1p(messages since the topic's latest)
    "topic_no_vector",
)
FEATURES = PAIR_FEATURES + SELF_FEATURES + PLAIN_FEATURES + TOPIC_FEATURES


class LinkMsg(BaseModel):
    """What the linker remembers of one message (kept in the segmenter's checkpoint, so small)."""

    model_config = ConfigDict(frozen=True)

    message_id: str
    sender: str
    ts: float
    addressees: tuple[str, ...] = ()
    keywords: frozenset[str] = Field(default_factory=frozenset)
    question: bool = False
    length: float = 0.0
    thanks: bool = False
    greeting: bool = False
    mentions: tuple[str, ...] = ()  # senders named anywhere in the text (not only as the addressee)
    command: bool = False
    parent: str | None = None  # the parent chosen for it (its own id = started a conversation)
    parent_sender: str | None = None  # that parent's sender (None when unknown or a new conversation)


def text_cues(text: str) -> dict[str, bool]:
    short = len(text) < 60
    return {
        "thanks": short and bool(_THANKS_RE.search(text)),
        "greeting": bool(_GREETING_RE.search(text)),
        "command": bool(_COMMAND_RE.match(text)),
    }


@dataclass(frozen=True, slots=True)
class Threads:
    """What the segmenter knows at this point: each recent message's topic, and where people last spoke."""

    topic_of: dict[str, str]
    sender_topic: str | None = None
    addressee_topics: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class _Context:
    """Per-message facts about the window, computed once for all candidates."""

    latest_by_sender: dict[str, int]  # sender -> index in the window of their latest message
    latest_to: dict[str, int]  # sender -> index of the latest message addressing them
    last_addressee: dict[str, str]  # sender -> whom their latest addressed message addressed
    talked: frozenset[tuple[str, str]]  # (a, b): a addressed b in the window
    count_after: list[int]  # messages by the same sender after each window message
    overlaps: list[float]  # keyword overlap of the message with each window message
    best_keywords: float
    best_cosine: float
    latest_involving: int
    last_other: int  # index of the latest message not by the message's sender
    first_by_sender: dict[str, int]
    my_latest: LinkMsg | None  # the sender's latest message in the window
    replied_by: dict[str, frozenset[str]]  # message id -> senders who answered it in the window
    linked: frozenset[tuple[str, str]]  # (a, b): a answered b in the window
    rare: list[float]  # per window message: shared content words, each weighted 1 / its count in the window


def _context(msg: LinkMsg, window: list[LinkMsg], cos: list[float | None] | None) -> _Context:
    latest_by_sender: dict[str, int] = {}
    latest_to: dict[str, int] = {}
    last_addressee: dict[str, str] = {}
    talked: set[tuple[str, str]] = set()
    involving = -1
    for i, m in enumerate(window):
        latest_by_sender[m.sender] = i
        for a in m.addressees:
            latest_to[a] = i
            talked.add((m.sender, a))
        if m.addressees:
            last_addressee[m.sender] = m.addressees[0]
        if m.sender == msg.sender or msg.sender in m.addressees:
            involving = i
    last_other = max((i for i, m in enumerate(window) if m.sender != msg.sender), default=-1)
    first_by_sender: dict[str, int] = {}
    for i, m in enumerate(window):
        first_by_sender.setdefault(m.sender, i)
    seen: dict[str, int] = {}
    count_after = [0] * len(window)
    for i in range(len(window) - 1, -1, -1):
        s = window[i].sender
        count_after[i] = seen.get(s, 0)
        seen[s] = count_after[i] + 1
    replied: dict[str, set[str]] = {}
    linked: set[tuple[str, str]] = set()
    for m in window:
        if m.parent is not None and m.parent != m.message_id:
            replied.setdefault(m.parent, set()).add(m.sender)
            if m.parent_sender is not None:
                linked.add((m.sender, m.parent_sender))
    mine = latest_by_sender.get(msg.sender)
    shared = [m.keywords & msg.keywords for m in window]  # content words in common, once per candidate
    overlaps = [
        len(sh) / len(m.keywords | msg.keywords) if sh else 0.0 for sh, m in zip(shared, window, strict=True)
    ]
    df: dict[str, int] = {}
    for sh in shared:
        for kw in sh:
            df[kw] = df.get(kw, 0) + 1
    rare = [sum(1.0 / df[kw] for kw in sh) for sh in shared]
    best_kw = max(overlaps, default=0.0)
    best_cos = _best(cos) if cos is not None else 0.0
    return _Context(
        latest_by_sender,
        latest_to,
        last_addressee,
        frozenset(talked),
        count_after,
        overlaps,
        best_kw,
        best_cos,
        involving,
        last_other,
        first_by_sender,
        None if mine is None else window[mine],
        {k: frozenset(v) for k, v in replied.items()},
        frozenset(linked),
        rare,
    )


def self_features(msg: LinkMsg, window: list[LinkMsg], ctx: _Context) -> np.ndarray:
    x = np.zeros(len(FEATURES), dtype=np.float64)
    base = len(PAIR_FEATURES)
    prev_ts = window[-1].ts if window else msg.ts
    values = (
        1.0,
        float(bool(msg.addressees)),
        float(msg.question),
        float(msg.greeting),
        float(msg.sender not in ctx.latest_by_sender),
        msg.length,
        float(msg.sender in ctx.latest_to),
        math.log1p(max(0.0, msg.ts - prev_ts) / 60.0),
    )
    x[base : base + len(values)] = values
    return x


def candidate_matrix(
    msg: LinkMsg, window: list[LinkMsg], cosines: np.ndarray | None, threads: Threads | None = None, topics: bool = True
) -> np.ndarray:
    """One row per candidate: ``window[0..n-1]`` then the message itself (the self-link, last row); the
    :data:`TOPIC_FEATURES` columns stay zero without ``threads`` or with ``topics=False`` (weights that ignore them)."""
    cos = None if cosines is None else [None if v != v else v for v in cosines.tolist()]  # NaN: no vector
    ctx = _context(msg, window, cos)
    x = np.zeros((len(window) + 1, len(FEATURES)), dtype=np.float64)
    if window:
        x[:-1, : len(PAIR_FEATURES)] = pair_rows(msg, window, ctx, cos or [None] * len(window), threads)
    x[-1] = self_features(msg, window, ctx)
    plain = len(PAIR_FEATURES) + len(SELF_FEATURES)
    if not msg.addressees:
        x[:-1, plain : plain + len(PLAIN_FEATURES)] = x[:-1, : len(PAIR_FEATURES)]
    if window and threads is not None and topics:
        x[:-1, plain + len(PLAIN_FEATURES) :] = topic_features(msg, window, cos, threads)
    return x


def _best(cos: list[float | None]) -> float:
    """The largest cosine of ``cos`` (None: no vector), 0.0 when none is finite: ``np.nanmax`` without the
    per-call cost of numpy on a few dozen values (called per message and per topic)."""
    known = [v for v in cos if v is not None]
    return max(known) if any(math.isfinite(v) for v in known) else 0.0


def topic_features(msg: LinkMsg, window: list[LinkMsg], cos: list[float | None] | None, threads: Threads) -> np.ndarray:
    """:data:`TOPIC_FEATURES` of every window message (zeros for one whose topic is unknown); ``cos[i]`` the
    message's cosine to ``window[i]`` (None: a vector is missing; ``cos`` None: no vectors at all)."""
    n = len(window)
    x = np.zeros((n, len(TOPIC_FEATURES)), dtype=np.float64)
    topic = [threads.topic_of.get(m.message_id) for m in window]
    members: dict[str, list[int]] = {}
    for i, t in enumerate(topic):
        if t is not None:
            members.setdefault(t, []).append(i)
    facts: dict[str, tuple[float, float, bool, bool]] = {}
    for t, ix in members.items():
        words = set().union(*(window[i].keywords for i in ix))
        shared = len(words & msg.keywords) / max(len(msg.keywords), 2) if msg.keywords else 0.0
        best = _best([cos[i] for i in ix]) if cos is not None else 0.0
        senders = {window[i].sender for i in ix}
        facts[t] = (shared, best, msg.sender in senders, any(a in senders for a in msg.addressees))
    top = max((f[1] for f in facts.values()), default=0.0)
    for i, t in enumerate(topic):
        if t is None:
            continue
        ix = members[t]
        later = len(ix) - 1 - ix.index(i)
        shared, best, has_sender, has_addressee = facts[t]
        x[i] = (
            float(later == 0),
            math.log1p(later),
            math.log1p(len(ix)),
            shared,
            best,
            best - top if cos is not None else 0.0,
            float(has_sender),
            float(has_addressee),
            math.log1p(n - 1 - ix[-1]),
            float(cos is None),
        )
    return x
