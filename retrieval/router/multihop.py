"""Multi-hop retrieval that joins evidence (pure decisions; the pipeline runs the searches they ask for).

- **Iterative retrieval (second hop).** The best first-hop items about the asked person say more than the
  question did: "Where did Caroline move from?" finds "…since I moved from my home country"; the terms an
  item adds that are rare among the candidates ("home country") are the bridge to the next item ("Sweden").
  One second-hop search per bridge (the person's name + the bridge terms); each search's best item gets a
  reserved place in the top k, as the sub-queries' do.
- **Entity/person-linked expansion.** When the question names one participant, items said by or about the
  other participants drop below that person's (a set question about Melanie is answered from Melanie's
  records); the names' entity links (``Doc.entities``) of the first hop feed the bridges too.
- **Aggregation** ("how many times", "what are all the …", "哪些", "几次"): one wide search for the focal
  terms with the name, so that every matching record is in the pool; the ranker then keeps each one that
  carries a focal term ahead of the rest, and the context packs them up to the token budget.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from pydantic import BaseModel, ConfigDict

from language.text import tokenize
from retrieval.router.candidates import Cand, Pool, SearchSpec, run_specs
from retrieval.router.classifier import plural_head
from retrieval.router.query import QueryAnalysis

AGGREGATION = re.compile(
    r"\bhow many\b|\bhow much\b|\bhow often\b|\bnumber of\b|\ball (?:the|of)\b|\bevery\b|\blist\b|\bwhat are (?:some|the)\b|"
    r"\bwhich .+ (?:has|have) \w+ (?:been|visited|read|seen|played|tried|done|made)\b|\bin total\b|\baltogether\b|"
    "哪些|几次|几个|多少次|多少个|一共|总共|所有|都有|列出|分别"
)
# words that add nothing as a bridge: pronouns, chat filler, light verbs (tokenized forms)
_FILLER = frozenset(tokenize(
    "they them their it its this that these those he she him her his hers me my mine you your we our others other "
    "thing things something anything really so very just also too much lot lots feel feels felt made make makes "
    "like liked got get gets great good awesome amazing love loved thanks thank wow yeah yes hey glad happy "
    "going go went time times day days week weeks year years today yesterday recently last next since ago"
))  # fmt: skip


class MultiHopConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    enabled: bool = True
    seeds: int = 4  # first-hop items mined for bridges
    bridges: int = 3  # second-hop searches
    bridge_terms: int = 3  # terms per bridge
    bridge_weight: float = 0.5  # the second-hop searches' weight in the pool's fusion
    keep_head: int = 10  # the second hop never reshuffles the first hop's best items: its finds go after these
    aggregate_k: int = 60  # how many records an aggregation question's wide search may bring in
    split_parts: bool = True  # a question that asks several things is also asked part by part (``compound``)


def is_aggregation(query: str) -> bool:
    """A set or count question ("how many", "what books has …", "哪些"): its answer is every matching record,
    not the best one. Pure."""
    low = query.lower()
    return AGGREGATION.search(low) is not None or plural_head(low)


def _rarity(tokens: dict[str, set[str]]) -> dict[str, float]:
    n = max(1, len(tokens))
    df = Counter(t for toks in tokens.values() for t in toks)
    return {t: math.log(1.0 + n / c) for t, c in df.items()}


def bridge_queries(
    top: list[Cand], qa: QueryAnalysis, tokens: dict[str, set[str]], cfg: MultiHopConfig
) -> list[str]:
    """Second-hop queries from the best first-hop items: the asked names + each item's rarest new terms
    (not in the question, not a name, not filler; an item's linked entities first). Pure."""
    asked = set(tokenize(qa.text)) | {t for n in qa.names for t in tokenize(n)}
    rarity = _rarity(tokens)
    people = {t for c in top for t in tokenize(c.doc.speaker or "")}
    names = " ".join(qa.names)
    out: list[str] = []
    for c in top[: cfg.seeds]:
        if len(out) >= cfg.bridges:
            break
        if qa.names and c.doc.speaker and c.doc.speaker not in qa.names:
            continue
        linked = [t for e in c.doc.entities for t in tokenize(e)]
        terms = [t for t in dict.fromkeys([*linked, *tokens.get(c.doc_id, set())])
                 if t not in asked and t not in people and t not in _FILLER and len(t) > 2 and not t.isdigit()]  # fmt: skip
        terms.sort(key=lambda t: (t not in linked, -rarity.get(t, 0.0), t))
        if terms:
            q = f"{names} {' '.join(terms[: cfg.bridge_terms])}".strip()
            if q not in out:
                out.append(q)
    return out


def second_hop_specs(
    wanted: bool, top: list[Cand], qa: QueryAnalysis, tokens: dict[str, set[str]], cfg: MultiHopConfig,
    base: SearchSpec,
) -> list[SearchSpec]:
    """The searches of the second hop (``hop<i>``), plus the wide aggregation search (``collect``); none unless
    ``wanted`` (a chosen strategy asks for a second hop). Pure."""
    if not (wanted and cfg.enabled):
        return []
    specs = [base.model_copy(update={"label": f"hop{i}", "text": q, "embed_text": q, "weight": cfg.bridge_weight})
             for i, q in enumerate(bridge_queries(top, qa, tokens, cfg))]  # fmt: skip
    if is_aggregation(qa.text) and qa.keywords:
        q = " ".join([*qa.names, *qa.keywords])
        specs.append(base.model_copy(update={"label": "collect", "text": q, "embed_text": q, "weight": 0.5,
                                             "k": 2 * cfg.aggregate_k, "candidates": cfg.aggregate_k}))  # fmt: skip
    return specs


def join(scored: list[tuple[Cand, float]], found: list[list[Cand]], keep: int) -> list[tuple[Cand, float]]:
    """The first hop's ranking with the second hop's finds (each search's items best first, taken in turns)
    placed right after its best ``keep`` distinct items (an item whose sources better ones cover does not
    count); what was already there keeps its place or moves down. Pure."""
    cut, covered, distinct = 0, set(), 0
    while cut < len(scored) and distinct < keep:  # items whose sources a better one covers do not count
        sources = set(scored[cut][0].doc.source_message_ids)
        distinct += not (sources and sources <= covered)
        covered |= sources
        cut += 1
    head = scored[:cut]
    seen = {c.doc_id for c, _ in head}
    queues, new = [list(f) for f in found], []
    while any(queues):
        for q in queues:
            while q and q[0].doc_id in seen:
                q.pop(0)
            if q:
                c = q.pop(0)
                seen.add(c.doc_id)
                new.append(c)
    if not new:
        return scored
    floor = head[-1][1] if head else 0.0
    out = head + [(c, floor - 1e-6 * (i + 1)) for i, c in enumerate(new)]
    low = out[-1][1]
    for j, (c, s) in enumerate(cs for cs in scored[cut:] if cs[0].doc_id not in seen):
        out.append((c, min(s, low - 1e-6 * (j + 1))))
    return out


async def second_hop(
    store, embedder, chat_id: str, vectors: dict, wanted: bool, scored: list[tuple[Cand, float]], qa: QueryAnalysis,
    tokens: dict[str, set[str]], cfg: MultiHopConfig, base: SearchSpec,
) -> tuple[list[tuple[Cand, float]], list[SearchSpec]]:
    """Run the second hop's searches and join what they find after the first hop's head (``tokens`` gains
    the new items' tokens). Returns the ranking and the searches run."""
    specs = second_hop_specs(wanted, [c for c, _ in scored], qa, tokens, cfg, base)
    if not specs:
        return scored, []
    pool = Pool()
    await run_specs(store, embedder, chat_id, specs, pool, vectors)
    found = [[pool.cands[i] for i in pool.rankings[s.label]] for s in specs]
    tokens.update({c.doc_id: set(tokenize(c.doc.text)) for f in found for c in f if c.doc_id not in tokens})
    return join(scored, found, cfg.keep_head), specs


def person_focus(
    scored: list[tuple[Cand, float]], qa: QueryAnalysis, penalty: float, focal_bonus: float
) -> list[tuple[Cand, float]]:
    """When the question names exactly one of the people among the candidates, lower (by ``penalty``) the
    items another of them said or is the subject of; for an aggregation question, raise (by
    ``focal_bonus``) each item carrying a focal keyword. Pure."""
    participants = {c.doc.speaker for c, _ in scored if c.doc.speaker}
    one = qa.names[0] if len(qa.names) == 1 and len(participants) >= 2 else None
    focal = set(qa.keywords) if is_aggregation(qa.text) else set()
    out = []
    for c, s in scored:
        if one and c.doc.speaker and c.doc.speaker != one and c.doc.speaker in participants:
            s -= penalty
        if focal and focal & set(tokenize(c.doc.text)):
            s += focal_bonus
        out.append((c, s))
    order = {c.doc_id: i for i, (c, _) in enumerate(scored)}
    return sorted(out, key=lambda cs: (-cs[1], order[cs[0].doc_id]))
