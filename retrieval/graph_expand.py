"""Graph expansion for retrieval: one-hop neighbours of the top items, as a separate "related" context layer.

The top retrieved items name their source messages; the graph edges derived from those messages touch some
entities (the seeds); the other edges of those entities are related facts the similarity search did not
rank (a fact about the same place, pet or event). They are rendered as timestamped triples,
``[2023-05-08] Caroline —lives_in→ Boston (since 2023-05-08)``, each with its source message ids, and capped
by count and token budget. :func:`related_facts` is pure; :func:`expand` reads the graph store and calls it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from language.text import count_tokens
from retrieval.graph_protocols import GraphStore
from schemas.graph import RelationEdge, Subgraph, is_exclusive

__all__ = ["RelatedFact", "expand", "related_facts", "render_edge"]


class HasSources(Protocol):
    @property
    def source_message_ids(self) -> list[str]: ...


@dataclass(frozen=True)
class RelatedFact:
    """One related fact for the context's "related" layer."""

    text: str
    edge_id: str
    via: str  # the entity it was reached through
    source_message_ids: list[str]
    valid_from: datetime
    valid_to: datetime | None
    score: float
    tokens: int


def render_edge(edge: RelationEdge, *, evidence: bool = True) -> str:
    """``[2023-05-08] Caroline —lives_in→ Boston (since 2023-05-08)``; a closed edge says ``until``; with
    ``evidence`` a mention or event edge carries the fact it came from."""
    start = f"{edge.valid_from:%Y-%m-%d}"
    line = f"[{start}] {edge.subject_name} —{edge.predicate}→ {edge.object_name}"
    if edge.valid_to is not None:
        line += f" ({start} until {edge.valid_to:%Y-%m-%d})"
    elif is_exclusive(edge.predicate):
        line += f" (since {start})"
    fact = (edge.fact or "").strip()
    if evidence and fact and (edge.predicate == "mentions" or fact != edge.text.strip()):
        line += f": {fact}"
    return line


def related_facts(
    items: Sequence[HasSources],
    seed_edges: Sequence[RelationEdge],
    neighbourhood: Subgraph,
    *,
    max_facts: int = 5,
    token_budget: int = 200,
    count: Callable[[str], int] = count_tokens,
    evidence: bool = True,
) -> list[RelatedFact]:
    """The best one-hop related facts of ``items`` (best-ranked first).

    ``seed_edges`` are the edges derived from the items' source messages; their endpoints are the seed
    entities; ``neighbourhood`` is the one-hop subgraph around them. An edge already backed by an item's
    sources is not "related" (the item says it). An edge scores by the seeds it touches — each weighted by
    the rank of the item that reached it and by how specific the seed is (a hub such as a speaker, touching
    everything, counts little) — plus a bonus for a typed relation over a bare mention; a closed edge counts
    a little less. Facts are taken best first while they fit ``token_budget``.
    """
    covered = {mid for item in items for mid in item.source_message_ids}
    rank_of: dict[str, int] = {}
    for rank, item in enumerate(items):
        for mid in item.source_message_ids:
            rank_of.setdefault(mid, rank)
    seed_weight: dict[str, float] = {}
    for e in seed_edges:
        rank = min((rank_of[m] for m in e.source_message_ids if m in rank_of), default=len(items))
        for entity_id in (e.subject_id, e.object_id):
            seed_weight[entity_id] = max(seed_weight.get(entity_id, 0.0), 1.0 / (1.0 + rank))
    degree: Counter[str] = Counter()
    for e in neighbourhood.edges:
        degree.update((e.subject_id, e.object_id))
    names = {n.entity_id: n.name for n in neighbourhood.nodes}
    scored: list[tuple[float, str, RelationEdge]] = []
    seed_ids = {e.edge_id for e in seed_edges}
    for e in neighbourhood.edges:
        if e.edge_id in seed_ids or set(e.source_message_ids) <= covered:
            continue
        touched = [x for x in (e.subject_id, e.object_id) if x in seed_weight]
        if not touched:
            continue
        score = sum(seed_weight[x] / math.log2(2 + degree[x]) for x in touched)
        score *= (1.3 if e.predicate != "mentions" else 1.0) * (0.8 if e.valid_to is not None else 1.0)
        via = max(touched, key=lambda x: seed_weight[x] / math.log2(2 + degree[x]))
        scored.append((score, names.get(via, via), e))
    scored.sort(key=lambda s: (-s[0], s[2].valid_from, s[2].edge_id))
    out: list[RelatedFact] = []
    used = 0
    for score, via, e in scored:
        if len(out) >= max_facts:
            break
        text = render_edge(e, evidence=evidence)
        cost = count(text) + 1
        if used + cost > token_budget:
            continue
        used += cost
        out.append(RelatedFact(text, e.edge_id, via, list(e.source_message_ids), e.valid_from, e.valid_to,
                               round(score, 4), cost))  # fmt: skip
    return out


async def expand(
    graph: GraphStore,
    chat_id: str,
    items: Sequence[HasSources],
    *,
    max_facts: int = 5,
    token_budget: int = 200,
    include_invalid: bool = True,
    count: Callable[[str], int] = count_tokens,
) -> list[RelatedFact]:
    """Read the seeds and their one-hop neighbourhood from ``graph`` (within ``chat_id``) and rank them."""
    sources = list(dict.fromkeys(mid for item in items for mid in item.source_message_ids))
    if not sources:
        return []
    seed_edges = await graph.edges_for_messages(chat_id, sources, include_invalid=include_invalid)
    seeds = list(dict.fromkeys(x for e in seed_edges for x in (e.subject_id, e.object_id)))
    if not seeds:
        return []
    neighbourhood = await graph.subgraph(chat_id, seeds, hops=1, include_invalid=include_invalid)
    return related_facts(
        items, seed_edges, neighbourhood, max_facts=max_facts, token_budget=token_budget, count=count
    )
