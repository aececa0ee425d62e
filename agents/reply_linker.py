"""Implicit reply links: which earlier message does a chat message answer? (design doc 001, 3.2.1: the reply
chain is the strongest signal; in IRC-style and busy IM groups most replies are implicit).

A pure ranking model over the last ``window`` messages of the chat plus the message itself (a self-link means
"starts a new conversation"). Each (message, candidate) pair is reduced to a row of features
(:mod:`agents.reply_features`); its score is a linear function of them plus one layer of tanh units
(``score = x·w + tanh(x·W1 + b1)·v``), and a softmax over the candidates gives the probabilities. The weights
ship as ``reply_linker_weights.json``, fitted on the Ubuntu IRC train split by ``python -m
bench.train_linker`` (a conditional-logit ranking model; an ensemble of a few seeds is the same network with
more units; the command, date, a hash of the training files and the held-out figures are in the file's
``meta``, figures in docs/BENCHMARKS.md). Without vectors the semantic features are zero and their
``no_vector`` twins are set, so one weight file serves both.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from agents.reply_features import (
    FEATURES,
    PAIR_FEATURES,
    SELF_FEATURES,
    TOPIC_FEATURES,
    LinkMsg,
    Threads,
    candidate_matrix,
    pair_columns,
    self_features,
    text_cues,
)
from agents.reply_window import WindowCols

__all__ = [
    "FEATURES", "PAIR_FEATURES", "SELF_FEATURES", "TOPIC_FEATURES", "HiddenLayer", "LinkMsg", "LinkerWeights",
    "Threads", "candidate_matrix", "default_weights", "pair_columns", "rank", "self_features", "text_cues",
]  # fmt: skip


class HiddenLayer(BaseModel):
    """``tanh(x·W1 + b1)·v`` over the raw features; ``w1`` maps a feature name to its row of W1 (a feature
    missing from the file has a zero row, so a weight file outlives new features)."""

    model_config = ConfigDict(frozen=True)

    w1: dict[str, list[float]]
    b1: list[float]
    v: list[float]


class LinkerWeights(BaseModel):
    model_config = ConfigDict(frozen=True)

    weights: dict[str, float]  # the linear part, by feature name
    hidden: HiddenLayer | None = None
    window: int = 60
    meta: dict[str, object] = Field(default_factory=dict)
    _arrays: tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None] | None = PrivateAttr(None)
    _topics: bool | None = PrivateAttr(None)

    def vector(self) -> np.ndarray:
        return np.asarray([self.weights.get(name, 0.0) for name in FEATURES], dtype=np.float64)

    def arrays(self) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """``(w, W1, b1, v)`` in :data:`FEATURES` order (the last three None for a linear model)."""
        private = self.__pydantic_private__  # hot path: pydantic's __getattr__ costs ~2 us a read
        if private["_arrays"] is None:
            h = self.hidden
            if h is None or not h.v:
                self._arrays = (self.vector(), None, None, None)
            else:
                zero = [0.0] * len(h.v)
                w1 = np.asarray([h.w1.get(name, zero) for name in FEATURES], dtype=np.float64)
                self._arrays = (self.vector(), w1, np.asarray(h.b1, dtype=np.float64), np.asarray(h.v))
        return private["_arrays"]

    def uses_topics(self) -> bool:
        """Whether any weight reads a :data:`TOPIC_FEATURES` column (else they need not be computed)."""
        private = self.__pydantic_private__
        if private["_topics"] is None:
            w, w1, _, _ = self.arrays()
            cols = [FEATURES.index(name) for name in TOPIC_FEATURES]
            self._topics = bool(np.any(w[cols]) or (w1 is not None and np.any(w1[cols])))
        return private["_topics"]

    def scores(self, x: np.ndarray) -> np.ndarray:
        """One score per row of a :func:`candidate_matrix`."""
        w, w1, b1, v = self.arrays()
        s = x @ w
        return s if w1 is None else s + np.tanh(x @ w1 + b1) @ v


@cache
def default_weights(path: str | None = None) -> LinkerWeights:
    """The shipped weights, or a weight file fitted on your own annotated chats (``python -m
    bench.train_linker --out FILE``, then ``SegmenterConfig.linker_weights = FILE``)."""
    if path:
        raw = Path(path).read_text(encoding="utf-8")
    else:
        raw = resources.files("agents").joinpath("reply_linker_weights.json").read_text()
    return LinkerWeights.model_validate(json.loads(raw))


def rank(
    msg: LinkMsg,
    window: list[LinkMsg],
    cosines: np.ndarray | None = None,
    weights: LinkerWeights | None = None,
    threads: Threads | None = None,
    cols: WindowCols | None = None,
) -> list[tuple[str, float]]:
    """Candidates (message ids; ``msg.message_id`` = a new conversation) with softmax probabilities, best
    first. ``window`` holds the earlier messages of the same chat, oldest first; ``cosines[i]`` is the
    embedding cosine of ``msg`` to ``window[i]`` when vectors exist; ``threads`` the segmenter's topics (the
    shipped weights were fitted with them: without, the topic features read as zero, which training never saw);
    ``cols`` the window's columns when the caller keeps them (:meth:`agents.segment_state.ChatPool.link_cols`)."""
    weights = weights or default_weights()
    window = window[-weights.window :]
    if cosines is not None:
        cosines = np.asarray(cosines)[-len(window) :] if window else None
    scores = weights.scores(candidate_matrix(msg, window, cosines, threads, weights.uses_topics(), cols))
    probs = np.exp(scores - np.maximum.reduce(scores))  # scores.max(), .sum() without their Python wrappers
    probs /= np.add.reduce(probs)
    ids = [w.message_id for w in window] + [msg.message_id]
    order = np.argsort(-probs, kind="stable").tolist()
    p = probs.tolist()
    return [(ids[k], p[k]) for k in order]
