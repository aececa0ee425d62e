"""all-MiniLM-L6-v2 on onnxruntime (int8 by default): the default ``minilm`` embedder.

The fast ``tokenizers`` tokenizer and an onnxruntime session replace sentence-transformers + torch: nothing of
torch is imported unless the ONNX file has to be exported first (:mod:`backends.embed.export`, done once at
install). int8 embeds one text per forward (``solo``, the default): its dynamic activation ranges span a whole
forward, so a batched text's vector would depend on its batch mates. Batched (``solo=False``, or fp32), texts
are sorted by token count and cut into batches of similar length, so little padding is computed; the output
is in input order.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from backends.embed.base import DIM, SYNONYM_MINILM, _LazyModelEmbedder, between_forwards
from language.extract.text import split_sentences

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"  # the same model as the torch MiniLM: calibrations keyed by it apply


# the cost of one forward in padded tokens: a fixed part per call (``FORWARD_OVERHEAD`` tokens) and, per row,
# ``width * (1 + width / ATTENTION_WIDTH)`` (the attention's share grows with the width); both fitted to the
# forward times of onnxruntime int8 on two threads (``python -m bench.throughput_embed``).
FORWARD_OVERHEAD = 16.0
ATTENTION_WIDTH = 1200.0
QUERY_TEXTS = 8  # a query call of at most this many texts (a routed question's) runs on one thread
SENTENCE_OUTPUT = ["sentence_embedding"]
BOTH_OUTPUTS = ["sentence_embedding", "token_embeddings"]  # the last hidden state too (embed_export, v2)


def sentence_spans(text: str) -> list[tuple[str, int, int]]:
    """The sentences of a text of several (:func:`language.extract.text.split_sentences`, the distiller's own
    split), each with its character span in ``text``; none for a text of one sentence (its vector is the
    text's). A sentence the split rewrote past finding (joined pieces) is left out."""
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return []
    plain = text.replace("\u2019", "'")  # as the split reads it (the same length)
    out, pos = [], 0
    for sentence in sentences:
        head, tail = sentence[:16], sentence[-16:]
        start = plain.find(head, pos)
        # the split only drops characters, so the tail is no nearer than the sentence's length allows (an
        # earlier repeat of it, "ha ha ha …", would cut the span short)
        end = plain.find(tail, start + len(sentence) - len(tail)) if start >= 0 else -1
        if start < 0 or end < 0:
            continue
        pos = end + len(tail)
        out.append((sentence, start, pos))
    return out


def _token_range(offsets: list[tuple[int, int]], sentence: str, start: int, end: int) -> tuple[str, int, int] | None:
    """The tokens (by index, special tokens left out) inside the character span ``[start, end)``; None when
    there are none or the text's tokens end before the span does (cut at the model's 256 tokens: a prefix
    of the sentence is not its vector)."""
    if max((b for _, b in offsets), default=0) < end:
        return None
    inside = [k for k, (a, b) in enumerate(offsets) if b > a and a >= start and b <= end]
    return (sentence, inside[0], inside[-1] + 1) if inside else None


def length_batches(lengths: list[int], batch: int, max_tokens: int,
                   overhead: float = FORWARD_OVERHEAD) -> list[list[int]]:  # fmt: skip
    """Indices grouped into batches over the texts sorted by length, each at most ``batch`` texts and at most
    ``max_tokens`` padded tokens (unless one text alone is longer). The cuts minimise the padded compute plus
    ``overhead`` per forward (dynamic programming over the sorted lengths): a batch of 16 chat turns of 10 to
    80 tokens padded to 80 cost twice the tokens it holds; cut by length it costs a few forwards more."""
    n = len(lengths)
    order = sorted(range(n), key=lambda i: lengths[i])
    width = np.array([max(lengths[i], 1) for i in order], dtype=np.float64)
    row_cost = width * (1.0 + width / ATTENTION_WIDTH)
    starts = np.arange(n + 1, dtype=np.float64)
    best = np.zeros(n + 1)
    cut = [0] * (n + 1)
    for end in range(1, n + 1):  # best[end]: the cheapest cut of the first ``end`` texts
        c = row_cost[end - 1]  # sorted ascending: the last text of a batch is its widest
        lo = max(0, end - max(1, min(batch, int(max_tokens // width[end - 1]))))
        cost = best[lo:end] - starts[lo:end] * c  # + (overhead + end * c), the same for every start
        k = int(cost.argmin())
        best[end], cut[end] = cost[k] + overhead + end * c, lo + k
    out: list[list[int]] = []
    end = n
    while end > 0:
        out.append(order[cut[end] : end])
        end = cut[end]
    return out[::-1]


class OnnxMiniLMEmbedder(_LazyModelEmbedder):
    """all-MiniLM-L6-v2 exported to ONNX (``precision`` int8 = dynamic quantisation, or fp32) on onnxruntime.

    ``threads`` = intra-op threads (default: the CPUs this process may use). ``model_path`` overrides the
    exported file (tests); otherwise the cache file is exported on first use if missing.
    """

    name = MODEL_NAME
    abstain_cosine = 0.4
    synonym_cosine = SYNONYM_MINILM
    dim = DIM
    pools_sentences = True  # embed_with_sentences pools each sentence from the passage's forward
    batch_tokens = 8192  # padded tokens per forward: bounds memory and keeps batches of short texts large

    def __init__(
        self,
        batch: int = 256,
        *,
        precision: str = "int8",
        threads: int | None = None,
        model_path: Path | None = None,
        max_tokens: int = 256,
        solo: bool = True,
    ) -> None:
        super().__init__(batch)
        if precision not in ("int8", "fp32"):
            raise ValueError(f"unknown precision {precision!r} (int8, fp32)")
        self.precision = precision
        # int8 quantises each MatMul's input over the whole forward (onnxruntime's dynamic ranges), so a text
        # batched with others got a vector that depended on them: the Kafka worker and the embedded runner,
        # which batch differently, stored different memories. One text per forward (``solo``) makes its vector
        # its own; fixed static ranges cost more (the feed-forward output's outliers have to stay in float)
        self.solo = solo and precision == "int8"
        self.cache_name = f"{MODEL_NAME}/onnx-{precision}" + ("-solo" if self.solo else "")  # cached apart
        self.threads = threads
        self.model_path = model_path
        self.max_tokens = max_tokens
        self._pool: tuple[int, ThreadPoolExecutor] | None = None  # (pid, helpers of _lanes)

    def _load(self) -> Any:
        from tokenizers import Tokenizer

        from backends.embed.export import ensure_exported, ensure_optimized, tokenizer_file

        source = self.model_path or ensure_exported(self.precision)
        path = ensure_optimized(source)
        log.info("loading %s (%s, onnxruntime) from %s", self.name, self.precision, path)
        tok = Tokenizer.from_file(str(tokenizer_file()))
        tok.enable_truncation(max_length=self.max_tokens)
        tok.no_padding()
        # the sessions, by intra-op thread count, made on first use (:meth:`_session`)
        return tok, [path, source], {}

    def _session(self, model: Any, threads: int) -> Any:
        import onnxruntime as ort

        _, paths, sessions = model
        if threads in sessions:
            return sessions[threads]
        with self._loading:  # the question thread and the pipeline's may both ask for a new one
            if threads in sessions:
                return sessions[threads]
            path = paths[0]
            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            # no busy-waiting between forwards: the model is called in bursts between the stages' Python work on
            # the same cores, and spinning threads burn CPU those stages need, for the same vectors
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                sessions[threads] = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
            except Exception:  # noqa: BLE001 - a damaged kept graph: dropped, the model itself loads
                if path == paths[1]:
                    raise
                log.warning("the optimised graph %s does not load; using %s", path, paths[1], exc_info=True)
                with contextlib.suppress(OSError):  # a read-only cache keeps it; this process loads the model
                    Path(path).unlink(missing_ok=True)
                paths[0] = paths[1]
                sessions[threads] = ort.InferenceSession(str(paths[1]), opts, providers=["CPUExecutionProvider"])
        return sessions[threads]

    def _prepare(self, model: Any) -> None:
        """Both sessions (one thread: questions and side-by-side forwards; every CPU: a lone forward), each
        run once: their first run allocates what the next ones reuse."""
        feeds = _feeds([model[0].encode("warm-up", add_special_tokens=True).ids], [0])
        for threads in dict.fromkeys((1, self._cpus())):
            self._session(model, threads).run(None, feeds)

    def _threads(self, texts: list[str], is_query: bool) -> int:
        """CPUs for one call: a question's few texts run on one thread, with the request's Python work beside
        it on the other CPU (splitting a forward this small cost ~0.7 ms CPU of ~5.4 in hand-offs and saved no
        wall time; the vectors are the same bit for bit: tests/unit/retrieval/test_embed_threads.py); batches
        use every CPU (``threads``), a forward per CPU when there are several (:meth:`_lanes`)."""
        return 1 if is_query and len(texts) <= QUERY_TEXTS else self._cpus()

    def _cpus(self) -> int:
        """The intra-op threads of a forward that has every CPU (``threads``, else the CPUs this process may use)."""
        return self.threads or len(os.sched_getaffinity(0))

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:
        """The call's texts in length-sorted forwards (:func:`length_batches`). With several forwards and
        several CPUs, the forwards run side by side, one CPU each (:meth:`_lanes`); one forward uses every
        CPU for itself. Each forward, and so each vector, is the same either way."""
        return self._run(model, texts, is_query, None)[0]

    def _encode_sentences(self, model: Any, texts: list[str]) -> tuple[np.ndarray, list[list[tuple[str, np.ndarray]]]]:
        """:meth:`_encode` of passages, and of each text of several sentences (:func:`sentence_spans`) the
        mean of the last hidden state over each sentence's tokens, from the same forward (the sentence in
        the context of its turn; nothing is embedded twice). Unnormalised, as the text vectors here."""
        return self._run(model, texts, False, [sentence_spans(t) for t in texts])

    def _run(self, model: Any, texts: list[str], is_query: bool,
             spans: list[list[tuple[str, int, int]]] | None) -> tuple[np.ndarray, list[list[tuple[str, np.ndarray]]]]:  # fmt: skip
        encodings = model[0].encode_batch(texts, add_special_tokens=True)
        ids = [e.ids for e in encodings]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ranges = {}  # text -> [(sentence, first token, end token)] for the texts pooled by sentence
        for i, text_spans in enumerate(spans or []):
            if found := [r for s, a, b in text_spans if (r := _token_range(encodings[i].offsets, s, a, b))]:
                ranges[i] = found
        pooled: list[list[tuple[str, np.ndarray]]] = [[] for _ in texts]
        groups = length_batches([len(x) for x in ids], 1 if self.solo else self.batch, self.batch_tokens)
        threads = self._threads(texts, is_query)
        lanes = threads if len(groups) > 1 else 1
        self._lanes(self._session(model, 1 if lanes > 1 else threads), ids, groups, lanes, out, ranges, pooled)
        return out, pooled

    def _lanes(self, session: Any, ids: list[list[int]], groups: list[list[int]], lanes: int, out: np.ndarray,
               ranges: dict[int, list[tuple[str, int, int]]] | None = None,
               pooled: list[list[tuple[str, np.ndarray]]] | None = None) -> np.ndarray:  # fmt: skip
        """Forwards taken in turn by ``lanes`` threads (this one and ``lanes - 1`` helpers); with more than
        one, each on a one-thread session. Beside the stages' Python on 2 CPUs this embedded 30-50% more texts
        a second than each forward split over both CPUs, whose halves wait for each other whenever Python
        holds one of them (measured on LoCoMo turns; alone the two are even). Only this thread runs the urgent
        calls between forwards (a more urgent call queued meanwhile runs then; these vectors stay the same).
        ``ranges``: the rows whose sentences are pooled into ``pooled`` (their forwards return the tokens)."""
        todo = iter(groups)
        lock = threading.Lock()
        ranges = ranges or {}

        def take() -> list[int] | None:
            with lock:
                return next(todo, None)

        def forward(group: list[int]) -> None:
            if not any(i in ranges for i in group):
                out[group] = session.run(SENTENCE_OUTPUT, _feeds(ids, group))[0]
                return
            vectors, tokens = session.run(BOTH_OUTPUTS, _feeds(ids, group))
            out[group] = vectors
            for row, i in enumerate(group):
                for sentence, lo, hi in ranges.get(i, ()):
                    pooled[i].append((sentence, tokens[row, lo:hi].mean(axis=0)))  # type: ignore[index]

        def lane() -> None:
            while (group := take()) is not None:
                forward(group)

        helpers = [self._helpers(lanes - 1).submit(lane) for _ in range(lanes - 1)]
        try:
            while (group := take()) is not None:
                forward(group)
                between_forwards()
        finally:
            for helper in helpers:  # one not started yet (its threads serve an outer call) has nothing left
                if not helper.cancel():
                    helper.result()
        return out

    def _helpers(self, n: int) -> ThreadPoolExecutor:
        """The ``n`` helper threads of :meth:`_lanes` (made on first use, again in a forked child; ``n`` is
        the same on every call: :meth:`_threads`' CPUs less this one)."""
        pool = self._pool
        if pool is None or pool[0] != os.getpid():
            with self._loading:
                pool = self._pool
                if pool is None or pool[0] != os.getpid():
                    pool = self._pool = (os.getpid(), ThreadPoolExecutor(n, thread_name_prefix="memstream-embed-lane"))
        return pool[1]


def _feeds(ids: list[list[int]], group: list[int]) -> dict[str, np.ndarray]:
    """One forward's inputs: the group's token ids, zero-padded to its longest."""
    width = max(len(ids[i]) for i in group)
    input_ids = np.zeros((len(group), width), dtype=np.int64)
    mask = np.zeros((len(group), width), dtype=np.int64)
    for row, i in enumerate(group):
        input_ids[row, : len(ids[i])] = ids[i]
        mask[row, : len(ids[i])] = 1
    return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
