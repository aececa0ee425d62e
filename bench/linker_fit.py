"""The reply linker's fitting core for :mod:`bench.train_linker`: a conditional-logit ranking network.

Each example is one annotated message with its candidate parents (the window and itself); the loss is the
negative log of the softmax mass on the gold parents. The score of a candidate is ``x·w + tanh(x·W1 + b1)·v``
over its feature row (``hidden=0``: linear). Features are standardised for training and the scaling is folded
back into the weights, so the shipped network reads raw features. Fitted by minibatch Adam with a cosine
learning-rate schedule and weight decay; ``seeds > 1`` fits that many networks and averages them, which is
one network with their hidden units side by side (their output weights divided by the number of seeds).
Deterministic for a given seed and example order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from agents.reply_linker import FEATURES, HiddenLayer, LinkerWeights

CANDIDATES = 61  # window (60) + the message itself


class Ranked(Protocol):
    x: np.ndarray
    gold: np.ndarray


@dataclass
class Params:
    """A fitted scorer in raw-feature space (``w1`` None: linear)."""

    w: np.ndarray
    w1: np.ndarray | None = None
    b1: np.ndarray | None = None
    v: np.ndarray | None = None

    def scores(self, x: np.ndarray) -> np.ndarray:
        s = x @ self.w.astype(x.dtype)
        if self.w1 is None:
            return s
        return s + np.tanh(x @ self.w1.astype(x.dtype) + self.b1.astype(x.dtype)) @ self.v.astype(x.dtype)

    def to_weights(self, window: int, meta: dict[str, object] | None = None) -> LinkerWeights:
        weights = {name: round(float(v), 5) for name, v in zip(FEATURES, self.w, strict=True)}
        hidden = None
        if self.w1 is not None and self.w1.shape[1]:
            hidden = HiddenLayer(
                w1={
                    name: [round(float(a), 5) for a in row]
                    for name, row in zip(FEATURES, self.w1, strict=True)
                },
                b1=[round(float(a), 5) for a in self.b1],
                v=[round(float(a), 5) for a in self.v],
            )
        return LinkerWeights(weights=weights, hidden=hidden, window=window, meta=meta or {})

    @classmethod
    def from_weights(cls, lw: LinkerWeights) -> Params:
        return cls(*lw.arrays())


def pad(examples: list[Ranked]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Examples with a gold candidate as arrays ``(n, CANDIDATES, features)``, a candidate mask, the gold mask."""
    use = [e for e in examples if e.gold.any()]
    width = max((len(e.gold) for e in use), default=1)
    x = np.zeros((len(use), max(width, 1), len(FEATURES)), dtype=np.float32)
    mask = np.zeros(x.shape[:2], dtype=bool)
    gold = np.zeros(x.shape[:2], dtype=bool)
    for r, e in enumerate(use):
        n = len(e.gold)
        x[r, :n] = e.x
        mask[r, :n] = True
        gold[r, :n] = e.gold
    return x, mask, gold


def _loss_grad(p: dict[str, np.ndarray], xs: np.ndarray, mask: np.ndarray, gold: np.ndarray):
    h = np.tanh(xs @ p["W1"] + p["b1"])
    s = np.where(mask, xs @ p["w"] + h @ p["v"], -1e9)
    e = np.exp(s - s.max(1, keepdims=True)) * mask
    z, zg = e.sum(1), (e * gold).sum(1)
    loss = float(np.sum(np.log(z) - np.log(np.maximum(zg, 1e-30))))
    c = e / z[:, None] - (e * gold) / np.maximum(zg, 1e-30)[:, None]  # softmax minus gold posterior
    dh = c[:, :, None] * p["v"] * (1 - h * h)
    grads = {
        "w": np.einsum("bc,bcf->f", c, xs),
        "W1": np.einsum("bcf,bch->fh", xs, dh, optimize=True),
        "b1": dh.sum((0, 1)),
        "v": np.einsum("bc,bch->h", c, h),
    }
    return loss, grads


def fit_one(
    x: np.ndarray,
    mask: np.ndarray,
    gold: np.ndarray,
    hidden: int = 32,
    epochs: int = 8,
    wd: float = 1e-4,
    seed: int = 0,
    lr: float = 3e-3,
    batch: int = 256,
) -> Params:
    rows = x[mask]
    mu = rows.mean(0) if len(rows) else np.zeros(x.shape[2], np.float32)
    sd = (rows.std(0) if len(rows) else np.zeros(x.shape[2], np.float32)) + 1e-3
    del rows
    rng = np.random.default_rng(seed)
    f = x.shape[2]
    p = {
        "w": np.zeros(f, np.float32),
        "W1": rng.normal(0, 1 / np.sqrt(f), (f, hidden)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        "v": rng.normal(0, 0.1, hidden).astype(np.float32),
    }
    m1 = {k: np.zeros_like(a) for k, a in p.items()}
    m2 = {k: np.zeros_like(a) for k, a in p.items()}
    steps, t = max(1, epochs * -(-len(x) // batch)), 0
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for i in range(0, len(x), batch):
            sel = np.sort(order[i : i + batch])
            xs = (x[sel] - mu) / sd
            _, g = _loss_grad(p, xs, mask[sel], gold[sel])
            t += 1
            rate = lr * 0.5 * (1 + np.cos(np.pi * t / steps))
            for k in p:
                gk = g[k] / len(sel) + wd * p[k]
                m1[k] = 0.9 * m1[k] + 0.1 * gk
                m2[k] = 0.999 * m2[k] + 0.001 * gk * gk
                p[k] -= rate * (m1[k] / (1 - 0.9**t)) / (np.sqrt(m2[k] / (1 - 0.999**t)) + 1e-8)
    w1 = p["W1"] / sd[:, None]
    return Params(p["w"] / sd, w1, p["b1"] - (mu / sd) @ p["W1"], p["v"])


def fit(
    examples: list[Ranked], hidden: int = 32, epochs: int = 8, wd: float = 1e-4, seeds: int = 1
) -> Params:
    """The averaged network of ``seeds`` fits (seeds 0..seeds-1) on these examples."""
    x, mask, gold = pad(examples)
    fitted = [fit_one(x, mask, gold, hidden, epochs, wd, seed) for seed in range(max(1, seeds))]
    k = len(fitted)
    w = sum(q.w for q in fitted) / k
    if hidden == 0:
        return Params(w)
    return Params(
        w,
        np.concatenate([q.w1 for q in fitted], axis=1),
        np.concatenate([q.b1 for q in fitted]),
        np.concatenate([q.v for q in fitted]) / k,
    )
