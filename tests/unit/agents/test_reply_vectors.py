"""The linker window's vectors kept as one matrix (``WindowVecs``): its cosines equal the per-row dots they
replace, bit for bit (NaN where a vector is missing or of another size), and a matrix extended step by step
equals the one built from the whole list."""

from __future__ import annotations

import base64

import numpy as np

from agents.reply_window import WindowVecs


def _encode(v: np.ndarray | None) -> str:
    return "" if v is None else base64.b64encode(np.asarray(v, dtype=np.float16).tobytes()).decode()


def _decode(raw: str) -> np.ndarray | None:
    return np.frombuffer(base64.b64decode(raw), dtype=np.float16).astype(np.float32) if raw else None


def _vectors(n: int, dim: int, seed: int = 0) -> list[np.ndarray | None]:
    rng = np.random.default_rng(seed)
    out: list[np.ndarray | None] = [rng.standard_normal(dim).astype(np.float32) for _ in range(n)]
    out[3] = None  # a message without a vector
    out[5] = rng.standard_normal(dim + 1).astype(np.float32)  # one of another size
    return out


def _reference(raw: list[str], vec: np.ndarray) -> np.ndarray:
    rows = [_decode(r) for r in raw]
    return np.asarray([r.dot(vec) if r is not None and r.shape == vec.shape else np.nan for r in rows], dtype=np.float64)


def test_cosines_equal_the_per_row_dots_bit_for_bit() -> None:
    raw = [_encode(v) for v in _vectors(40, 384)]
    vecs = WindowVecs.build(raw, [_decode(r) for r in raw])
    rng = np.random.default_rng(7)
    for _ in range(20):
        vec = rng.standard_normal(384).astype(np.float32)
        vec /= np.linalg.norm(vec)
        got = vecs.cosines(vec, 40)
        assert got is not None and got.dtype == np.float64
        assert np.array_equal(got, _reference(raw, vec), equal_nan=True)
        assert np.isnan(got[3]) and np.isnan(got[5]) and not np.isnan(got[4])
        assert np.array_equal(vecs.cosines(vec, 12), _reference(raw[-12:], vec), equal_nan=True)


def test_cosines_decline_what_the_matrix_cannot_answer() -> None:
    raw = [_encode(v) for v in _vectors(10, 8)]
    vecs = WindowVecs.build(raw, [_decode(r) for r in raw])
    assert vecs.cosines(np.ones(9, dtype=np.float32), 5) is None  # another size
    assert vecs.cosines(np.ones(8, dtype=np.float64), 5) is None  # another type (the dot would upcast)
    assert vecs.cosines(np.ones(8, dtype=np.float32), 11) is None  # more rows asked than kept
    assert WindowVecs.build([], []).cosines(np.ones(8, dtype=np.float32), 0) is None


def test_appended_equals_built_from_the_list() -> None:
    stream = [_encode(v) for v in _vectors(30, 16, seed=3)] + ["", _encode(np.ones(16, dtype=np.float32))]
    keep = 7
    raw: list[str] = []
    vecs = WindowVecs.build(raw, [])
    for item in stream:
        raw = [*raw, item][-keep:]
        vecs = vecs.appended(raw, _decode(item), _decode)
        built = WindowVecs.build(raw, [_decode(r) for r in raw])
        assert vecs.raw is raw
        assert vecs.mat.shape == built.mat.shape and np.array_equal(vecs.mat, built.mat, equal_nan=True)
        assert not vecs.mat.flags.writeable
