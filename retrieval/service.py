"""Retrieval: one request -> store searches -> fused, de-duplicated, rendered context with a trace.

The uniform strategies (``hybrid`` / ``bm25`` / ``embedding``) live here; query routing builds on them.
"""

from __future__ import annotations

import time
from typing import Any

from language.text import count_tokens
from retrieval.protocols import Embedder, Hit, MemoryStore, SearchQuery
from retrieval.render import render_context
from schemas import RetrievedItem, RetrieveRequest, RetrieveResponse, TraceStep

MODE_TO_STORE = {"hybrid": "hybrid", "bm25": "bm25", "embedding": "knn"}
MIN_COSINE = 0.2  # below this a kNN-only hit is noise, not memory
# Topic titles are labels for the topic layer, not evidence: an item must carry what it cites.
DEFAULT_KINDS = ["turn", "fact", "summary", "qa", "task", "decision"]


def to_item(hit: Hit) -> RetrievedItem:
    d = hit.doc
    return RetrievedItem(
        item_id=d.doc_id,
        kind=d.kind,
        text=d.text,
        speaker=d.speaker,
        timestamp=d.ts,
        score=hit.score,
        source_message_ids=list(d.source_message_ids),
        topic_id=d.topic_id,
        valid_to=d.valid_to,
        scores=dict(hit.scores),
    )


def first_uncovered(hits: list[Hit], k: int) -> list[RetrievedItem]:
    """``drop_covered([to_item(h) for h in hits])[:k]``, building only the items kept (a hit whose every
    source message a better hit covers is dropped; a search returns 3k hits for the k items shown)."""
    seen: set[str] = set()
    kept: list[Hit] = []
    for h in hits:
        if len(kept) >= k:
            break
        sources = set(h.doc.source_message_ids)
        if not (sources and sources <= seen):
            seen |= sources
            kept.append(h)
    return [to_item(h) for h in kept]


def relevant(hit: Hit, mode: str) -> bool:
    """A hit counts if it matched lexically, or semantically above the noise floor."""
    if "bm25" in hit.scores:
        return True
    return hit.scores.get("cosine", 1.0 if mode == "bm25" else 0.0) >= MIN_COSINE


async def retrieve(
    store: MemoryStore,
    embedder: Embedder | None,
    req: RetrieveRequest,
    *,
    candidates: int = 20,
    rrf_k: int = 10,
    router: Any | None = None,
    llm: Any | None = None,
    graph: Any | None = None,
) -> RetrieveResponse:
    """Uniform retrieval (``hybrid``/``bm25``/``embedding``), or routed retrieval for ``mode="routed"``
    (``router``: a ``RouterConfig``; ``llm`` and ``graph`` are optional and used only by the router)."""
    if req.mode == "routed":
        from retrieval.router.pipeline import retrieve_routed

        return await retrieve_routed(store, embedder, req, cfg=router, llm=llm, graph=graph)
    trace: list[TraceStep] = []
    mode = req.mode if (embedder is not None or req.mode == "bm25") else "bm25"
    t0 = time.perf_counter()
    vector = None
    if mode != "bm25" and embedder is not None:
        vector = (await embedder.embed([req.query], is_query=True))[0].tolist()
        trace.append(TraceStep(step="embed", detail={"model": embedder.name}, ms=_ms(t0)))
    t1 = time.perf_counter()
    query = SearchQuery(
        chat_id=req.chat_id,
        text=req.query,
        vector=vector,
        mode=MODE_TO_STORE[mode],
        k=max(req.k * 3, req.k + 10),
        kinds=req.kinds or DEFAULT_KINDS,
        include_superseded=req.include_superseded,
        rrf_k=rrf_k,
        candidates=candidates,
    )
    hits = [h for h in await store.search(query) if relevant(h, mode)]
    trace.append(TraceStep(step="search", detail={"mode": mode, "hits": len(hits)}, ms=_ms(t1)))
    items = first_uncovered(hits, req.k)
    context, tokens, _ = render_context(items, req.token_budget, count_tokens)
    trace.append(TraceStep(step="render", detail={"items": len(items), "tokens": tokens}))
    return RetrieveResponse(
        chat_id=req.chat_id,
        query=req.query,
        items=items,
        context=context,
        context_tokens=tokens,
        no_relevant_memory=not items,
        strategy=f"uniform-{mode}",
        trace=trace,
    )


# Questions of the main routes (temporal, set / multi-hop, knowledge update) for :func:`warm`.
WARM_QUESTIONS = (
    "When did Ann start her new job last week?",
    "What activities has Ann done with her family?",
    "Where does Ann work now?",
)
WARM_CHAT = "memstream-warm-up"  # a chat id no store holds: the warm-up reads nothing of anyone's


async def warm(store: MemoryStore, embedder: Embedder | None, *, graph: Any | None = None) -> float:
    """Ask :data:`WARM_QUESTIONS` (routed, no LLM) in an empty chat, so that a server's first user does not pay
    for what the router loads on its first question (~50 modules, ~0.1 s) and its first graph expansion.
    Reads only. Returns the seconds it took."""
    import retrieval.graph_expand  # noqa: F401 - first used on a question whose candidates have entities

    t0 = time.perf_counter()
    for question in WARM_QUESTIONS:
        req = RetrieveRequest(chat_id=WARM_CHAT, query=question, mode="routed")
        await retrieve(store, embedder, req, graph=graph)
    return time.perf_counter() - t0


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 3)
