"""Topic shifts in two-person chats: a small learned model (issue 13, point 4).

In a dialogue every turn answers the previous one, so the reply linker is silent and who-talks-to-whom says
nothing about topics; the segmenter's join score then rests on content alone and over-splits (a short
answer shares no words with the question it answers). This model reads the turn against the last few turns
of the chat (the linker's window: keywords, question marks, lengths, vectors) and gives the probability
that the turn starts a new topic. It is logistic over :data:`SHIFT_FEATURES`, fitted on TIAGE's training
dialogues by ``python -m bench.tiage_train`` (weights and provenance in ``segment_shift_weights.json``);
the segmenter uses it when ``SegmenterConfig.dyadic_shift`` is on and the chat's window holds two people.

Pure: no I/O beyond reading the shipped weight file once.
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agents.reply_linker import LinkMsg

__all__ = [
    "SHIFT_FEATURES",
    "ShiftWeights",
    "default_shift_weights",
    "is_dyadic",
    "shift_features",
    "shift_p",
]

CONTEXT = 4  # turns of context read

SHIFT_FEATURES = (
    "bias",
    "cos_prev",  # cosine to the previous turn (0 without vectors)
    "cos_prev2",  # ... to the turn before it (the sender's own last turn)
    "cos_ctx",  # ... to the mean of the last CONTEXT turns
    "no_vector",
    "kw_prev",  # Jaccard of content words with the previous turn
    "kw_ctx",  # share of the turn's content words used in the last CONTEXT turns
    "kw_none",  # the turn has no content words
    "question",
    "prev_question",  # the previous turn asked (this one likely answers)
    "question_x_new",  # asks, with content words not in the context (a new question)
    "length",
    "prev_length",
    "log_turn",  # log1p(turns in the chat so far)
    "thanks",
    "greeting",
)


class ShiftWeights(BaseModel):
    model_config = ConfigDict(frozen=True)

    weights: dict[str, float]
    threshold: float = 0.5  # a turn shifts when its probability reaches this
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


def is_dyadic(msg: LinkMsg, window: list[LinkMsg]) -> bool:
    """Two people (or one) in the window and this message, and at least one earlier turn."""
    return bool(window) and len({msg.sender, *(m.sender for m in window)}) <= 2


def _cos(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or a.shape != b.shape:
        return None
    return float(a @ b)


def shift_features(
    msg: LinkMsg, window: list[LinkMsg], vector: np.ndarray | None, window_vectors: list[np.ndarray | None]
) -> np.ndarray:
    """The turn ``msg`` (unit ``vector`` or None) against the earlier turns ``window`` (oldest first, with
    their vectors), in :data:`SHIFT_FEATURES` order."""
    ctx = window[-CONTEXT:]
    vecs = window_vectors[-CONTEXT:] if window_vectors else [None] * len(ctx)
    prev = ctx[-1] if ctx else None
    cos_prev = _cos(vector, vecs[-1]) if vecs else None
    cos_prev2 = _cos(vector, vecs[-2]) if len(vecs) >= 2 else None
    known = [v for v in vecs if v is not None and vector is not None and v.shape == vector.shape]
    cos_ctx = None
    if known:
        mean = np.mean(known, axis=0)
        norm = float(np.linalg.norm(mean))
        cos_ctx = float(mean @ vector) / norm if norm > 0 else None
    words = msg.keywords
    ctx_words = frozenset().union(*(m.keywords for m in ctx)) if ctx else frozenset()
    kw_prev = 0.0
    if prev is not None and (words | prev.keywords):
        kw_prev = len(words & prev.keywords) / len(words | prev.keywords)
    kw_ctx = len(words & ctx_words) / len(words) if words else 0.0
    values = {
        "bias": 1.0,
        "cos_prev": cos_prev or 0.0,
        "cos_prev2": cos_prev2 or 0.0,
        "cos_ctx": cos_ctx or 0.0,
        "no_vector": float(cos_prev is None),
        "kw_prev": kw_prev,
        "kw_ctx": kw_ctx,
        "kw_none": float(not words),
        "question": float(msg.question),
        "prev_question": float(prev is not None and prev.question),
        "question_x_new": float(msg.question and bool(words - ctx_words)),
        "length": msg.length,
        "prev_length": prev.length if prev is not None else 0.0,
        "log_turn": math.log1p(len(window)),
        "thanks": float(msg.thanks),
        "greeting": float(msg.greeting),
    }
    return np.asarray([values[name] for name in SHIFT_FEATURES], dtype=np.float64)


def shift_p(x: np.ndarray, weights: ShiftWeights) -> float:
    """The probability that the turn with features ``x`` starts a new topic."""
    z = float(x @ weights.vector())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
