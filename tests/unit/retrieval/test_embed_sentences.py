"""A passage's sentences pooled from its own forward (the ONNX model's token output), kept in the vector cache
beside the passage and forgotten with it."""

from __future__ import annotations

import numpy as np
import pytest

from backends.embed.embedder import CachedEmbedder, cache_key, forget_cached, sentence_key
from backends.embed.onnx import sentence_spans

TURN = "I went to a LGBTQ support group yesterday. It was so powerful! My cat Luna hid under the bed all day."


def test_sentence_spans_are_the_distillers_sentences_where_they_stand():
    spans = sentence_spans(TURN)
    assert [s for s, _, _ in spans] == ["I went to a LGBTQ support group yesterday.", "It was so powerful!",
                                        "My cat Luna hid under the bed all day."]  # fmt: skip
    assert all(TURN[a:b] == s for s, a, b in spans)
    assert sentence_spans("Just one sentence here.") == []  # its vector is the text's own
    laugh = "ha " * 12 + "ha. Second line here."  # the tail "ha ha ha ha. " repeats early in the sentence
    assert [laugh[a:b] for _, a, b in sentence_spans(laugh)] == ["ha " * 12 + "ha.", "Second line here."]
    curly = "I can\u2019t come. Tomorrow works."
    assert [curly[a:b].replace("\u2019", "'") for _, a, b in sentence_spans(curly)] == ["I can't come.", "Tomorrow works."]


@pytest.mark.slow
async def test_a_sentence_vector_is_its_tokens_mean_and_near_the_sentence_alone(minilm, tmp_path):
    inner = minilm.inner
    vectors, sentences = await inner.embed_with_sentences([TURN, "ok"])
    assert np.allclose(vectors, await inner.embed([TURN, "ok"]), atol=1e-6)  # the text vectors are unchanged
    assert sentences[1] == [] and [s for s, _ in sentences[0]] == [s for s, _, _ in sentence_spans(TURN)]
    alone = await inner.embed([s for s, _ in sentences[0]])
    pooled = np.stack([v for _, v in sentences[0]])
    assert np.allclose(np.linalg.norm(pooled, axis=1), 1.0, atol=1e-5)
    sims = pooled @ alone.T  # each pooled sentence is nearest its own sentence embedded alone (in its context)
    assert list(sims.argmax(axis=1)) == [0, 1, 2], sims
    assert sims[0, 0] > 0.8 and sims[2, 2] > 0.8  # the longer ones nearly as alone ("It was so powerful!": 0.57)


@pytest.mark.slow
async def test_the_cache_keeps_a_passages_sentences_and_forgets_them_with_it(minilm, tmp_path):
    cache = CachedEmbedder(minilm.inner, tmp_path / "c.db")
    try:
        await cache.embed([TURN])
        pairs = [(TURN, s) for s, _, _ in sentence_spans(TURN)] + [(TURN, "not a sentence of it")]
        found = await cache.sentence_vectors(pairs)
        assert set(found) == set(pairs[:3])
        await cache.embed(["who is Luna?"], is_query=True)  # a question pools nothing
        assert await cache.sentence_vectors([("who is Luna?", "who is Luna?")]) == {}
    finally:
        await cache.close()
    assert forget_cached(tmp_path / "c.db", [TURN]) == 4  # the passage and its three sentences
    cache = CachedEmbedder(minilm.inner, tmp_path / "c.db")
    try:
        keys = [sentence_key(cache.cache_name, t, s) for t, s in pairs]
        assert cache._lookup(keys, "sentences") == {} and cache._lookup([cache_key(cache.cache_name, False, TURN)]) == {}
    finally:
        await cache.close()


@pytest.mark.slow
async def test_under_serve_the_sentences_are_read_on_the_embed_lane(minilm, tmp_path):
    """``serve`` hands the stages an EmbedderProxy: the cache's connection lives on the embed lane's loop, so
    its sentence vectors are read there, as its passages are (not from the processor's thread)."""
    import threading

    from memstream.serving import EmbedderProxy, Lane

    class Where(CachedEmbedder):
        async def sentence_vectors(self, pairs):
            self.thread = threading.current_thread()
            return await super().sentence_vectors(pairs)

    lane = await Lane("embed").start()
    cache = Where(minilm.inner, tmp_path / "c.db")
    try:
        proxy = EmbedderProxy(cache, lane)
        await proxy.embed([TURN])
        found = await proxy.sentence_vectors([(TURN, s) for s, _, _ in sentence_spans(TURN)])
        assert len(found) == 3 and cache.thread is not threading.current_thread()
        assert await EmbedderProxy(object(), lane).sentence_vectors([(TURN, "x")]) == {}  # a model without them
    finally:
        await lane.stop()
        await cache.close()


@pytest.mark.slow
async def test_a_sentence_cut_at_the_models_limit_is_not_stored_as_whole(minilm):
    long = "Short one first. " + "word " * 300 + "end."  # the second sentence runs past 256 tokens
    _, sentences = await minilm.inner.embed_with_sentences([long])
    assert [s for s, _ in sentences[0]] == ["Short one first."]


@pytest.mark.slow
async def test_a_worker_that_never_embedded_the_turn_gets_the_same_sentence_vectors(tmp_path):
    """Kafka workers each keep a cache: the one deciding on a fact may not be the one that embedded its turn.
    It embeds the turn again (one text per forward: the same forward), so the fact's sentence vector is the
    same bit for bit; before, it fell back to the fact's own text and stored a different memory."""
    from backends.embed.embedder import build_embedder

    turn = "The van is booked for Saturday. Marta drives it back on Sunday night. Keys are under the mat."
    sentences = [(turn, s) for s, _, _ in sentence_spans(turn)]
    first = build_embedder("minilm", tmp_path / "worker-1.db")
    second = build_embedder("minilm", tmp_path / "worker-2.db")
    try:
        await first.embed([turn, "ok see you then"])  # the segmenting worker embeds the turns
        want = await first.sentence_vectors(sentences)
        got = await second.sentence_vectors(sentences)  # the consolidating worker never saw the turn
        assert len(want) == 3 and set(got) == set(want)
        assert all(np.array_equal(got[p], want[p]) for p in want)
        misses = second.misses
        again = await second.sentence_vectors(sentences)
        assert set(again) == set(got) and second.misses == misses  # cached now
    finally:
        await first.close()
        await second.close()
