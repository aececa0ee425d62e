"""One turn later: is a two-person chat's shift taken back? (issue 46)

The shift model (:mod:`agents.segment_shift`) decides when a turn arrives, so it sees only what came
before. One turn later the evidence is two-sided: the next turn either goes on from the shift turn (a new
topic) or from the turns before it (an aside, a follow-up question, a short answer to the old subject). The
revision is a second logistic over :data:`REVISE_FEATURES`, read only for a turn the shift model called a
shift: that turn's own log-odds and features, the next turn's log-odds against the window as it is and
without the shift turn, and a TextTiling-style reading of the boundary with a block on each side — the
next turn's and the pair's mean cosine to the last :data:`LOOK` turns before the shift, to the shift turn
and to the turn before it, the same read one gap earlier, and the share of content words (jieba words in
Chinese) they share. Cosines are z-scores against the chat's own neighbour cosines, as in the shift model,
so one weight file serves every embedder; a block is read as the mean of its pairwise cosines (the cosine of
two block means is not on that scale: E5's common direction lifts it far more than MiniLM's).

When the revision's probability falls below ``ShiftWeights.revise_threshold`` the segmenter merges the
one-turn topic back into the topic it left (MERGED, ``shift-revised``), so nothing already emitted is
rewritten. Fitted with the shift model by ``python -m bench.tiage_train``.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from agents.reply_linker import LinkMsg
from agents.segment_shift import SHIFT_FEATURES, STATS, ShiftWeights, logistic, reference

if TYPE_CHECKING:
    from agents.segment_state import ChatPool

__all__ = ["LOOK", "LOOK_FEATURES", "REVISE_FEATURES", "look_features", "next_look", "revise_p", "revise_row"]

LOOK = 3  # turns before the shift turn read as the topic it left

LOOK_FEATURES = (
    "next_two",  # mean cosine of the shift turn and the next one to the LOOK turns before it (z)
    "next_prev",  # the next turn's cosine to the turn before the shift (z)
    "next_turn",  # ... to the shift turn (z)
    "next_left",  # ... mean cosine to the LOOK turns before the shift (z)
    "gap_prev",  # the turn before the shift and the shift turn against the LOOK turns before them (z)
    "kw_two",  # Jaccard of the content words of the LOOK + 1 turns before the shift and of the pair
    "kw_next_left",  # share of the next turn's content words used in those turns
    "kw_next_turn",  # share of the next turn's content words used in the shift turn
)

REVISE_FEATURES = (
    "bias",
    "logit_turn",  # the shift turn's own log-odds when it arrived
    "logit_next",  # the next turn's log-odds against the window as it is (the shift turn last)
    "logit_next_skip",  # ... against the window without the shift turn
    *(f"turn_{name}" for name in SHIFT_FEATURES[1:]),  # the shift turn's features
    *LOOK_FEATURES,
)


def _pair_mean(a: np.ndarray, b: np.ndarray) -> float:
    return float((a @ b.T).mean())


def _share(words: frozenset[str], among: frozenset[str]) -> float:
    return len(words & among) / len(words) if words else 0.0


def look_features(
    before: list[LinkMsg], turn: LinkMsg, nxt: LinkMsg, before_vectors: list[np.ndarray | None],
    turn_vector: np.ndarray | None, next_vector: np.ndarray | None,
) -> np.ndarray:  # fmt: skip
    """The next turn ``nxt`` and the shift turn ``turn`` against the turns ``before`` it (oldest first; the
    last :data:`STATS` of their vectors, None where missing), in :data:`LOOK_FEATURES` order."""
    left_words = frozenset().union(*(m.keywords for m in before[-LOOK - 1 :]))
    words = {
        "kw_two": _jaccard(left_words, turn.keywords | nxt.keywords),
        "kw_next_left": _share(nxt.keywords, left_words),
        "kw_next_turn": _share(nxt.keywords, turn.keywords),
    }
    vectors = _vector_looks(before_vectors, turn_vector, next_vector)
    values = {**vectors, **words}
    return np.asarray([values[name] for name in LOOK_FEATURES], dtype=np.float64)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _vector_looks(
    before_vectors: list[np.ndarray | None], turn_vector: np.ndarray | None, next_vector: np.ndarray | None
) -> dict[str, float]:
    names = LOOK_FEATURES[:5]
    if turn_vector is None or next_vector is None or not before_vectors or before_vectors[-1] is None:
        return dict.fromkeys(names, 0.0)
    known = [v for v in before_vectors[-STATS:] if v is not None and v.shape == turn_vector.shape]
    ref = reference(known) if len(known) >= 2 else None
    if ref is None:
        return dict.fromkeys(names, 0.0)
    mu, sd, _ = ref
    left = np.asarray(known[-LOOK:], dtype=np.float64)
    pair = np.asarray([turn_vector, next_vector], dtype=np.float64)
    nxt, prev = pair[1:], left[-1]
    earlier = np.asarray(known[-LOOK - 1 : -1], dtype=np.float64)
    gap = (_pair_mean(np.asarray([prev, pair[0]]), earlier) - mu) / sd if len(earlier) else 0.0
    return {
        "next_two": (_pair_mean(pair, left) - mu) / sd,
        "next_prev": (float(nxt[0] @ prev) - mu) / sd,
        "next_turn": (float(nxt[0] @ pair[0]) - mu) / sd,
        "next_left": (_pair_mean(nxt, left) - mu) / sd,
        "gap_prev": gap,
    }


def next_look(pool: ChatPool, msg: LinkMsg, vector: np.ndarray | None) -> np.ndarray:
    """:func:`look_features` of a message of ``pool``'s chat before it is stepped: the pool's last turn is
    the shift turn."""
    from agents.segment_link import decode_vec

    vectors = [decode_vec(v) for v in pool.window_vectors[-STATS - 1 :]]
    before_vectors, turn_vector = vectors[:-1], vectors[-1] if vectors else None
    return look_features(pool.window[:-1], pool.window[-1], msg, before_vectors, turn_vector, vector)


def revise_row(
    turn: np.ndarray, logit_turn: float, logit_next: float, logit_next_skip: float, look: np.ndarray
) -> np.ndarray:
    """The revision's features in :data:`REVISE_FEATURES` order (``turn``: the shift turn's features in
    ``SHIFT_FEATURES`` order; log-odds as ``shift_logit`` gives them; ``look``: :func:`look_features`)."""
    head = np.asarray([1.0, logit_turn, logit_next, logit_next_skip], dtype=np.float64)
    return np.concatenate([head, np.asarray(turn, dtype=np.float64)[1:], look])


def revise_p(row: np.ndarray, weights: ShiftWeights) -> float:
    """The probability, read one turn later, that a turn the model called a shift is one (``row``:
    :func:`revise_row`). Weights missing from the file count as 0."""
    w = np.asarray([weights.revise.get(name, 0.0) for name in REVISE_FEATURES], dtype=np.float64)
    return logistic(float(row @ w))
