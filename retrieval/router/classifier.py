"""Query-type classifier: a learned final layer (``learned.py``: softmax regression over the cue-word rules as
features and the question's framing words, fitted on labelled questions) and an optional LLM layer, combined
into probabilities over the five AdaptMR query types. Without packaged weights (``model="rules"``) the
hand-set combination of the cue-word rules and an embedding nearest-prototype layer decides.

The rule layer and the combination are pure functions. The prototype layer embeds a fixed, generic set of
example questions once per embedder (no benchmark question is among them) and scores a query by its
nearest prototypes. The LLM layer runs only when an ``LLMClient`` is passed in.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from language.text import text_cache
from retrieval.router.timeparse import parse_time
from schemas.query_types import QUERY_TYPES, QueryType


class ClassifierConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str = "auto"  # the learned layer: "auto" (packaged weights) | "rules" (hand-set) | path to weights
    prior: dict[str, float] = Field(default_factory=lambda: {"factual_extraction": 1.0})  # hand-set only
    rule_weight: float = 1.0
    prototype_weight: float = 0.5
    prototype_temperature: float = 6.0  # cosine gaps -> logits
    prototype_top: int = 20  # mean of the best n prototype cosines per type (>= the set size: the centroid)
    llm_weight: float = 3.0
    # cascade: when the cue words already separate the top type from the next by this much, the slower
    # layers are skipped (design doc 000, scheme C: rules first, models for the unclear rest)
    confident_margin: float = 1.5
    use_llm: bool = True  # only has an effect when an LLM client is configured


class Classification(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: QueryType
    probs: dict[str, float]
    layers: dict[str, dict[str, float]] = Field(default_factory=dict)  # per-layer logits, for the trace


# ---- layer 1: cue words ------------------------------------------------------------------------------

_REFERENCE = datetime(2000, 6, 15, tzinfo=UTC)  # any fixed time: only the *kind* of time cue matters here
_AUX = {"is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "will", "would", "can", "could",
        "should", "kind", "kinds", "type", "types", "sort", "sorts"}  # fmt: skip
_NOT_PLURAL = re.compile(r"(?:ss|us|is|ous|news|series|species|this|yes|was|does|has|his|its)$")
_WH_HEAD = re.compile(
    r"\b(?:what|which)\s+(?:(?:kinds?|types?|sorts?)\s+of\s+)?([a-z][\w-]*)(?:\s+([a-z][\w-]*))?"
)
_PERFECT = re.compile(
    r"\b(?:[Ww]hat|[Ww]hich|[Ww]here|[Ww]ho|[Hh]ow)\b[^?]*\b(?:has|have)\s+(?:[A-Z][a-z]+|he|she|they|you|I|we)\b"
)
_SET_COPULA = re.compile(r"^\s*(?:what|which|who) (?:are|were)\b|\bwhat are some\b|\bwho are\b")
_TWO_NAMES = re.compile(
    r"\b[A-Z][a-z]+(?:'s)?\s+(?:and|&)\s+[A-Z][a-z]+\b|[\u4e00-\u9fff]{1,4}(?:和|跟|与)[\u4e00-\u9fff]{1,4}(?:都|共同|一起)"
)


def plural_head(low: str) -> bool:
    """'what books …', 'which US cities …', 'what kinds of movies …': the question asks for a set."""
    m = _WH_HEAD.search(low)
    if not m or m[1] in _AUX:
        return False
    return any(w and w.endswith("s") and w not in _AUX and not _NOT_PLURAL.search(w) for w in (m[1], m[2]))


CUES: dict[str, list[tuple[re.Pattern[str], float]]] = {
    "multi_hop": [
        (re.compile(r"\bhow many\b|\bhow much\b|\bnumber of\b|\bhow many times\b"), 2.5),
        (
            re.compile(
                r"\bboth\b|\bin common\b|\bmutual\b|\bshare (?:an? |the )?(?:interest|hobb|love|passion)"
            ),
            2.0,
        ),
        (
            re.compile(
                r"\ball (?:the )?\w+|\blist\b|\bevery\b|\beach\b|\bvarious\b|\bdifferent\b|\bbesides\b|"
                r"\bother than\b|\bapart from\b|\bin total\b|\baltogether\b|\bso far\b|\bcombined\b"
            ),
            1.5,
        ),
        (
            re.compile(
                r"\bwhich .* (?:most|least|more|less)\b|\bmost (?:often|frequently|common)\b|\bcompare"
            ),
            1.5,
        ),
        (re.compile(r"\bin what ways\b|\bwhat ways\b|\bwhat things\b"), 1.5),
        # habitual present: a practice that recurs over time ("what does she do to relax")
        (re.compile(r"^\s*what (?:does|do) \w+(?: \w+)? do (?:to|for|when|with|in|on|after|before)\b"), 2.0),
        (re.compile(r"^\s*what (?:kinds?|types?|sorts?) of \w+ (?:does|do) \w+"), 1.0),
        (
            re.compile(
                "哪些|几个|几次|多少次|多少个|多少种|一共|总共|都有|共同|分别|所有|各种|综合|最多|最常|哪几|统计|列出|都.{0,6}过"
            ),
            2.5,
        ),
    ],
    "temporal_reasoning": [
        (re.compile(r"\bbefore or after\b|\bafter or before\b|\bin what order\b|\bwhich came first\b"), 3.0),
        (re.compile(r"\bhow long (?:ago|before|after|since)\b|\bsince when\b"), 1.0),
        (re.compile("先.+还是|顺序|先后|之前|之后|以前|以后"), 1.0),
    ],
    "knowledge_update": [
        (
            re.compile(
                r"\bnow\b|\bcurrent(?:ly)?\b|\bat the moment\b|\bnowadays\b|\bthese days\b|\banymore\b|"
                r"\bany more\b|\bstill\b|\blatest\b|\bnewest\b|\bmost recent\b|\bup to date\b"
            ),
            2.5,
        ),
        (
            re.compile(
                r"\b(?:changed|switched|moved|updated|replaced|new)\b.*\b(?:to|address|job|number|phone)\b"
            ),
            1.0,
        ),
        (re.compile("现在|目前|当前|最新|如今|换了|改了|还在|还是在|搬到|新的|眼下"), 2.5),
    ],
    "abstention": [
        (
            re.compile(
                r"\b(?:did|have|had) (?:i|we) (?:ever )?(?:tell|told|mention|mentioned|say|said|talk|talked)\b|"
                r"\bdo you (?:know|remember) (?:if|whether|anything)\b|\bis there any (?:record|memory|mention)\b|"
                r"\bdid (?:i|we) ever\b"
            ),
            3.0,
        ),
        (
            re.compile(
                "有没有.{0,6}(?:说|提|讲|聊)过|(?:说|提|讲|聊)过.{0,12}吗|你知道.{0,20}吗|你记得.{0,20}吗|我提过吗"
            ),
            3.0,
        ),
    ],
    "factual_extraction": [
        (re.compile(r"^\s*(?:what|who|where|why|which|how did|how does|how is|how was)\b"), 0.5),
        (re.compile(r"\bfavou?rite\b|\bname of\b|\bcalled\b"), 0.5),
        (re.compile("叫什么|是什么|是谁|在哪|为什么|怎么样"), 0.5),
    ],
}


@text_cache(4096)
def cue_hits(query: str) -> frozenset[tuple[str, int]]:
    """The cue patterns the query matches, as ``(type, index in CUES[type])``. Pure; memoised (the rules and
    the learned model's features both read them)."""
    low = query.lower()
    return frozenset((qtype, i) for qtype, cues in CUES.items() for i, (pattern, _) in enumerate(cues)
                     if pattern.search(low) or pattern.search(query))  # fmt: skip


@text_cache(4096)
def time_cues(query: str) -> dict[str, bool]:
    """The time cues of the query (``asks_when``, ``asks_order``, ``relation``, ``asks_latest``, ``window``).
    Pure; memoised (the rules and the learned model's features both read them): shared, never mutated."""
    tq = parse_time(query, _REFERENCE)
    return {"asks_when": bool(tq.asks_when), "asks_order": bool(tq.asks_order), "relation": bool(tq.relation),
            "asks_latest": bool(tq.asks_latest), "window": bool(tq.windows)}  # fmt: skip


def rule_logits(query: str) -> dict[str, float]:
    """Cue-word scores per type (unnormalised). Pure."""
    low = query.lower()
    scores = dict.fromkeys(QUERY_TYPES, 0.0)
    hits = cue_hits(query)
    for qtype, cues in CUES.items():
        scores[qtype] = sum(w for i, (_, w) in enumerate(cues) if (qtype, i) in hits)
    tq = time_cues(query)
    if tq["asks_when"] or tq["asks_order"]:
        scores["temporal_reasoning"] += 3.0
    if tq["relation"]:  # "before I moved": placed relative to another event
        scores["temporal_reasoning"] += 1.0
    if tq["asks_latest"]:
        scores["temporal_reasoning"] += 1.0
    if tq["window"]:  # a dated question is about one event: a time constraint, not an aggregation
        scores["temporal_reasoning"] += 0.5
        scores["multi_hop"] -= 1.0
    if plural_head(low):
        scores["multi_hop"] += 2.0
    if _PERFECT.search(query):
        scores["multi_hop"] += 2.0
    if _SET_COPULA.search(low):
        scores["multi_hop"] += 2.0
    if _TWO_NAMES.search(query):
        scores["multi_hop"] += 1.5
    return scores


# ---- layer 2: nearest prototypes ---------------------------------------------------------------------

PROTOTYPES: dict[str, list[str]] = {
    "factual_extraction": [
        "What is her cat's name?",
        "Where does he work?",
        "What color is his car?",
        "Who gave her the gift?",
        "Why did she quit the band?",
        "What did he bring to the party?",
        "What is his favorite food?",
        "How did she feel after the concert?",
        "What was the title of the book he mentioned?",
        "Where did they go for the weekend trip?",
        "What does the tattoo on her arm mean?",
        "What instrument did he learn as a child?",
        "我的猫叫什么名字？",
        "他在哪家公司上班？",
        "她为什么辞职？",
    ],
    "temporal_reasoning": [
        "When did she start her new job?",
        "When did they go to the beach?",
        "What year did he graduate?",
        "Did she move before or after she got the dog?",
        "Which happened first, the wedding or the trip?",
        "How long has he been learning guitar?",
        "When is the concert going to happen?",
        "What did we talk about last month?",
        "What happened the week before the exam?",
        "我是先换的工作还是先搬的家？",
        "上个月我们聊了什么？",
        "他什么时候去的医院？",
        "我最近一次跑步是什么时候？",
    ],
    "knowledge_update": [
        "Where does she live now?",
        "What is his current job?",
        "What phone number does he use these days?",
        "Is she still working at the bakery?",
        "What is the latest version of the plan?",
        "Who is his manager at the moment?",
        "Does he still play tennis?",
        "What car does she drive now?",
        "我现在住在哪里？",
        "她目前在哪工作？",
        "他最新的手机号是多少？",
        "我们现在的方案是什么？",
    ],
    "multi_hop": [
        "What hobbies does she have?",
        "Which countries has he visited?",
        "How many pets does she have?",
        "What do they both like to do?",
        "What sports has he played over the years?",
        "What kinds of books does she read?",
        "Which restaurants has he recommended?",
        "How many times did they go hiking?",
        "What interests do the two of them share?",
        "What activities does he do with his kids?",
        "What gifts has she received from friends?",
        "我提到过的餐厅里哪种菜系最多？",
        "我和小王有什么共同爱好？",
        "他去过哪些城市？",
        "她一共养过几只宠物？",
    ],
    "abstention": [
        "Did I ever tell you my blood type?",
        "Have I mentioned my father's job to you?",
        "Do you know whether I have siblings?",
        "Did we ever talk about my salary?",
        "Do you remember if I told you my password?",
        "我有没有跟你说过我的血型？",
        "你知道我父亲的职业吗？",
        "我跟你提过我的生日吗？",
    ],
}

_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-Z][a-z]+(?:'s)?\b")


def skeleton(query: str) -> str:
    """The question with capitalised names (not sentence-initial words) replaced by a pronoun."""
    return _NAME.sub(lambda m: "their" if m.group(0).endswith("'s") else "they", query)


class PrototypeIndex:
    """Prototype vectors for one embedder, built on first use (the only state in the classifier)."""

    def __init__(self, prototypes: dict[str, list[str]] | None = None) -> None:
        self.prototypes = prototypes or PROTOTYPES
        self._key: str | None = None
        self._labels: list[str] = []
        self._matrix: np.ndarray | None = None

    async def matrix(self, embedder) -> tuple[list[str], np.ndarray]:
        if self._matrix is None or self._key != embedder.name:
            labels = [t for t, qs in self.prototypes.items() for _ in qs]
            texts = [q for qs in self.prototypes.values() for q in qs]
            self._matrix = np.asarray(await embedder.embed(texts, is_query=True), dtype=np.float32)
            self._labels, self._key = labels, embedder.name
        return self._labels, self._matrix


def prototype_logits(
    labels: list[str], matrix: np.ndarray, vector: np.ndarray, cfg: ClassifierConfig
) -> dict:
    """Per type: mean of the best ``cfg.prototype_top`` cosines, scaled by the temperature. Pure."""
    sims = matrix @ np.asarray(vector, dtype=np.float32)
    out: dict[str, float] = {}
    for qtype in QUERY_TYPES:
        own = sorted((float(s) for s, lab in zip(sims, labels, strict=True) if lab == qtype), reverse=True)
        out[qtype] = float(np.mean(own[: cfg.prototype_top])) if own else 0.0
    best = max(out.values())
    return {t: (v - best) * cfg.prototype_temperature for t, v in out.items()}


# ---- combination -------------------------------------------------------------------------------------


def combine(layers: dict[str, dict[str, float]], cfg: ClassifierConfig) -> Classification:
    """Weighted sum of layer logits + prior -> softmax probabilities. With a ``learned`` layer it decides
    (with the LLM's, when there is one): the rules it was fitted on are in its features, shown for the trace
    only. Pure."""
    weights = {"rules": cfg.rule_weight, "prototypes": cfg.prototype_weight, "llm": cfg.llm_weight}
    prior = cfg.prior
    if "learned" in layers:
        weights |= {"rules": 0.0, "prototypes": 0.0, "learned": 1.0}
        prior = {}
    total = {t: prior.get(t, 0.0) for t in QUERY_TYPES}
    for name, logits in layers.items():
        for t in QUERY_TYPES:
            total[t] += weights.get(name, 1.0) * logits.get(t, 0.0)
    top = max(total.values())
    exp = {t: math.exp(v - top) for t, v in total.items()}
    z = sum(exp.values())
    probs = {t: round(v / z, 4) for t, v in exp.items()}
    label = max(QUERY_TYPES, key=lambda t: (probs[t], -QUERY_TYPES.index(t)))
    return Classification(label=label, probs=probs, layers={k: {t: round(v, 3) for t, v in d.items()}
                                                            for k, d in layers.items()})  # fmt: skip


def oracle(label: QueryType) -> Classification:
    """A certain classification (the benchmark's oracle router)."""
    return Classification(
        label=label, probs={t: float(t == label) for t in QUERY_TYPES}, layers={"oracle": {}}
    )
