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

from agents.reply_pairs import PairFacts, among, later_than, log1p_ints, pair_columns, topic_codes
from agents.reply_window import WindowCols

__all__ = [
    "FEATURES", "PAIR_FEATURES", "SELF_FEATURES", "TOPIC_FEATURES", "LinkMsg", "Threads",
    "candidate_matrix", "pair_columns", "self_features", "text_cues", "topic_columns",
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


def self_features(msg: LinkMsg, window: list[LinkMsg], facts: PairFacts) -> np.ndarray:
    x = np.zeros(len(FEATURES), dtype=np.float64)
    base = len(PAIR_FEATURES)
    prev_ts = window[-1].ts if window else msg.ts
    values = (
        1.0,
        float(bool(msg.addressees)),
        float(msg.question),
        float(msg.greeting),
        float(not facts.sender_known),
        msg.length,
        float(facts.sender_addressed),
        math.log1p(max(0.0, msg.ts - prev_ts) / 60.0),
    )
    x[base : base + len(values)] = values
    return x


def candidate_matrix(
    msg: LinkMsg,
    window: list[LinkMsg],
    cosines: np.ndarray | None,
    threads: Threads | None = None,
    topics: bool = True,
    cols: WindowCols | None = None,
) -> np.ndarray:
    """One row per candidate: ``window[0..n-1]`` then the message itself (the self-link, last row); the
    :data:`TOPIC_FEATURES` columns stay zero without ``threads`` or with ``topics=False`` (weights that ignore
    them). ``cols``: the window's columns when the caller keeps them (else they are built here)."""
    x = np.zeros((len(window) + 1, len(FEATURES)), dtype=np.float64)
    cos = None if cosines is None else np.asarray(cosines, dtype=np.float64)
    facts = PairFacts(False, False)
    if window:
        if cols is None or len(cols) != len(window) or cols.window[0] is not window[0] or cols.window[-1] is not window[-1]:
            cols = WindowCols.build(window)
        words = msg.keywords
        shared = [k & words for k in cols.keywords] if words else [frozenset()] * len(window)
        topic_ids = topic_codes(cols.ids, threads.topic_of) if threads is not None else None
        pairs, facts = pair_columns(msg, cols, shared, cos, threads, topic_ids)
        x[:-1, : len(PAIR_FEATURES)] = pairs.T
    x[-1] = self_features(msg, window, facts)
    plain = len(PAIR_FEATURES) + len(SELF_FEATURES)
    if not msg.addressees:
        x[:-1, plain : plain + len(PLAIN_FEATURES)] = x[:-1, : len(PAIR_FEATURES)]
    if window and threads is not None and topics:
        x[:-1, plain + len(PLAIN_FEATURES) :] = topic_columns(msg, cols, shared, cos, topic_ids).T
    return x


def topic_columns(
    msg: LinkMsg,
    cols: WindowCols,
    shared: list[frozenset[str]],
    cos: np.ndarray | None,
    topics: tuple[np.ndarray, dict[str, int]],
) -> np.ndarray:
    """:data:`TOPIC_FEATURES` of every window message, one row per feature (zeros for a message whose topic is
    unknown); ``shared[i]`` the content words of the message in the i-th, ``cos[i]`` its cosine to it (NaN: a
    vector is missing; ``cos`` None: no vectors at all). Each topic's values are computed once, in a column
    per topic (and a last column of zeros for the unknown one), and spread to the messages in one gather."""
    n = len(cols)
    t, codes = topics
    if not codes:
        return np.zeros((len(TOPIC_FEATURES), n), dtype=np.float64)
    k, tl = len(codes), t.tolist()
    known = t >= 0
    tt = np.where(known, t, k)  # the unknown topic: the zero column
    logs = log1p_ints(n + 1)
    member = t[:, None] == np.arange(k)  # [i, topic]
    per = np.zeros((len(TOPIC_FEATURES), k + 1), dtype=np.float64)
    per[2, :k] = logs[np.add.reduce(member, 0)]  # topic_size
    if msg.keywords:  # topic_keywords
        words: list[set[str]] = [set() for _ in range(k)]
        for i, sh in enumerate(shared):
            if sh and tl[i] >= 0:
                words[tl[i]] |= sh
        per[3, :k] = np.asarray([len(w) for w in words]) / max(len(msg.keywords), 2)
    if cos is not None:
        best = np.full(k, np.nan)
        np.fmax.at(best, t[known], cos[known])  # the topic's largest cosine (NaN: none known)
        best[np.isnan(best)] = 0.0
        per[4, :k] = best  # topic_cosine
        per[5, :k] = best - np.maximum.reduce(best)  # topic_cosine_gap
    codes_of = cols.codes
    per[6, t[(cols.sender == codes_of.get(msg.sender, -2)) & known]] = 1.0  # topic_has_sender
    addressed = among(cols.sender, [codes_of[a] for a in msg.addressees if a in codes_of])
    per[7, t[addressed & known]] = 1.0  # topic_has_addressee
    per[8, :k] = logs[member[::-1].argmax(0)]  # topic_idle: messages after the topic's latest
    per[9, :k] = cos is None  # topic_no_vector
    x = per[:, tt]
    later = np.add.reduce((t[:, None] == t) & later_than(n), 1)  # messages of the same topic after it
    x[0] = (later == 0) & known  # topic_latest
    x[1] = logs[later] * known  # topic_later (log1p >= 0: times 0 is +0.0)
    return x
