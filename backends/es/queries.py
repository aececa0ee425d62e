"""Pure builders for the Elasticsearch store's queries (BM25, kNN, the ``rrf`` retriever, filter-only
listings) and the parsing of their results into hits. Ids, mappings and sources: :mod:`backends.es.mapping`.

No I/O here: every function maps a query to Elasticsearch JSON (or hits back) and is unit-tested for its
shape without a server. Every query carries a ``chat_id`` term filter, in the query's ``bool.filter`` and in
every ``knn.filter``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from backends.es.mapping import DOC_SOURCE_EXCLUDES, doc_from_source, epoch
from language.text import tokenize
from retrieval.fusion import rrf
from retrieval.protocols import Hit, SearchQuery

MAX_QUERY_TERMS = 64  # as language.text.fts_query: the distinct query tokens that are searched
MIN_NUM_CANDIDATES = 100
MAX_NUM_CANDIDATES = 10_000  # Elasticsearch's upper bound for knn.num_candidates


# ---- queries -------------------------------------------------------------------------------------


def chat_filter(chat_id: str) -> dict[str, Any]:
    if not chat_id:
        raise ValueError("every store query needs a chat_id")
    return {"term": {"chat_id": chat_id}}


def query_tokens(text: str, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct BM25 tokens of a query, first ``max_terms`` (each counts once, as in FTS5's OR query)."""
    return list(dict.fromkeys(tokenize(text)))[:max_terms]


def build_filters(q: SearchQuery) -> dict[str, Any]:
    """The restriction shared by every search leg: chat, kinds, time window, live versions only."""
    clauses: list[dict[str, Any]] = [chat_filter(q.chat_id)]
    if q.kinds is not None:
        clauses.append({"terms": {"kind": list(q.kinds)}})
    window = {op: epoch(t) for op, t in (("gte", q.since), ("lte", q.until)) if t is not None}
    if window:
        clauses.append({"range": {"ts_epoch": window}})
    bool_: dict[str, Any] = {"filter": clauses}
    if not q.include_superseded:
        bool_["must_not"] = [{"exists": {"field": "valid_to"}}]
    return {"bool": bool_}


def build_bm25_query(q: SearchQuery) -> dict[str, Any] | None:
    """BM25 over ``tokens``: the OR of the query's distinct tokens, inside the filters; None if no token."""
    tokens = query_tokens(q.text)
    if not tokens:
        return None
    return {
        "bool": {
            "filter": [build_filters(q)],
            "should": [{"term": {"tokens": t}} for t in tokens],
            "minimum_should_match": 1,
        }
    }


def num_candidates(k: int) -> int:
    return min(MAX_NUM_CANDIDATES, max(2 * k, MIN_NUM_CANDIDATES))


def build_knn(q: SearchQuery, k: int | None = None) -> dict[str, Any] | None:
    """The kNN clause (``k``, ``num_candidates`` and the filters always set); None without a vector."""
    if q.vector is None:
        return None
    k = q.k if k is None else k
    return {
        "field": "vector",
        "query_vector": list(q.vector),
        "k": k,
        "num_candidates": num_candidates(k),
        "filter": build_filters(q),
    }


_TIE_BREAK = [{"_score": "desc"}, {"seq": "asc"}]  # equal scores: insertion order, as SQLite's rowid


def build_bm25_search(q: SearchQuery, size: int) -> dict[str, Any] | None:
    query = build_bm25_query(q)
    if query is None:
        return None
    return {"query": query, "size": size, "sort": _TIE_BREAK, "track_total_hits": False,
            "_source": {"excludes": DOC_SOURCE_EXCLUDES}}  # fmt: skip


def build_knn_search(q: SearchQuery, size: int) -> dict[str, Any] | None:
    knn = build_knn(q, size)
    if knn is None:
        return None
    return {"knn": knn, "size": size, "sort": _TIE_BREAK, "track_total_hits": False,
            "_source": {"excludes": DOC_SOURCE_EXCLUDES}}  # fmt: skip


def build_rrf_retriever(q: SearchQuery) -> dict[str, Any] | None:
    """Server-side RRF of the BM25 and kNN legs over ``max(candidates, k)`` each; None if a leg is empty."""
    window = max(q.candidates, q.k)
    bm25, knn = build_bm25_query(q), build_knn(q, window)
    if bm25 is None or knn is None:
        return None
    return {
        "rrf": {
            "retrievers": [{"standard": {"query": bm25}}, {"knn": knn}],
            "rank_window_size": window,
            "rank_constant": q.rrf_k,
        }
    }


def build_similar_knn(chat_id: str, vector: list[float], k: int, subject: str | None) -> dict[str, Any]:
    """kNN over the chat's live memory docs (not turns), optionally only those about ``subject``."""
    clauses: list[dict[str, Any]] = [chat_filter(chat_id)]
    if subject is not None:
        clauses.append({"term": {"subject": subject}})
    flt = {
        "bool": {
            "filter": clauses,
            "must_not": [{"term": {"kind": "turn"}}, {"exists": {"field": "valid_to"}}],
        }
    }
    knn = {
        "field": "vector",
        "query_vector": vector,
        "k": k,
        "num_candidates": num_candidates(k),
        "filter": flt,
    }
    return {"knn": knn, "size": k, "sort": _TIE_BREAK, "_source": ["doc_id"], "track_total_hits": False}


def build_chat_query(
    chat_id: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    time_field: str = "ts_epoch",
    live_only: bool = False,
    terms: dict[str, list[str]] | None = None,
    exclude: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """A filter-only query within one chat (listing, deletion)."""
    clauses: list[dict[str, Any]] = [chat_filter(chat_id)]
    window = {op: epoch(t) for op, t in (("gte", since), ("lte", until)) if t is not None}
    if window:
        clauses.append({"range": {time_field: window}})
    clauses += [{"terms": {field: values}} for field, values in (terms or {}).items()]
    must_not: list[dict[str, Any]] = [{"terms": {f: v}} for f, v in (exclude or {}).items()]
    if live_only:
        must_not.append({"exists": {"field": "valid_to"}})
    return {"bool": {"filter": clauses, **({"must_not": must_not} if must_not else {})}}


# ---- results -------------------------------------------------------------------------------------


_UNSUPPORTED_HINTS = ("licen", "rrf", "retriever", "rank", "explain", "unknown", "not supported")


def rrf_unsupported(status: int, message: str) -> bool:
    """Whether an error to an ``rrf`` retriever search means the cluster cannot do server-side RRF (no
    licence: 403 ``current license is non-compliant for [Reciprocal Rank Fusion (RRF)]``; older or other
    servers: 400 ``unknown retriever`` / ``Unknown key for a START_OBJECT in [retriever]``)."""
    return status in (400, 403, 404, 405, 501) and any(h in message.lower() for h in _UNSUPPORTED_HINTS)


def cosine_from_score(score: float) -> float:
    """Elasticsearch's cosine ``_score`` is ``(1 + cos) / 2``."""
    return 2.0 * score - 1.0


_RANK_RE = re.compile(r"for rank \[(\d+)\]")


def parse_rrf_explanation(explanation: dict[str, Any], legs: int = 2) -> list[tuple[int, float] | None]:
    """Per leg ``(rank, raw score)`` or None (not in that leg) from an RRF hit's ``_explanation``.

    Elasticsearch explains an RRF hit with one detail per retriever whose value is the 1-based rank (0 when
    the hit was not found in that leg) and whose first sub-detail carries the leg's own score. Raises
    ValueError when the explanation does not have that shape.
    """
    details = explanation.get("details") or []
    if len(details) != legs or "rrf" not in str(explanation.get("description", "")):
        raise ValueError(f"not an RRF explanation: {str(explanation)[:200]}")
    out: list[tuple[int, float] | None] = []
    for d in details:
        described = _RANK_RE.search(str(d.get("description", "")))
        rank = int(described.group(1)) if described else int(d.get("value") or 0)
        if rank <= 0:
            out.append(None)
            continue
        sub = d.get("details") or []
        if not sub or "value" not in sub[0]:
            raise ValueError(f"RRF explanation without the leg's score: {str(d)[:200]}")
        out.append((rank, float(sub[0]["value"])))
    return out


def fuse_legs(
    bm25: list[tuple[str, float]], knn: list[tuple[str, float]], k: int, rrf_k: int
) -> list[tuple[str, float, dict[str, float]]]:
    """Client-side hybrid: RRF of the two best-first legs (as the SQLite store fuses), top ``k``.

    Returns ``(id, rrf score, scores)`` with ``bm25``/``bm25_rank`` and ``cosine``/``knn_rank`` for the
    legs the id was found in, and ``rrf``.
    """
    scores: dict[str, dict[str, float]] = {}
    for name, label, leg in (("bm25", "bm25", bm25), ("knn", "cosine", knn)):
        for rank, (doc_id, s) in enumerate(leg, start=1):
            scores.setdefault(doc_id, {}).update({label: s, f"{name}_rank": float(rank)})
    fused = rrf([[d for d, _ in bm25], [d for d, _ in knn]], k=rrf_k)[:k]
    return [(d, s, {**scores[d], "rrf": s}) for d, s in fused]


def scores_from_legs(legs: list[tuple[int, float] | None], rrf_k: int) -> dict[str, float]:
    """``Hit.scores`` of a server-side RRF hit from its parsed explanation (BM25 leg, then kNN leg).

    The RRF score is recomputed in double precision (the server reports float32), so it equals the
    client-side fusion's.
    """
    scores: dict[str, float] = {}
    bm25, knn = legs
    if bm25 is not None:
        scores.update(bm25=bm25[1], bm25_rank=float(bm25[0]))
    if knn is not None:
        scores.update(cosine=cosine_from_score(knn[1]), knn_rank=float(knn[0]))
    scores["rrf"] = sum(1.0 / (rrf_k + leg[0]) for leg in legs if leg is not None)
    return scores


def rrf_order_key(scores: dict[str, float]) -> tuple[float, int, float]:
    """Sort key matching :func:`retrieval.fusion.rrf` ties: higher score, then BM25 leg first, then rank."""
    if "bm25_rank" in scores:
        return (-scores["rrf"], 0, scores["bm25_rank"])
    return (-scores["rrf"], 1, scores.get("knn_rank", 0.0))


# ---- hits ----------------------------------------------------------------------------------------


def search_kwargs(body: dict[str, Any]) -> dict[str, Any]:
    """A request body as ``AsyncElasticsearch.search`` keyword arguments (``_source`` is ``source``)."""
    return {("source" if key == "_source" else key): value for key, value in body.items()}


def leg_hits(hits: list[dict[str, Any]], leg: Literal["bm25", "knn"]) -> list[Hit]:
    """One leg's hits, best first, scored as the SQLite store scores them (cosine, not ``(1+cos)/2``)."""
    label, rank_label = ("bm25", "bm25_rank") if leg == "bm25" else ("cosine", "knn_rank")
    out = []
    for rank, h in enumerate(hits, start=1):
        score = h["_score"] if leg == "bm25" else cosine_from_score(h["_score"])
        out.append(
            Hit(
                doc=doc_from_source(h["_source"]), score=score, scores={label: score, rank_label: float(rank)}
            )
        )
    return out


def fused_hits(bm25: list[dict[str, Any]], knn: list[dict[str, Any]], k: int, rrf_k: int) -> list[Hit]:
    """Client-side hybrid: the two legs' hits fused by :func:`fuse_legs`."""
    docs = {h["_source"]["doc_id"]: h["_source"] for h in bm25 + knn}
    fused = fuse_legs([(h.doc.doc_id, h.score) for h in leg_hits(bm25, "bm25")],
                      [(h.doc.doc_id, h.score) for h in leg_hits(knn, "knn")], k, rrf_k)  # fmt: skip
    return [Hit(doc=doc_from_source(docs[d]), score=s, scores=sc) for d, s, sc in fused]


def rrf_hits(hits: list[dict[str, Any]], rrf_k: int) -> list[Hit]:
    """Server-side hybrid: ``rrf`` retriever hits (with explanations) scored and ordered as client-side."""
    out = []
    for h in hits:
        scores = scores_from_legs(parse_rrf_explanation(h.get("_explanation") or {}), rrf_k)
        out.append(Hit(doc=doc_from_source(h["_source"]), score=scores["rrf"], scores=scores))
    return sorted(out, key=lambda hit: rrf_order_key(hit.scores))
