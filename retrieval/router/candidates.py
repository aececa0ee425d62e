"""Candidate retrieval for the router: search specs (pure) -> store searches (async) -> one fused pool.

Every search is the store's hybrid search (BM25 + kNN fused by RRF inside the store) unless no embedder is
configured. Searches of one request share one batched embedding call. The pool keeps, per document, the
best scores seen and the searches that found it, and fuses the searches' rankings by weighted RRF.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, ConfigDict

from retrieval.fusion import rrf
from retrieval.protocols import Doc, Embedder, Hit, MemoryStore, SearchQuery
from retrieval.store_memo import memoises_bm25

MIN_COSINE = 0.2  # a kNN-only hit below this is noise
NEG_INF = float("-inf")


class SearchSpec(BaseModel):
    """One store search of a routed request. ``embed_text`` is what the kNN side embeds; None: BM25 alone."""

    model_config = ConfigDict(frozen=True)

    label: str
    text: str
    embed_text: str | None
    weight: float = 1.0
    k: int = 40
    candidates: int = 20
    rrf_k: int = 10
    kinds: list[str] | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False


@dataclass
class Cand:
    doc: Doc
    scores: dict[str, float] = field(default_factory=dict)  # best bm25 / cosine seen
    found_by: list[str] = field(default_factory=list)
    fused: float = 0.0

    @property
    def doc_id(self) -> str:
        return self.doc.doc_id


@dataclass
class Pool:
    """All candidates of a request, and each search's ranking (doc ids, best first)."""

    cands: dict[str, Cand] = field(default_factory=dict)
    rankings: dict[str, list[str]] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)

    def add(self, spec: SearchSpec, hits: list[Hit]) -> None:
        ranking, cands, label = [], self.cands, spec.label
        for h in hits:
            scores = h.scores
            bm25, cosine = scores.get("bm25"), scores.get("cosine")
            if bm25 is None and (0.0 if cosine is None else cosine) < MIN_COSINE:
                continue
            doc_id = h.doc.doc_id
            if (c := cands.get(doc_id)) is None:  # a candidate is made once, not per hit
                c = cands[doc_id] = Cand(doc=h.doc)
            best = c.scores  # the best of each score seen (max(seen, new): new only when greater)
            if bm25 is not None:
                best["bm25"] = bm25 if bm25 > (seen := best.get("bm25", NEG_INF)) else seen
            if cosine is not None:
                best["cosine"] = cosine if cosine > (seen := best.get("cosine", NEG_INF)) else seen
            c.found_by.append(label)
            ranking.append(doc_id)
        self.rankings[spec.label] = ranking
        self.weights[spec.label] = spec.weight

    def fuse(self, rrf_k: int = 10) -> list[Cand]:
        """Weighted RRF over every search; sets ``fused`` and returns the candidates best first."""
        labels = [lab for lab in self.rankings if self.rankings[lab]]
        fused = rrf(
            [self.rankings[lab] for lab in labels], k=rrf_k, weights=[self.weights[lab] for lab in labels]
        )
        top = fused[0][1] if fused else 1.0
        out = []
        for doc_id, score in fused:
            c = self.cands[doc_id]
            c.fused = score / top
            out.append(c)
        return out


def _unembedded(specs: list[SearchSpec], cache: dict[str, list[float]]) -> list[str]:
    """The distinct texts of the specs that search by vector and are not in ``cache`` yet, in order."""
    return list(dict.fromkeys(s.embed_text for s in specs if s.embed_text is not None and s.embed_text not in cache))


async def embed_specs(embedder: Embedder | None, specs: list[SearchSpec], cache: dict[str, list[float]]):
    """Embed the distinct ``embed_text`` of the specs not in ``cache`` (one batched call)."""
    if embedder is None:
        return
    missing = _unembedded(specs, cache)
    if missing:
        vectors = await embedder.embed(missing, is_query=True)
        cache.update({t: v.tolist() for t, v in zip(missing, vectors, strict=True)})


def store_query(chat_id: str, spec: SearchSpec, vector: list[float] | None) -> SearchQuery:
    """The store search of ``spec``: hybrid with its vector, BM25 alone without one."""
    return SearchQuery(
        chat_id=chat_id,
        text=spec.text,
        vector=vector,
        mode="hybrid" if vector is not None else "bm25",
        k=spec.k,
        kinds=spec.kinds,
        since=spec.since,
        until=spec.until,
        include_superseded=spec.include_superseded,
        rrf_k=spec.rrf_k,
        candidates=spec.candidates,
    )


async def bm25_ahead(store: MemoryStore, chat_id: str, specs: list[SearchSpec]) -> None:
    """On a store that keeps its BM25 legs' rankings until its next write (``memoises_bm25``): the BM25 leg of
    each spec's hybrid search, run while its text is being embedded (the embedder's forward runs in its own
    thread), so that the hybrid search after it runs only its kNN leg. Elsewhere nothing."""
    if not memoises_bm25(store):
        return
    yield_gil()
    for spec in specs:
        query = store_query(chat_id, spec, None)
        await store.search(query.model_copy(update={"k": max(spec.candidates, spec.k)}))


def yield_gil() -> None:
    """Let go of the GIL once, right after a forward was handed to the embedder's thread: that thread needs the
    GIL for the few steps before its forward releases it, and this one's Python work beside it would otherwise
    hold it up (a forward started up to ~0.4 ms late at p95, ~0.13 ms with this; the wait is the critical path)."""
    time.sleep(0)


async def run_specs(
    store: MemoryStore,
    embedder: Embedder | None,
    chat_id: str,
    specs: list[SearchSpec],
    pool: Pool,
    vectors: dict[str, list[float]],
) -> None:
    if embedder is not None and _unembedded(specs, vectors):
        await asyncio.gather(embed_specs(embedder, specs, vectors), bm25_ahead(store, chat_id, specs))
    for spec in specs:
        pool.add(spec, await store.search(store_query(chat_id, spec, vectors.get(spec.embed_text))))
