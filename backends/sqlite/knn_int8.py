"""Exact cosine top-n over a large chat in a quarter of the memory traffic: an int8 scan picks candidates,
fp32 rescoring ranks them, and a bound on the quantisation error proves nothing left out could rank higher.

The exact scan reads the chat's whole fp32 matrix per query (153 MB at 100k x 384: 12-18 ms on this 2-core
box, memory-bound). Here the matrix is also kept as 7-bit integers, transposed and prepacked by ONNX
Runtime's u8 x s8 GEMM (MatMulInteger, one thread): 38 MB, ~3-7 ms per query. Then:

- ``approx_i = (x̂_i · q̂) / (s_i s_q)`` with ``x̂_i = rint(s_i x_i)``, ``q̂ = rint(s_q q)`` (per-row scales);
- ``|x_i · q - approx_i| <= ‖x̃_i‖ ‖f‖ + ‖e_i‖ (‖q̃‖ + ‖f‖)`` where ``x̃_i = x̂_i / s_i``, ``e_i = x_i - x̃_i``,
  ``q̃ = q̂ / s_q``, ``f = q - q̃`` (Cauchy-Schwarz on ``x·q - x̃·q̃ = x̃·f + e·q̃ + e·f``); one bound per
  query from the rows' largest ``‖x̃_i‖`` and ``‖e_i‖`` (~0.035 for MiniLM vectors; the real error is < 0.005);
- the best ``R`` rows by ``approx`` are rescored exactly; when the n-th exact score beats the best row left
  out plus the bound, the top n is the exact scan's top n (:func:`top`). Otherwise ``R`` grows fourfold, and
  past a quarter of the chat the caller scans exactly.

The matrix is 7-bit (±63), not 8: without AVX-VNNI the u8 x s8 kernel sums pairs of products in int16,
which full-range weights can overflow (2 x 255 x 127 > 32767). No store here: arrays in, arrays out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrieval.query_vectors import expected

__all__ = ["MIN_ROWS", "Int8Index", "build", "top"]

MIN_ROWS = 20_000  # below this the exact fp32 scan costs ~2 ms: not worth a second copy of the matrix
LEVELS = 63  # 7-bit matrix (see the module docstring)
EPS = 1e-5  # fp32 rounding of the exact rescoring (384 terms) and of approx is ~1e-6
_BLOCK = 4096  # rows per quantise/transpose step (cache-sized)
_RECENT = 8  # queries whose approx is kept (~0.4 MB each at 100k rows)


@dataclass(frozen=True)
class Int8Index:
    """The int8 copy of a matrix's first ``rows`` rows (rows appended later are scanned exactly)."""

    rows: int
    session: Any  # onnxruntime.InferenceSession: y[k, rows] = (a[k, :] - 128) @ b[:, rows]
    inv_scale: np.ndarray  # (rows,) 1 / s_i, float32
    xnorm: float  # max ‖x̃_i‖
    enorm: float  # max ‖x_i - x̃_i‖
    recent: dict[bytes, tuple[np.ndarray, float]] = field(default_factory=dict, compare=False)

    def approx(self, query: np.ndarray) -> tuple[np.ndarray, float]:
        """(approximate cosine of each row, a bound on any row's error) against the unit vector ``query`` (a
        read-only array). The last few queries' are kept (a question's searches with other filters reuse
        them), and when ``query`` is one the request announced (:func:`retrieval.query_vectors.expected`),
        the others announced are scored in the same pass: the scan reads the whole matrix once for all."""
        key = query.tobytes()
        if (hit := self.recent.get(key)) is not None:
            return hit
        ahead = {q.tobytes(): q for q in expected() if q.shape == query.shape}
        todo = {key: query}
        if key in ahead:
            todo |= {k: q for k, q in ahead.items() if k not in self.recent and k != key}
            todo = dict(list(todo.items())[:_RECENT])
        while len(self.recent) > _RECENT - len(todo):
            del self.recent[next(iter(self.recent))]
        self.recent.update(zip(todo, self._approx(list(todo.values())), strict=True))
        return self.recent[key]

    def _approx(self, queries: list[np.ndarray]) -> list[tuple[np.ndarray, float]]:
        """:meth:`approx` of each query, one MatMulInteger over all (integer products: the same as one by one)."""
        scaled = []
        for query in queries:
            peak = float(np.abs(query).max()) or 1.0
            s_q = 127.0 / peak
            q_int = np.rint(query.astype(np.float64) * s_q)
            scaled.append((q_int, s_q, float(np.linalg.norm(query - q_int / s_q))))
        a = np.stack([(q_int + 128).astype(np.uint8) for q_int, _, _ in scaled])
        dots = self.session.run(None, {"a": a})[0]
        out = []
        for row, (q_int, s_q, f) in zip(dots, scaled, strict=True):
            q_norm = float(np.linalg.norm(q_int)) / s_q
            approx = row.astype(np.float32)
            approx *= self.inv_scale
            approx *= np.float32(1.0 / s_q)
            approx.flags.writeable = False
            out.append((approx, self.xnorm * f + self.enorm * (q_norm + f) + EPS))
        return out


def build(matrix: np.ndarray) -> Int8Index:
    """Quantise and prepack ``matrix`` (rows of unit vectors, fp32). ~1 s per 100k x 384 rows."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rows, dim = matrix.shape
    transposed = np.empty((dim, rows), dtype=np.int8)
    inv_scale = np.empty(rows, dtype=np.float32)
    xnorm = np.empty(rows, dtype=np.float64)
    enorm = np.empty(rows, dtype=np.float64)
    for i in range(0, rows, _BLOCK):
        block = matrix[i : i + _BLOCK]
        peak = np.abs(block).max(axis=1)
        scale = (LEVELS / np.where(peak == 0.0, 1.0, peak)).astype(np.float32)[:, None]
        ints = np.rint(block * scale)
        deq = ints / scale
        transposed[:, i : i + _BLOCK] = ints.T
        inv_scale[i : i + _BLOCK] = 1.0 / scale[:, 0]
        xnorm[i : i + _BLOCK] = np.sqrt(np.einsum("ij,ij->i", deq, deq, dtype=np.float64))
        err = block - deq
        enorm[i : i + _BLOCK] = np.sqrt(np.einsum("ij,ij->i", err, err, dtype=np.float64))
    weights = TensorProto(
        name="b", data_type=TensorProto.INT8, dims=[dim, rows], raw_data=transposed.tobytes()
    )
    del transposed
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b", "zero"], ["y"])],
        "knn_int8",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, ["k", dim])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["k", rows])],
        initializer=[numpy_helper.from_array(np.array(128, dtype=np.uint8), "zero"), weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1  # waking a thread pool after idle costs more than this scan
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return Int8Index(rows, session, inv_scale, float(xnorm.max(initial=0.0)), float(enorm.max(initial=0.0)))


def top(index: Int8Index, matrix: np.ndarray, query: np.ndarray, keep: np.ndarray, n: int,
        first: int = 512) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """The ``n`` best kept rows of ``matrix`` by exact cosine (row indices and scores, best first, ties by
    index), or None when the bound could not prove them without rescoring the whole chat.

    ``index`` covers ``matrix[:index.rows]``; later rows are scored exactly. ``first``: candidates rescored in
    the first try (at least ``8 n``), four times as many on each retry."""
    covered = index.rows
    kept = keep[:covered]
    n_kept = int(kept.sum())
    tail = _tail(matrix, covered, query, keep, n)
    r = max(first, 8 * n)
    if r >= n_kept:  # few rows pass the filters: score them exactly
        rows = np.flatnonzero(kept)
        return _best(
            np.concatenate([rows, tail[0]]), np.concatenate([_exact(matrix, rows, query), tail[1]]), n
        )
    approx, bound = index.approx(query)
    if n_kept < covered:
        approx = np.where(kept, approx, -np.inf)
    while r < min(n_kept, covered // 4):  # past a quarter of the chat the exact scan is as cheap
        cand, left = _candidates(approx, r)
        best = _best(
            np.concatenate([cand, tail[0]]), np.concatenate([_exact(matrix, cand, query), tail[1]]), n
        )
        if best[0].size == n and best[1][-1] > left + bound:
            return best  # every row left out scores at most its approx + bound: below the n-th
        r *= 4
    return None


_SAMPLE = 8192  # rows of ``approx`` read to place the cut of :func:`_candidates`


def _candidates(approx: np.ndarray, r: int) -> tuple[np.ndarray, np.floating]:
    """At least the ``r`` best rows by ``approx`` (row indices), and the best ``approx`` left out.

    Every row at or above a cut estimated from a strided sample (a quarter more than ``r`` expected): a
    threshold, two passes over the array, instead of a partition of it (~0.2 vs ~0.9 ms at 100k rows). Any
    such set proves the same top n in :func:`top` (the bound is checked against the best row left out, and
    holding for the r best it holds for a superset); when the cut leaves fewer than ``r`` or more than ``4 r``
    rows, the exact partition decides."""
    covered = approx.size
    step = max(1, covered // _SAMPLE)
    sample = approx[::step]
    want = min(sample.size - 1, (5 * r) // (4 * step) + 1)
    if step > 1 and want > 0:
        cut = np.partition(sample, sample.size - want)[sample.size - want]
        if np.isfinite(cut):
            above = approx >= cut
            cand = np.flatnonzero(above)
            if r <= cand.size <= 4 * r:
                return cand, np.max(approx, where=~above, initial=-np.inf)  # approx's dtype, as below
    part = np.argpartition(approx, covered - r - 1)
    return part[covered - r :], approx[part[covered - r - 1]]  # part[covered - r - 1]: the best left out


def _tail(matrix: np.ndarray, covered: int, query: np.ndarray, keep: np.ndarray, n: int):
    """The best ``n`` kept rows after ``covered`` (the index's rows), scored exactly: (indices, scores)."""
    if covered >= len(matrix):
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    sims = np.einsum("ij,j->i", matrix[covered:], query)
    rows = np.flatnonzero(keep[covered:])
    if rows.size > n:
        rows = rows[np.argpartition(-sims[rows], n - 1)[:n]]
    return covered + rows, sims[rows]


def _exact(matrix: np.ndarray, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    return np.einsum("ij,j->i", matrix[rows], query) if rows.size else np.zeros(0, np.float32)


def _best(idx: np.ndarray, scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((idx, -scores))[:n]
    return idx[order], scores[order]
