"""The router's classifier as run per query: rules, then the learned model (packaged weights) or the
embedding prototypes when the rules are unsure, then an optional LLM layer, combined by
:func:`retrieval.router.classifier.combine`. Kept apart from the rule layer so the learned model, which
builds its features from the rules, does not import back into them."""

from __future__ import annotations

from typing import Any

import numpy as np

from retrieval.router.classifier import (
    Classification,
    ClassifierConfig,
    PrototypeIndex,
    combine,
    prototype_logits,
    rule_logits,
    skeleton,
)
from retrieval.router.learned import features, load_model


def wants_vector(cfg: ClassifierConfig | None = None) -> bool:
    """Whether :func:`classify` may use the skeleton's embedding: only the prototype layer does, and it runs
    only without a learned model (with one, embedding the skeleton is wasted work)."""
    cfg = cfg or ClassifierConfig()
    return cfg.prototype_weight > 0 and (cfg.model == "rules" or load_model(cfg.model) is None)


async def classify(
    query: str,
    *,
    embedder=None,
    vector: np.ndarray | None = None,
    index: PrototypeIndex | None = None,
    llm: Any | None = None,
    cfg: ClassifierConfig | None = None,
) -> Classification:
    """Classify ``query``; ``vector`` (its embedding of the skeleton) may be passed in to save a call."""
    cfg = cfg or ClassifierConfig()
    rules = rule_logits(query)
    layers: dict[str, dict[str, float]] = {"rules": rules}
    if cfg.model != "rules":
        model = load_model(cfg.model)
        if model is not None:
            layers["learned"] = model.logits(features(query))
            return combine(layers | await _llm_layer(query, llm, cfg), cfg)
    top2 = sorted((v + cfg.prior.get(t, 0.0) for t, v in rules.items()), reverse=True)[:2]
    if top2[0] - top2[1] >= cfg.confident_margin:
        return combine(layers, cfg)
    if embedder is not None and index is not None and cfg.prototype_weight > 0:
        labels, matrix = await index.matrix(embedder)
        if vector is None:
            vector = (await embedder.embed([skeleton(query)], is_query=True))[0]
        layers["prototypes"] = prototype_logits(labels, matrix, vector, cfg)
    return combine(layers | await _llm_layer(query, llm, cfg), cfg)


async def _llm_layer(query: str, llm: Any | None, cfg: ClassifierConfig) -> dict[str, dict[str, float]]:
    if llm is None or not cfg.use_llm:
        return {}
    from retrieval.router.llm_layer import llm_logits

    logits = await llm_logits(llm, query)
    return {"llm": logits} if logits else {}
