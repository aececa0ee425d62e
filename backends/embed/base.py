"""What every in-process embedder shares: the vector size, L2 normalisation and the lazy-load machinery, and
the model's own threads: one runs the pipeline's forwards, one at a time from a priority queue; the other
runs questions' forwards.

Every pipeline call goes to the first thread's queue, and the thread takes the next job as soon as a forward
ends, without waiting for an event loop to hand it over: when the loop is busy with a stage's Python (the
Kafka worker runs every stage in one loop), the model still works through what is queued. Jobs run by
priority, then in arrival order: ordinary calls (:data:`NORMAL`), then the texts of results about to be
decided (:data:`SOON`: the consolidator's candidates embedded ahead, all their chunks queued at once), then
work queued further ahead of the stage that needs it (:data:`AHEAD`: the next batches of raw messages); set
for a block of code with :func:`embedding_priority`. An encoder that cuts a
call into several forwards lets a job that outranks it run between two of them (:func:`between_forwards`):
a stage waiting for a few texts waits for one forward, not for a whole batch embedded ahead, and the ahead
call's forwards (its int8 vectors depend on what shares a forward) stay as they were.

A question (``is_query``: a few short texts) does not queue behind them: under ``serve`` a forward of the
pipeline's (up to a few hundred turns) holds the model for a third of a second, and a question waiting
for it took ~170 ms at p95 instead of ~10. It runs at once on the second thread (its vectors are its own
forward's either way, so they do not change). The model loads once, on the first job; the threads start
with the first call (never at import) and end after a while without work.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import os
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

DIM = 384
# MiniLM's cosine of two single words that mean one thing (work/job 0.78, money/pay 0.62, teacher/tutor 0.65;
# unrelated pairs 0.15-0.35, kin such as play/football 0.45): retrieval.router.synonyms
SYNONYM_MINILM = 0.62

NORMAL, SOON, AHEAD = 0, 1, 2  # job priorities of the pipeline's thread, lowest first
_PRIORITY: contextvars.ContextVar[int] = contextvars.ContextVar("memstream_embed_priority", default=NORMAL)


@contextlib.contextmanager
def embedding_priority(priority: int) -> Iterator[None]:
    """Embedding calls made in this block (and in tasks it creates) queue at ``priority``."""
    token = _PRIORITY.set(priority)
    try:
        yield
    finally:
        _PRIORITY.reset(token)


def current_priority() -> int:
    """The priority embedding calls made here queue at (:func:`embedding_priority`)."""
    return _PRIORITY.get()


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation to float32; zero rows stay zero."""
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.where(norms == 0.0, 1.0, norms)).astype(np.float32, copy=False)


async def warm_up(embedder: Any) -> float:
    """Load ``embedder``'s model (``warm()`` where it has one, else a first query) and return the seconds it
    took: a process that serves or consumes calls it at start, so the first message or question does not
    wait for the model, nor does a throughput bench's clock."""
    t0 = time.perf_counter()
    if embedder is not None:
        warm = getattr(embedder, "warm", None)
        await (warm() if warm is not None else embedder.embed(["warm-up"], is_query=True))
    return time.perf_counter() - t0


def _empty(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)


def _deliver(fut: asyncio.Future, ok: bool, value: Any) -> None:
    if not fut.done():  # the caller may have given up (cancelled)
        if ok:
            fut.set_result(value)
        else:
            fut.set_exception(value)


class _ModelThread:
    """One thread running jobs from a priority queue; results go back to each caller's own event loop."""

    IDLE_S = 30.0  # the thread ends after this long without a job (and starts again with the next)

    def __init__(self, name: str) -> None:
        self.name = name
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._guard = threading.Lock()
        self._jobs: queue.PriorityQueue = queue.PriorityQueue()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def submit(self, work: Any, args: tuple, priority: int) -> asyncio.Future:
        """Queue ``work(*args)``; the returned future (of the running loop) gets its result."""
        if self._pid != os.getpid():  # a forked child: the parent's thread and queue are not here
            self._reset()
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        with self._guard:
            self._jobs.put((priority, next(self._seq), work, args, loop, fut))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
        return fut

    def _run(self) -> None:
        _running.thread = self
        while True:
            try:
                job = self._jobs.get(timeout=self.IDLE_S)
            except queue.Empty:
                with self._guard:  # no job can be queued meanwhile, so none is left behind
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            self._execute(job)

    def _execute(self, job: tuple) -> None:
        priority, _, work, args, loop, fut = job
        if fut.cancelled():  # nobody waits for it any more
            return
        outer = getattr(_running, "priority", None)
        _running.priority = priority
        try:
            ok, value = True, work(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            ok, value = False, exc
        finally:
            _running.priority = outer
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody to tell
            loop.call_soon_threadsafe(_deliver, fut, ok, value)

    def run_urgent(self, priority: int) -> None:
        """On this thread, between two forwards of a job at ``priority``: run the queued jobs that come
        before it (a stage's call arriving while work embedded ahead is under way waits for one forward,
        not for all of that work). Only this thread takes jobs, so the head cannot move behind the check."""
        while True:
            with self._jobs.mutex:
                if not self._jobs.queue or self._jobs.queue[0][0] >= priority:
                    return
            self._execute(self._jobs.get_nowait())


_running = threading.local()  # on a model thread: the _ModelThread and the priority of the job it runs


def between_forwards() -> None:
    """Called by an encoder after each forward of a multi-forward call: runs the jobs that outrank the
    current one (:meth:`_ModelThread.run_urgent`). The current call's forwards, and so its vectors, are the
    same with or without them. Outside a model thread it does nothing."""
    thread, priority = getattr(_running, "thread", None), getattr(_running, "priority", None)
    if thread is not None and priority is not None:
        thread.run_urgent(priority)


class _LazyModelEmbedder:
    """Shared lazy-load + serialised-forward machinery; subclasses implement ``_load`` and ``_encode``."""

    name: str
    dim: int = DIM

    def __init__(self, batch: int = 64) -> None:
        self.batch = max(1, batch)
        self._model: Any = None
        self._loading = threading.Lock()
        self._worker = _ModelThread(f"memstream-embed-{self.name}")
        self._asker = _ModelThread(f"memstream-embed-{self.name}-questions")

    def _load(self) -> Any:  # runs in a worker thread
        raise NotImplementedError

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:  # worker thread
        raise NotImplementedError

    def _loaded(self) -> Any:  # one of the model's threads
        if self._model is None:
            with self._loading:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _forward(self, texts: list[str], is_query: bool) -> np.ndarray:  # one of the model's threads
        return self._encode(self._loaded(), texts, is_query)

    def _prepare(self, model: Any) -> None:  # one of the model's threads
        """What the first forwards would otherwise set up (sessions, buffers); nothing by default."""

    async def warm(self) -> None:
        """Load the model and set up what its forwards use, now rather than in the first call."""
        await self._worker.submit(lambda: self._prepare(self._loaded()), (), NORMAL)

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        if not texts:
            return _empty(self.dim)
        thread = self._asker if is_query else self._worker
        out = await thread.submit(self._forward, (list(texts), is_query), _PRIORITY.get())
        return l2_normalise(out)

    def _encode_sentences(self, model: Any, texts: list[str]) -> tuple[np.ndarray, list[list[tuple[str, np.ndarray]]]]:
        """Passages and, where the model can pool them from the same forward, their sentences' vectors (a
        list of (sentence, vector) per text); by default none."""
        return self._encode(model, texts, False), [[] for _ in texts]

    async def embed_with_sentences(self, texts: list[str]) -> tuple[np.ndarray, list[list[tuple[str, np.ndarray]]]]:
        """Passages (as :meth:`embed`) and their sentences' vectors, all L2-normalised."""
        if not texts:
            return _empty(self.dim), []
        work = lambda: self._encode_sentences(self._loaded(), list(texts))  # noqa: E731
        out, sentences = await self._worker.submit(work, (), _PRIORITY.get())
        return l2_normalise(out), [[(s, l2_normalise(v)[0]) for s, v in row] for row in sentences]
