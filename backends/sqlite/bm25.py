"""BM25 of one chat in memory: the scores and order of FTS5's ``bm25(docs_fts, 1.0, 0.0)``, to the bit.

FTS5 computes ``bm25()`` for every row that matches any query term: ~3 µs a row, 20-40 ms for a common-word
question in a 100k-document chat, ~1.5 ms in a LoCoMo chat. Here each chat's rows are held as postings
(term -> rows, term frequencies) with their lengths, read once from the FTS table, and a question is scored
with numpy in the same floating-point operations as ``fts5Bm25Function`` (sqlite ``fts5_aux.c``):

    idf(t)  = log((N - n_t + 0.5) / (n_t + 0.5)), at least 1e-6     N rows, n_t rows with t in the body
    score   = sum over t of idf(t) * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))
    D       = the row's tokens in every column (body + the chat token); avgdl = all tokens / N

with the table-wide N and token totals read from the FTS averages record and n_t from an ``fts5vocab`` table.
The index of a chat is used only while the FTS index is exactly as it was read (its averages and structure
records unchanged: every insert, delete or edit rewrites the structure record's write counter); otherwise
it is rebuilt, at most as often as keeps rebuilding under 1/``REBUILD_RATIO`` of the time, and FTS5 ranks
meanwhile. Chats or questions with a token FTS5's ``unicode61`` tokenizer might split or fold differently
than a whitespace split (see :func:`plain`) are always left to FTS5.
"""

from __future__ import annotations

import math
import sqlite3
import time
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from backends.sqlite.schema import chat_token

__all__ = ["ChatIndex", "best", "plain", "ranked"]

K1, B = 1.2, 0.75  # fts5Bm25Function's constants
REBUILD_RATIO = 20  # a stale index is rebuilt when its last build took at most 1/20 of the time since
MAX_CONNECTIONS = 4  # connections whose indices are kept (LRU)
MAX_CHATS = 64  # chats kept per connection (LRU)
_VERSION_SQL = "SELECT id, block FROM docs_fts_data WHERE id IN (1, 10) ORDER BY id"  # averages, structure


def plain(token: str) -> bool:
    """A token ``unicode61`` keeps whole and unchanged: lowercase letters (``café``), uncased letters (CJK,
    kana, Hangul...) and decimal digits only; anything else (capitals, marks, symbols) is left to FTS5."""
    if not token or not token.isalnum():
        return False
    if token.isascii():
        return token == token.lower()
    return all(unicodedata.category(c) in ("Ll", "Lo", "Nd") for c in token)


@dataclass
class ChatIndex:
    """One chat's FTS rows: ``rids`` ascending, ``lengths`` (all columns), postings as slices of two arrays."""

    rids: np.ndarray
    lengths: np.ndarray
    rows: np.ndarray  # row positions (into rids), grouped by term
    freqs: np.ndarray  # the term's frequency in that row
    spans: dict[str, tuple[int, int]]  # term -> its slice of rows/freqs
    version: tuple
    built_at: float
    cost: float
    usable: bool = True  # False: a token the whitespace split might not see as FTS5 does

    @classmethod
    def read(cls, db: sqlite3.Connection, chat_id: str, version: tuple) -> ChatIndex:
        t0 = time.perf_counter()
        found = db.execute(
            "SELECT rowid, body FROM docs_fts WHERE docs_fts MATCH ? ORDER BY rowid",
            (f'chat : "{chat_token(chat_id)}"',),
        ).fetchall()
        bodies = [body for _, body in found]
        per_row = np.fromiter(map(len, map(str.split, bodies)), dtype=np.int64, count=len(bodies))
        tokens = " ".join(bodies).split()  # every row's tokens, in row order (C loops, not Python ones)
        names = list(dict.fromkeys(tokens))
        ids = dict(zip(names, range(len(names)), strict=True))
        term_ids = np.fromiter(map(ids.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        row_of = np.repeat(np.arange(len(bodies), dtype=np.int64), per_row)
        n = max(1, len(found))
        keys, freqs = np.unique(term_ids * n + row_of, return_counts=True)
        terms = keys // n
        cuts = np.flatnonzero(np.diff(terms)) + 1
        starts = np.concatenate([[0], cuts]).astype(np.int64)
        ends = np.concatenate([cuts, [len(keys)]]).astype(np.int64)
        spans = {names[t]: (s, e) for t, s, e in zip(terms[starts].tolist(), starts.tolist(), ends.tolist(),
                                                       strict=True)} if len(keys) else {}  # fmt: skip
        lengths = per_row.astype(np.float64) + 1.0  # + the chat column's one token
        return cls(rids=np.asarray([r for r, _ in found], dtype=np.int64), lengths=lengths,
                   rows=(keys % n).astype(np.int32), freqs=freqs.astype(np.int32), spans=spans, version=version,
                   built_at=time.monotonic(), cost=time.perf_counter() - t0, usable=all(map(plain, names)))  # fmt: skip


@dataclass
class _Connection:
    db: sqlite3.Connection  # held so that id() of this entry's key cannot be reused by another connection
    chats: OrderedDict[str, ChatIndex] = field(default_factory=OrderedDict)
    df: dict[str, int] = field(default_factory=dict)  # rows with the term in the body, for ``df_version``
    df_version: tuple = ()
    vocab: bool = False


_CONNECTIONS: OrderedDict[int, _Connection] = OrderedDict()


def _entry(db: sqlite3.Connection) -> _Connection:
    entry = _CONNECTIONS.get(id(db))
    if entry is None or entry.db is not db:
        entry = _CONNECTIONS[id(db)] = _Connection(db)
    _CONNECTIONS.move_to_end(id(db))
    while len(_CONNECTIONS) > MAX_CONNECTIONS:
        _CONNECTIONS.popitem(last=False)
    return entry


def _varints(buf: bytes) -> list[int]:
    """SQLite varints (FTS5 records): 7 bits a byte, high bit = more; the 9th byte carries 8 bits."""
    out, i = [], 0
    while i < len(buf):
        value = 0
        for j in range(9):
            byte = buf[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def _index(db: sqlite3.Connection, entry: _Connection, chat_id: str, version: tuple) -> ChatIndex | None:
    index = entry.chats.get(chat_id)
    if index is not None and index.version != version:
        if time.monotonic() - index.built_at < REBUILD_RATIO * index.cost:
            return None  # rebuilt a moment ago and written since: FTS5 ranks until rebuilding is cheap again
        index = None
    if index is None:
        index = entry.chats[chat_id] = ChatIndex.read(db, chat_id, version)
        while len(entry.chats) > MAX_CHATS:
            entry.chats.popitem(last=False)
    entry.chats.move_to_end(chat_id)
    return index if index.usable else None


def _doc_freq(db: sqlite3.Connection, entry: _Connection, term: str, version: tuple) -> int:
    if entry.df_version != version:
        entry.df, entry.df_version = {}, version
    if term not in entry.df:
        if not entry.vocab:
            db.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.docs_fts_vocab USING fts5vocab(main, 'docs_fts', 'col')"
            )
            entry.vocab = True
        row = db.execute(
            "SELECT doc FROM temp.docs_fts_vocab WHERE term = ? AND col = 'body'", (term,)
        ).fetchone()
        entry.df[term] = int(row[0]) if row else 0
    return entry.df[term]


def ranked(db: sqlite3.Connection, chat_id: str, terms: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(rowids, scores) of the chat's rows matching any of ``terms`` (distinct, in query order), unordered
    (:func:`best` orders them as ``ORDER BY bm25(docs_fts, 1.0, 0.0), rowid`` does; scores positive). None
    when the in-memory index cannot answer exactly (FTS5 must rank)."""
    if not terms or not all(map(plain, terms)):
        return None
    if db.in_transaction:
        return _ranked(db, chat_id, terms)
    # one read snapshot: the statistics, the postings and the document frequencies must come from the same
    # state of the index (a write from another connection in between made a term's document frequency
    # exceed the row count: a math domain error, a 500 under concurrent writes)
    db.execute("BEGIN")
    try:
        return _ranked(db, chat_id, terms)
    finally:
        db.execute("COMMIT")


def _ranked(db: sqlite3.Connection, chat_id: str, terms: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    blocks = dict(db.execute(_VERSION_SQL).fetchall())
    if 1 not in blocks or 10 not in blocks:
        return None
    version = (blocks[1], blocks[10])
    entry = _entry(db)
    index = _index(db, entry, chat_id, version)
    if index is None:
        return None
    averages = _varints(blocks[1])  # rows, then the tokens of each column (empty before the first row)
    if not averages or averages[0] <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    n_rows = averages[0]
    avgdl = float(sum(averages[1:])) / float(n_rows)
    score = np.zeros(len(index.rids), dtype=np.float64)
    hit = np.zeros(len(index.rids), dtype=bool)
    for term in terms:  # the order of the query's phrases: the same sum, to the bit
        span = index.spans.get(term)
        if span is None:  # not in this chat: no document frequency to look up
            continue
        n_hit = _doc_freq(db, entry, term, version)
        if not 0 < n_hit <= n_rows:  # inconsistent statistics: let FTS5 rank
            return None
        idf = math.log((n_rows - n_hit + 0.5) / (n_hit + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        rows = index.rows[span[0] : span[1]]
        f = index.freqs[span[0] : span[1]].astype(np.float64)
        d = index.lengths[rows]
        score[rows] += idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))
        hit[rows] = True
    found = np.flatnonzero(hit)
    return index.rids[found], score[found]


def best(rids: np.ndarray, scores: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The ``n`` best (rowid, score), best first, ties by rowid (all of them when ``n`` is None or more)."""
    if n is not None and n < len(rids):
        kth = np.partition(-scores, n - 1)[n - 1]
        keep = np.flatnonzero(-scores <= kth)  # every row tied with the n-th too: the rowid order decides
        rids, scores = rids[keep], scores[keep]
    order = np.lexsort((rids, -scores))[:n]
    return list(zip(rids[order].tolist(), scores[order].tolist(), strict=True))
