"""Topic shifts in two-person chats: a small learned model (issues 13 and 46).

In a dialogue every turn answers the previous one, so the reply linker is silent and who-talks-to-whom says
nothing about topics; the segmenter's join score then rests on content alone and over-splits (a short
answer shares no words with the question it answers). This model reads the turn against the chat's recent
turns and gives the probability that the turn starts a new topic. It is logistic over
:data:`SHIFT_FEATURES`, fitted on TIAGE's training dialogues by ``python -m bench.tiage_train`` (weights and
provenance in ``segment_shift_weights.json``); the segmenter uses it when ``SegmenterConfig.dyadic_shift``
is on and the chat's window holds two people.

Similarities mean the same for every embedder: a cosine is read against the chat's own recent cosines
between neighbouring turns (a z-score and a percentile), never as a raw value. Embedders differ in their
band (MiniLM spreads related and unrelated turns over most of [0, 1], multilingual E5 packs them into a few
hundredths near 0.9), so one raw threshold cannot serve both; the chat's own distribution can. Lengths
are read against the chat's own too (a Chinese turn is a third of the characters of its English
translation). The decision is made when the turn arrives (the stream does not wait for the next turns), so
the "depth" is one-sided: how far the turn falls below the recent cohesion of the conversation.

One turn later the decision may be taken back, on two-sided evidence (:mod:`agents.segment_revise`).

Cues of a new request or of a closed one ("by the way", "另外", "还有一个问题"; "thanks, bye", "好的，谢谢")
are features with learned weights, never rules that decide alone.

Pure: no I/O beyond reading the shipped weight file once.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.reply_linker import LinkMsg
from language.text import extract_keywords

if TYPE_CHECKING:
    from agents.segment_state import ChatPool

__all__ = [
    "SHIFT_FEATURES",
    "STATS",
    "ShiftWeights",
    "carries_no_topic",
    "closing_cue",
    "default_shift_weights",
    "dyad_features",
    "is_dyadic",
    "logistic",
    "new_topic_cue",
    "reaction_cue",
    "reference",
    "shift_features",
    "shift_logit",
    "shift_p",
    "skip_features",
]

CONTEXT = 4  # turns of context read
STATS = 16  # recent turns whose neighbour cosines are the chat's reference distribution

SHIFT_FEATURES = (
    "bias",
    "z_prev",  # cosine to the previous turn, as a z-score against the chat's neighbour cosines
    "z_prev2",  # ... to the turn before it (the sender's own last turn)
    "z_ctx",  # ... mean cosine to the last CONTEXT turns
    "z_max",  # ... the best cosine to any of them
    "depth",  # how far the cosine to the previous turn falls below the last few neighbour cosines
    "pct_prev",  # share of the chat's neighbour cosines below the cosine to the previous turn
    "no_vector",  # no vectors, or too few turns for a reference distribution
    "kw_prev",  # Jaccard of content words with the previous turn
    "kw_ctx",  # share of the turn's content words used in the last CONTEXT turns
    "kw_none",  # the turn has no content words
    "question",
    "prev_question",  # the previous turn asked (this one likely answers)
    "question_x_new",  # asks, with content words not in the context (a new question)
    "length_rel",  # log of the turn's length over the chat's recent mean
    "prev_length_rel",
    "log_turn",  # log1p(turns in the chat so far)
    "thanks",
    "prev_thanks",
    "greeting",
    "cue_new",  # opens with a marker of a new request or subject
    "prev_close",  # the previous turn closed something (thanks, goodbye, "anything else?")
)

# discourse markers, matched near the start of a turn (a marker deep in a sentence rarely opens a subject)
_NEW_TOPIC_RE = re.compile(
    r"\b(by the way|btw|one more thing|one last thing|another (question|thing)|on another note|"
    r"(changing|change) the subject|unrelated|while i have you|before i forget|speaking of|also[,:]|"
    r"i (also|too) (need|want|would like)|i'?d also like|can (you|i) also|oh,? and|anyway)\b|"
    r"另外|还有一个|还有件|还有个|还有，|对了|顺便|再问|换个话题|说到|话说|还想问|另一个问题|此外|除此之外",
    re.I,
)
_CLOSING_RE = re.compile(
    r"\b(thanks?|thank you|you'?re welcome|no problem|bye|goodbye|have a (nice|good|great) (day|one)|"
    r"that'?s all|anything else|glad (to|i could) help|sounds good|perfect|great)\b|"
    r"谢谢|不客气|没问题|再见|没有了|就这些|还有(什么|别的)|知道了|明白了|好的$|好吧$|行$",
    re.I,
)


# reactions and acknowledgements that open a turn: the turn answers the one before it ("ok, I'll bring water",
# "好，我带点水"), whatever else it says
_REACTION_RE = re.compile(
    r"^(?:(?:yes|yeah|yep|yup|ok|okay|sure|oh|ah|aha|ha(?:ha)+|lol|cool|nice|great|awesome|right|true|wow|"
    r"i see|got it|sounds (?:good|great|fun)|agreed|exactly|same|me too|really|hmm+|alright|fine|of course|"
    r"definitely|indeed|no way|thanks?|thank you|you'?re welcome|no problem|bye|goodbye|that'?s (?:great|nice|cool|awesome|good|too bad|sad|funny|interesting|true))\b|"
    r"好(?![久多像])|行|嗯|哦|噢|啊|对(?!了)|是的|可以|没问题|收到|明白|知道了|哈哈|那|也行|真的|不错|确实|没事|太好了|谢谢|不客气|再见)",
    re.I,
)


def reaction_cue(text: str) -> bool:
    """The turn opens by reacting to the previous one (an acknowledgement, an agreement, "oh nice", "好的")."""
    return _REACTION_RE.match(re.sub(r"^[\W_]+", "", text.strip())) is not None


def carries_no_topic(text: str) -> bool:
    """The turn only reacts to the one before it: it has no content word, or it opens with an acknowledgement
    and has at most one ("ok", "好的", "多少钱？", "好，我去看看", "那我周末去拿"), and no marker of a new
    subject. Such a turn continues the topic it answers; it cannot open one, whatever its vector says (a
    two-character "好的" sits far from every content line, so its similarities alone read as a shift).
    Content words are the retrieval's (:func:`language.text.extract_keywords`), which leave out generic ones
    ("多少钱", "really") that the join score's own keywords keep."""
    if new_topic_cue(text):
        return False
    words = extract_keywords(text)
    return not words or (len(words) <= 1 and reaction_cue(text))


def new_topic_cue(text: str) -> bool:
    """The turn opens with a marker of a new request or subject (within its first few words)."""
    m = _NEW_TOPIC_RE.search(text)
    return m is not None and m.start() <= (12 if re.search(r"[\u4e00-\u9fff]", text[: m.start() + 1]) else 30)


def closing_cue(text: str) -> bool:
    """A short turn that closes an exchange (thanks, goodbye, "anything else?")."""
    return len(text) <= 120 and _CLOSING_RE.search(text.strip().rstrip("。.!！~ ")) is not None


class ShiftWeights(BaseModel):
    model_config = ConfigDict(frozen=True)

    weights: dict[str, float]
    threshold: float = 0.5  # a turn shifts when its probability reaches this
    revise: dict[str, float] = Field(default_factory=dict)  # segment_revise.REVISE_FEATURES; empty: no revision
    revise_threshold: float = 0.0  # a shift is withdrawn one turn later when revise_p falls below this
    meta: dict[str, object] = Field(default_factory=dict)

    def vector(self) -> np.ndarray:
        return np.asarray([self.weights.get(name, 0.0) for name in SHIFT_FEATURES], dtype=np.float64)


@cache
def default_shift_weights(path: str | None = None) -> ShiftWeights:
    """The shipped weights, or a file of your own (``python -m bench.tiage_train --out FILE``)."""
    if path:
        raw = Path(path).read_text(encoding="utf-8")
    else:
        raw = resources.files("agents").joinpath("segment_shift_weights.json").read_text()
    return ShiftWeights.model_validate(json.loads(raw))


GROUP_DIALOGUE_TURNS = 6  # earlier turns of two people alone before a group chat reads as a dialogue


def is_dyadic(msg: LinkMsg, window: list[LinkMsg], private: bool = True) -> bool:
    """Two people (or one) in the window and this message, and at least one earlier turn; in a group chat at
    least ``GROUP_DIALOGUE_TURNS`` of them (a group's first two speakers are not a dialogue yet)."""
    need = 1 if private else GROUP_DIALOGUE_TURNS
    return len(window) >= need and len({msg.sender, *(m.sender for m in window)}) <= 2


def reference(vecs: list[np.ndarray]) -> tuple[float, float, list[float]] | None:
    """Mean and spread of the cosines between neighbouring turns (all pairs while there are fewer than
    three neighbours); the spread is floored at a tenth of the distance to 1, which scales with the
    embedder's band."""
    mat = np.asarray(vecs, dtype=np.float64)
    sims = mat @ mat.T
    adjacent = [float(sims[i - 1, i]) for i in range(1, len(vecs))]
    ref = adjacent if len(adjacent) >= 3 else [float(sims[i, j]) for i in range(len(vecs)) for j in range(i)]
    if len(ref) < 2:
        return None
    mu = float(np.mean(ref))
    sd = max(float(np.std(ref)), 0.1 * (1.0 - mu), 1e-3)
    return mu, sd, adjacent


def _vector_values(vector: np.ndarray | None, window_vectors: list[np.ndarray | None]) -> dict[str, float]:
    names = ("z_prev", "z_prev2", "z_ctx", "z_max", "depth", "pct_prev")
    usable = vector is not None and bool(window_vectors) and window_vectors[-1] is not None
    known = [v for v in window_vectors[-STATS:] if v is not None and vector is not None and v.shape == vector.shape]
    ref = reference(known) if usable and len(known) >= 2 else None
    if ref is None or vector is None:
        return {**dict.fromkeys(names, 0.0), "no_vector": 1.0}
    mu, sd, adjacent = ref
    ctx = np.asarray(known[-CONTEXT:], dtype=np.float64) @ vector.astype(np.float64)
    prev, prev2 = float(ctx[-1]), float(ctx[-2]) if len(ctx) >= 2 else float(ctx[-1])
    recent = adjacent[-3:] or [mu]
    return {
        "z_prev": (prev - mu) / sd,
        "z_prev2": (prev2 - mu) / sd,
        "z_ctx": (float(ctx.mean()) - mu) / sd,
        "z_max": (float(ctx.max()) - mu) / sd,
        "depth": (float(np.mean(recent)) - prev) / sd,
        "pct_prev": float(np.mean([a < prev for a in adjacent])) if adjacent else 0.5,
        "no_vector": 0.0,
    }


def _rel_length(n: float, lengths: list[float]) -> float:
    return math.log((n + 0.02) / (float(np.mean(lengths)) + 0.02)) if lengths else 0.0


def shift_features(
    msg: LinkMsg,
    window: list[LinkMsg],
    vector: np.ndarray | None,
    window_vectors: list[np.ndarray | None],
    cue_new: bool = False,
    prev_close: bool = False,
) -> np.ndarray:
    """The turn ``msg`` (unit ``vector`` or None) against the earlier turns ``window`` (oldest first; the
    last :data:`STATS` of their vectors, None where missing), in :data:`SHIFT_FEATURES` order."""
    ctx = window[-CONTEXT:]
    prev = ctx[-1] if ctx else None
    words = msg.keywords
    ctx_words = frozenset().union(*(m.keywords for m in ctx)) if ctx else frozenset()
    kw_prev = 0.0
    if prev is not None and (words | prev.keywords):
        kw_prev = len(words & prev.keywords) / len(words | prev.keywords)
    lengths = [m.length for m in window[-STATS:]]
    values = {
        "bias": 1.0,
        **_vector_values(vector, window_vectors),
        "kw_prev": kw_prev,
        "kw_ctx": len(words & ctx_words) / len(words) if words else 0.0,
        "kw_none": float(not words),
        "question": float(msg.question),
        "prev_question": float(prev is not None and prev.question),
        "question_x_new": float(msg.question and bool(words - ctx_words)),
        "length_rel": _rel_length(msg.length, lengths),
        "prev_length_rel": _rel_length(prev.length, lengths) if prev is not None else 0.0,
        "log_turn": math.log1p(len(window)),
        "thanks": float(msg.thanks),
        "prev_thanks": float(prev is not None and prev.thanks),
        "greeting": float(msg.greeting),
        "cue_new": float(cue_new),
        "prev_close": float(prev_close),
    }
    return np.asarray([values[name] for name in SHIFT_FEATURES], dtype=np.float64)


def dyad_features(pool: ChatPool, msg: LinkMsg, vector: np.ndarray | None, text: str) -> np.ndarray:
    """:func:`shift_features` of a message of ``pool``'s chat before it is stepped (the pool's window and
    its vectors, the previous turn's closing cue)."""
    from agents.segment_link import decode_vec

    vectors = [decode_vec(v) for v in pool.window_vectors[-STATS:]]
    return shift_features(msg, pool.window, vector, vectors, new_topic_cue(text), pool.last_closing)


def skip_features(
    pool: ChatPool, msg: LinkMsg, vector: np.ndarray | None, text: str, closing_before: bool
) -> np.ndarray:
    """:func:`shift_features` of a message of ``pool``'s chat against the window without its last turn
    (``closing_before``: whether the turn before that one closed an exchange)."""
    from agents.segment_link import decode_vec

    vectors = [decode_vec(v) for v in pool.window_vectors[-STATS - 1 : -1]]
    return shift_features(msg, pool.window[:-1], vector, vectors, new_topic_cue(text), closing_before)


def logistic(z: float) -> float:
    """The probability of log-odds ``z``."""
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def shift_logit(x: np.ndarray, weights: ShiftWeights) -> float:
    """The log-odds that the turn with features ``x`` starts a new topic."""
    return float(x @ weights.vector())


def shift_p(x: np.ndarray, weights: ShiftWeights) -> float:
    """The probability that the turn with features ``x`` starts a new topic."""
    return logistic(shift_logit(x, weights))
