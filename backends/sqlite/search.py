"""Queries of the embedded store: BM25 over FTS5, the kNN leg (given by the store), RRF fusion, hits.

Plain functions over a SQLite connection; :class:`backends.sqlite.store.SQLiteStore` passes its kNN leg
(its per-chat vector cache) as a function. Every statement is filtered by ``chat_id``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backends.sqlite import bm25 as sqlite_bm25
from backends.sqlite.schema import DOC_COLS, RECORD, chat_token, epoch, row_to_doc
from backends.sqlite.util import chunks, marks
from language.text import fts_query
from retrieval.fusion import rrf
from retrieval.protocols import Doc, Hit, SearchQuery

__all__ = ["bm25", "records_by_rid", "search", "until_write"]

Ranked = list[tuple[int, float]]  # (doc rowid, score), best first


def _filters(q: SearchQuery) -> tuple[str, list[Any]]:
    sql, args = "", []
    if q.kinds is not None:
        sql, args = sql + f" AND d.kind IN ({marks(q.kinds)})", [*args, *q.kinds]
    if q.since is not None:
        sql, args = sql + " AND d.ts_epoch >= ?", [*args, epoch(q.since)]
    if q.until is not None:
        sql, args = sql + " AND d.ts_epoch <= ?", [*args, epoch(q.until)]
    if not q.include_superseded:
        sql += " AND d.valid_to IS NULL"
    return sql, args


def bm25(db: sqlite3.Connection, q: SearchQuery, limit: int) -> Ranked:
    """The BM25 leg: at most ``limit`` docs of the chat matching the query's tokens, best first (ties by rid).

    FTS5 ranks the chat's matches alone (the chat token in the MATCH) and only the best ``4 * limit`` are
    checked against the filters; only when too few of those pass is the ranking joined with them in full.
    Joining every match cost as much as ranking them (13 of 32 ms for a question matching 5,000 docs of a
    100k-doc chat). The result is the same either way."""
    match = fts_query(q.text)
    if not match or limit <= 0 or (q.kinds is not None and not q.kinds):
        return []
    if db.in_transaction:  # what a transaction reads may be rolled back: nothing is kept from it
        return _bm25(db, q, limit, match)
    memo = _cache(db).bm25
    key = (q.chat_id, match, None if q.kinds is None else tuple(q.kinds), q.since, q.until, q.include_superseded,
           limit)  # fmt: skip
    if (ranked := memo.get(key)) is None:
        if len(memo) >= MAX_MEMO_BM25:
            memo.clear()
        ranked = memo[key] = _bm25(db, q, limit, match)
    return ranked


def _bm25(db: sqlite3.Connection, q: SearchQuery, limit: int, match: str) -> Ranked:
    where, args = _filters(q)
    found = sqlite_bm25.ranked(db, q.chat_id, [t[1:-1] for t in match.split(" OR ")])
    if found is not None:  # the same ranking from the chat's in-memory postings
        return _bm25_filtered(db, q, limit, where, args, found)
    fts = f'chat : "{chat_token(q.chat_id)}" AND body : ({match})'
    window = max(4 * limit, 64)
    top = db.execute(
        "SELECT rowid, bm25(docs_fts, 1.0, 0.0) AS s FROM docs_fts WHERE docs_fts MATCH ? ORDER BY s, rowid LIMIT ?",
        (fts, window),
    ).fetchall()
    rows = _first_passing(db, q, top, limit)
    if len(rows) < limit and len(top) == window:  # the filters left too few of the best: rank with them
        rows = db.execute(
            "SELECT d.rid, bm25(docs_fts, 1.0, 0.0) AS s FROM docs_fts JOIN docs d ON d.rid = docs_fts.rowid"
            f" WHERE docs_fts MATCH ? AND d.chat_id = ?{where} ORDER BY s, d.rid LIMIT ?",
            (fts, q.chat_id, *args, limit),
        ).fetchall()
    return [(rid, -score) for rid, score in rows]  # FTS5 bm25() is negated: flip so higher is better


def _passing(db: sqlite3.Connection, q: SearchQuery, rids: list[int]) -> set[int]:
    """Which of ``rids`` pass the query's filters (:func:`_filters`: chat, kinds, time bounds, currency), checked
    on each doc's filtered columns, read once per doc and kept until the next write (:func:`_cache`)."""
    meta = _cache(db).meta
    missing = [rid for rid in rids if rid not in meta]
    for chunk in chunks(missing):
        sql = f"SELECT rid, chat_id, kind, ts_epoch, valid_to IS NULL FROM docs WHERE rid IN ({marks(chunk)})"
        rows = db.execute(sql, chunk).fetchall()
        meta.update((rid, (chat, kind, ts, bool(live))) for rid, chat, kind, ts, live in rows)
    kinds = None if q.kinds is None else set(q.kinds)
    since = epoch(q.since) if q.since is not None else None
    until = epoch(q.until) if q.until is not None else None
    kept = set()
    for rid in rids:
        if (m := meta.get(rid)) is None or m[0] != q.chat_id or (kinds is not None and m[1] not in kinds):
            continue
        in_time = (since is None or m[2] >= since) and (until is None or m[2] <= until)
        if in_time and (q.include_superseded or m[3]):
            kept.add(rid)
    return kept


def _first_passing(db: sqlite3.Connection, q: SearchQuery, top: Ranked, limit: int) -> Ranked:
    """The first ``limit`` of ``top`` (best first) that pass the filters. The best ``limit`` and a quarter are
    checked first and the rest only when too few of those pass: most searches filter out few docs, and each
    row checked costs a lookup in the docs table (~1 ms for the 160 of a search of a 100k-doc chat)."""
    head = limit + limit // 4 + 8
    kept = _passing(db, q, [rid for rid, _ in top[:head]])
    rows = [(rid, s) for rid, s in top[:head] if rid in kept][:limit]
    if len(rows) < limit and len(top) > head:
        kept = _passing(db, q, [rid for rid, _ in top[head:]])
        rows += [(rid, s) for rid, s in top[head:] if rid in kept][: limit - len(rows)]
    return rows


def _bm25_filtered(db: sqlite3.Connection, q: SearchQuery, limit: int, where: str, args: list[Any],
                   found: tuple[Any, Any]) -> Ranked:  # fmt: skip
    """The first ``limit`` of ``found`` (best first) that pass the query's filters: the best ``4 * limit``
    checked by rowid; when too few of them pass, the chat's docs that pass are read (one indexed query)."""
    top = sqlite_bm25.best(*found, max(4 * limit, 64))
    rows = _first_passing(db, q, top, limit)
    if len(rows) >= limit or len(top) == len(found[0]):
        return rows
    passing = np.fromiter((rid for (rid,) in db.execute(f"SELECT d.rid FROM docs d WHERE d.chat_id = ?{where}",
                                                         (q.chat_id, *args))), dtype=np.int64)  # fmt: skip
    keep = np.isin(found[0], passing)
    return sqlite_bm25.best(found[0][keep], found[1][keep], limit)


def search(db: sqlite3.Connection, q: SearchQuery, knn: Callable[[int], Ranked]) -> list[Hit]:
    """BM25, cosine kNN (``knn(limit)``) or both fused by RRF, always within ``q.chat_id``.

    ``scores`` carries ``bm25`` (positive BM25, higher is better) and ``bm25_rank``, ``cosine`` and
    ``knn_rank``, and ``rrf`` for hybrid. Hybrid without a query vector degrades to BM25 candidates.
    """
    scores: dict[int, dict[str, float]] = {}
    if q.mode == "bm25":
        ranked, label, rank_label = bm25(db, q, q.k), "bm25", "bm25_rank"
    elif q.mode == "knn":
        ranked, label, rank_label = knn(q.k), "cosine", "knn_rank"
    else:
        return _hybrid(db, q, knn)
    for rank, (rid, s) in enumerate(ranked, start=1):
        scores[rid] = {label: s, rank_label: float(rank)}
    return _hits(db, q.chat_id, ranked, scores)


def _hybrid(db: sqlite3.Connection, q: SearchQuery, knn: Callable[[int], Ranked]) -> list[Hit]:
    n = max(q.candidates, q.k)
    lists = {"bm25": bm25(db, q, n), "knn": knn(n)}
    scores: dict[int, dict[str, float]] = {}
    for lst, label, rank_label in ((lists["bm25"], "bm25", "bm25_rank"), (lists["knn"], "cosine", "knn_rank")):
        for rank, (rid, s) in enumerate(lst, start=1):
            if (row := scores.get(rid)) is None:
                row = scores[rid] = {}
            row[label], row[rank_label] = s, float(rank)
    # RRF over the rowids themselves: rrf() only hashes and compares its ids, so ints rank as their strings did
    ranked = rrf([[rid for rid, _ in lst] for lst in lists.values()], k=q.rrf_k)[: q.k]
    for rid, s in ranked:
        scores[rid]["rrf"] = s
    return _hits(db, q.chat_id, ranked, scores)


def _hits(db: sqlite3.Connection, chat_id: str, ranked: Ranked, scores: dict[int, dict]) -> list[Hit]:
    """The hits, built without validation (~40 per search, a routed question runs several): every field is
    already what validation would make of it (a ``Doc``, Python floats, a dict of this hit alone)."""
    docs = _docs_by_rid(db, chat_id, [rid for rid, _ in ranked])
    return [_hit(docs[rid], float(s), scores[rid]) for rid, s in ranked if rid in docs]


_new, _set = object.__new__, object.__setattr__


def _hit(doc: Doc, score: float, scores: dict[str, float]) -> Hit:
    """``Hit.model_construct(doc=doc, score=score, scores=scores)``: the same instance state set directly, in a
    third of the time (a routed question builds a few hundred hits); tested equal to it."""
    hit = _new(Hit)
    _set(hit, "__dict__", {"doc": doc, "score": score, "scores": scores})
    _set(hit, "__pydantic_fields_set__", {"doc", "score", "scores"})
    _set(hit, "__pydantic_extra__", None)
    _set(hit, "__pydantic_private__", None)
    return hit


@dataclass
class _Docs:
    """Docs read from one connection, valid while nothing was written (by it or by any other connection)."""

    db: sqlite3.Connection  # held: the id() keying this entry cannot be reused meanwhile
    written: tuple[int, int]  # (PRAGMA data_version, the connection's total_changes)
    docs: dict[int, Doc] = field(default_factory=dict)
    meta: dict[int, tuple[str, str, float, bool]] = field(default_factory=dict)  # chat, kind, ts_epoch, live
    bm25: dict[tuple, Ranked] = field(default_factory=dict)  # a BM25 leg's ranking by query (:func:`bm25`)
    derived: dict[Any, Any] = field(default_factory=dict)  # what callers derive from reads (:func:`until_write`)


_DOCS: dict[int, _Docs] = {}
MAX_CACHED_DOCS = 50_000
MAX_CACHED_META = 200_000  # ~50 MB
MAX_MEMO_BM25 = 1024


def _cache(db: sqlite3.Connection) -> _Docs:
    """The connection's docs read since the last write anywhere (a fresh, empty entry after one)."""
    written = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes)
    entry = _DOCS.get(id(db))
    stale = entry is None or entry.db is not db or entry.written != written
    if stale or len(entry.docs) > MAX_CACHED_DOCS or len(entry.meta) > MAX_CACHED_META:
        if len(_DOCS) >= 4:
            _DOCS.clear()
        entry = _DOCS[id(db)] = _Docs(db, written)
    return entry


def until_write(db: sqlite3.Connection) -> dict[Any, Any]:
    """A dict kept for the connection until the next write anywhere (then a fresh, empty one): for what a
    caller derives from its reads alone (:mod:`retrieval.store_memo`). Inside a transaction, whose reads may
    be rolled back, a dict of its own that nothing keeps."""
    if db.in_transaction:
        return {}
    entry = _cache(db)
    if len(entry.derived) > MAX_MEMO_BM25:
        entry.derived.clear()
    return entry.derived


def _docs_by_rid(db: sqlite3.Connection, chat_id: str, rids: list[int]) -> dict[int, Doc]:
    """The chat's docs by rowid. Building a ``Doc`` (dates, JSON, validation) cost ~20 µs: the ones read since
    the last write anywhere are reused, so a question's several searches and the next questions share them."""
    entry = _cache(db)
    missing = [rid for rid in rids if rid not in entry.docs]
    for chunk in chunks(missing):
        rows = db.execute(f"SELECT {DOC_COLS} FROM docs WHERE rid IN ({marks(chunk)})", chunk).fetchall()
        entry.docs.update((row[0], row_to_doc(row)) for row in rows)
    return {rid: doc for rid in rids if (doc := entry.docs.get(rid)) is not None and doc.chat_id == chat_id}


def records_by_rid(db: sqlite3.Connection, chat_id: str, rids: list[int]) -> dict[int, str]:
    """The memory record JSON of the chat's memory docs by rowid (turns have none)."""
    out: dict[int, str] = {}
    for chunk in chunks(rids):
        sql = f"SELECT d.rid, m.record FROM docs d {RECORD} WHERE +d.chat_id = ? AND d.rid IN ({marks(chunk)})"
        out.update(db.execute(sql, (chat_id, *chunk)).fetchall())
    return out
