"""The router's learned final layer: a multinomial logistic model over the cue-word rules (as features, not
as the decision) and the question's framing words, fitted on labelled questions (``bench.locomo_router``).

``features`` and ``RouterModel.logits`` are pure; ``fit`` is a small L2-regularised softmax regression
(scipy L-BFGS). The packaged weights are ``router_weights.json`` next to this module, with their training
data and cross-validated accuracy in ``provenance``; they are read lazily, once per file.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from retrieval.router.classifier import (
    _PERFECT,
    _SET_COPULA,
    _TWO_NAMES,
    CUES,
    QUERY_TYPES,
    cue_hits,
    plural_head,
    rule_logits,
    skeleton,
    time_cues,
)

PACKAGED = Path(__file__).with_name("router_weights.json")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]+")
_LEXICAL = ("w:", "b:", "h:", "h1:", "c:", "cc:")  # word features: kept when seen often enough in training


def rule_features(query: str) -> dict[str, float]:
    """Each cue pattern and time cue as a binary feature, plus the rules' summed scores (scaled). Pure."""
    low = query.lower()
    hits = cue_hits(query)
    out: dict[str, float] = {}
    for qtype, cues in CUES.items():
        for i in range(len(cues)):
            if (qtype, i) in hits:
                out[f"cue:{qtype}:{i}"] = 1.0
    tq = time_cues(query)
    flags = {"asks_when": tq["asks_when"], "asks_order": tq["asks_order"], "relation": tq["relation"],
             "asks_latest": tq["asks_latest"], "window": tq["window"], "plural_head": plural_head(low),
             "perfect": bool(_PERFECT.search(query)), "set_copula": bool(_SET_COPULA.search(low)),
             "two_names": bool(_TWO_NAMES.search(query))}  # fmt: skip
    out |= {f"flag:{k}": 1.0 for k, v in flags.items() if v}
    out |= {f"rule:{t}": v / 3.0 for t, v in rule_logits(query).items() if v}
    return out


def word_features(query: str) -> dict[str, float]:
    """Framing words: English words and word pairs of the question with names masked, its first words; CJK
    characters and character pairs (names are not masked there: most are single characters' noise). Pure."""
    text = skeleton(query).lower()
    words = _WORD.findall(text)
    out: dict[str, float] = {f"w:{w}": 1.0 for w in words}
    out |= {f"b:{a}_{b}": 1.0 for a, b in zip(words, words[1:], strict=False)}
    if words:
        out[f"h:{'_'.join(words[:2])}"] = 1.0
        out[f"h1:{words[0]}"] = 1.0
    for run in _CJK.findall(text):
        out |= {f"c:{ch}": 1.0 for ch in run}
        out |= {f"cc:{run[i:i + 2]}": 1.0 for i in range(len(run) - 1)}
    out["q:question_mark"] = float(text.rstrip().endswith(("?", "？")))
    return out


def features(query: str) -> dict[str, float]:
    return rule_features(query) | word_features(query) | {"bias": 1.0}


class RouterModel(BaseModel):
    """Softmax regression: ``logits = W x`` over named features (unknown features are ignored)."""

    model_config = ConfigDict(frozen=True)

    classes: list[str] = Field(default_factory=lambda: list(QUERY_TYPES))
    features: list[str]
    weights: list[list[float]]  # len(classes) x len(features)
    provenance: dict = Field(default_factory=dict)
    _compiled: tuple[dict[str, int], np.ndarray] | None = PrivateAttr(default=None)

    def matrix(self) -> tuple[dict[str, int], np.ndarray]:
        if self._compiled is None:
            self._compiled = ({f: j for j, f in enumerate(self.features)}, np.asarray(self.weights, dtype=float))
        return self._compiled

    def logits(self, feats: dict[str, float]) -> dict[str, float]:
        index, w = self.matrix()
        x = np.zeros(len(index), dtype=np.float64)
        for name, value in feats.items():
            j = index.get(name)
            if j is not None:
                x[j] = value
        z = w @ x
        return {t: float(z[i]) for i, t in enumerate(self.classes)}

    def predict(self, query: str) -> str:
        logits = self.logits(features(query))
        return max(self.classes, key=lambda t: logits[t])


def vocabulary(rows: list[dict[str, float]], min_count: int = 2) -> list[str]:
    """Feature names seen in at least ``min_count`` training questions (rule features always kept)."""
    counts: dict[str, int] = {}
    for r in rows:
        for name in r:
            counts[name] = counts.get(name, 0) + 1
    keep = [n for n, c in counts.items() if c >= min_count or not n.startswith(_LEXICAL)]
    return sorted(keep)


def fit(
    rows: list[dict[str, float]],
    labels: list[str],
    *,
    c: float = 1.0,
    sample_weight: list[float] | None = None,
    min_count: int = 2,
    classes: tuple[str, ...] = QUERY_TYPES,
) -> RouterModel:
    """L2-regularised multinomial logistic regression (``c``: inverse regularisation strength, the bias
    unpenalised). Deterministic: L-BFGS from zero."""
    from scipy.optimize import minimize
    from scipy.sparse import csr_matrix

    names = vocabulary(rows, min_count)
    index = {n: j for j, n in enumerate(names)}
    cells = [(i, index[n], v) for i, r in enumerate(rows) for n, v in r.items() if n in index]
    x = csr_matrix(([v for *_, v in cells], ([i for i, *_ in cells], [j for _, j, _ in cells])),
                   shape=(len(rows), len(names)))  # fmt: skip
    y = np.zeros((len(rows), len(classes)))
    y[np.arange(len(rows)), [classes.index(lab) for lab in labels]] = 1.0
    sw = np.asarray(sample_weight if sample_weight is not None else [1.0] * len(rows))
    penal = np.ones(len(names))
    penal[index["bias"]] = 0.0
    k, d = len(classes), len(names)

    def loss(flat):
        w = flat.reshape(k, d)
        z = np.asarray(x @ w.T)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        nll = -(sw * (y * np.log(p + 1e-12)).sum(axis=1)).sum()
        reg = 0.5 / c * float((w**2 * penal).sum())
        grad = np.asarray(x.T @ ((p - y) * sw[:, None])).T + w * penal / c
        return nll + reg, grad.ravel()

    res = minimize(loss, np.zeros(k * d), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    w = res.x.reshape(k, d)
    return RouterModel(classes=list(classes), features=names, weights=[[round(float(v), 5) for v in row] for row in w])


@lru_cache(maxsize=4)
def load_model(path: str) -> RouterModel | None:
    """``"auto"``: the packaged weights; ``"rules"``: none (the hand-set combination decides); else a path."""
    if path == "rules":
        return None
    file = PACKAGED if path == "auto" else Path(path)
    if not file.exists():
        return None
    return RouterModel.model_validate(json.loads(file.read_text(encoding="utf-8")))
