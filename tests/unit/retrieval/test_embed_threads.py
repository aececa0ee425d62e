"""A question's few texts run on a one-thread session of the int8 MiniLM; the vectors are the ones every
thread gives, bit for bit, so a query vector does not depend on which session computed it."""

from __future__ import annotations

import numpy as np
import pytest

from backends.embed.onnx import QUERY_TEXTS, OnnxMiniLMEmbedder
from retrieval.router.classifier import skeleton

QUESTIONS = [
    "When did Caroline go to the LGBTQ support group?",
    "What subject have Caroline and Melanie both painted?",
    "How many times has Melanie gone to the beach in 2023?",
    "What career path has Caroline decided to persue?",
    "Would Melanie likely enjoy the song 'The Four Seasons' by Vivaldi?",
    "我上个月在杭州买的那本书叫什么名字？",
    "ok",
    "What did Jon say about losing his job as a banker, and when did he open the dance studio he had "
    "been talking about for months with Gina and the people from the gym downtown?",
]


@pytest.mark.slow
async def test_query_calls_use_one_thread_and_give_the_same_vectors():
    emb = OnnxMiniLMEmbedder(threads=2)
    batches = [[q, skeleton(q)] for q in QUESTIONS] + [[q] for q in QUESTIONS] + [QUESTIONS[:QUERY_TEXTS]]
    await emb.embed(batches[0], is_query=True)  # loads the model; a question's call makes the one-thread session
    model = emb._model
    assert sorted(model[2]) == [1]
    one = [emb._encode(model, b, True) for b in batches]
    every = [emb._encode(model, b, False) for b in batches]  # documents: every thread
    assert sorted(model[2]) == [1, 2]
    for b, a, c in zip(batches, one, every, strict=True):
        assert a.shape == (len(b), 384) and np.array_equal(a, c), b
    assert emb._threads(QUESTIONS * 2, True) == 2 and emb._threads(QUESTIONS, False) == 2


@pytest.mark.slow
async def test_questions_embedded_during_a_passage_forward_get_the_vectors_they_get_alone():
    """A question's forward runs on its own thread beside the pipeline's (backends.embed.base): the two
    run at once on one model, and neither vector changes."""
    import asyncio

    emb = OnnxMiniLMEmbedder(threads=2)
    passages = [f"message {i}: we meet at the cafe on {['Monday', 'Friday'][i % 2]} about budget {i % 7}"
                for i in range(96)]  # fmt: skip
    alone_p = await emb.embed(passages)
    alone_q = [await emb.embed([q], is_query=True) for q in QUESTIONS]
    together = await asyncio.gather(emb.embed(passages), *(emb.embed([q], is_query=True) for q in QUESTIONS))
    assert np.array_equal(together[0], alone_p)
    for q, a, b in zip(QUESTIONS, together[1:], alone_q, strict=True):
        assert np.array_equal(a, b), q


@pytest.mark.slow
async def test_a_call_run_between_the_forwards_of_another_leaves_both_vectors_as_they_are_alone():
    """Work embedded ahead gives way to a stage's call between two of its forwards (backends.embed.base):
    the ahead call's forwards, and so its int8 vectors (which depend on what shares a forward), do not
    change, nor do the stage call's."""
    import asyncio
    import time

    from backends.embed.base import AHEAD, embedding_priority

    emb = OnnxMiniLMEmbedder(threads=2)
    emb.batch_tokens = 256  # many forwards in one call
    ahead = [f"turn {i}: the {['train', 'boat', 'bus'][i % 3]} to {'Lisbon ' * (i % 5)}leaves at {i % 12}"
             for i in range(120)]  # fmt: skip
    stage = ["what time does the boat leave", "Lisbon again!", "ok"]
    alone_ahead, alone_stage = await emb.embed(ahead), await emb.embed(stage)
    with embedding_priority(AHEAD):
        first = asyncio.create_task(emb.embed(ahead))
    await asyncio.sleep(0)  # the ahead call is queued...

    def taken() -> None:  # ...and taken by the model's thread: it is running
        while not emb._worker._jobs.empty():
            time.sleep(0.001)

    await asyncio.wait_for(asyncio.to_thread(taken), 10)
    second = await emb.embed(stage)
    assert not first.done()  # it ran between the ahead call's forwards
    assert np.array_equal(await first, alone_ahead) and np.array_equal(second, alone_stage)


@pytest.mark.slow
def test_forwards_side_by_side_give_the_vectors_each_forward_gives_alone():
    """A call of several forwards runs them a CPU each, side by side (OnnxMiniLMEmbedder._lanes): every
    vector is the one its forward gives on a session using both CPUs."""
    from backends.embed.onnx import _feeds, length_batches

    emb = OnnxMiniLMEmbedder(threads=2)
    emb.batch_tokens = 512
    texts = [f"{'so ' * (i % 9)}we moved the {['demo', 'launch', 'review'][i % 3]} to {i % 28 + 1} May" for i in range(150)]
    got = emb._forward(texts, False)
    model = emb._model
    ids = [e.ids for e in model[0].encode_batch(texts, add_special_tokens=True)]
    groups = length_batches([len(x) for x in ids], 1 if emb.solo else emb.batch, emb.batch_tokens)
    assert len(groups) > 4 and sorted(model[2]) == [1]  # side by side, on the one-thread session only
    both = emb._session(model, 2)
    want = np.zeros_like(got)
    for group in groups:
        want[group] = both.run(None, _feeds(ids, group))[0]
    assert np.array_equal(got, want)


@pytest.mark.slow
def test_a_failing_forward_side_by_side_reaches_the_caller():
    from backends.embed.onnx import length_batches

    emb = OnnxMiniLMEmbedder(threads=2)
    emb.batch_tokens = 64
    emb._forward(["load"], False)
    ids = [[101, 2000 + i, 102] for i in range(40)]
    ids[25] = [101, 10**7, 102]  # no such token: onnxruntime refuses that forward
    groups = length_batches([len(x) for x in ids], emb.batch, emb.batch_tokens)
    out = np.zeros((len(ids), emb.dim), dtype=np.float32)
    with pytest.raises(Exception, match="(?i)index|indices|out of"):
        emb._lanes(emb._session(emb._model, 1), ids, groups, 2, out)
    assert emb._forward(["still works"], False).shape == (1, 384)


@pytest.mark.slow
async def test_warm_up_loads_the_model_and_both_sessions_and_changes_no_vector():
    """A worker or server warms its embedder at start (backends.embed.base.warm_up): the model and both
    sessions exist before the first call, nothing is cached, and the vectors are a cold embedder's."""
    from backends.embed.base import warm_up
    from backends.embed.embedder import CachedEmbedder

    passages = [f"we meet at the cafe on {day} about the budget" for day in ("Monday", "Friday", "Sunday")]
    cold = CachedEmbedder(OnnxMiniLMEmbedder(threads=2))
    expected = await cold.embed(passages), await cold.embed(QUESTIONS[:2], is_query=True)
    warm = CachedEmbedder(OnnxMiniLMEmbedder(threads=2))
    assert warm.inner._model is None
    seconds = await warm_up(warm)
    assert seconds > 0 and warm.inner._model is not None and sorted(warm.inner._model[2]) == [1, 2]
    assert warm.misses == 0 and warm.hits == 0  # the warm-up embedded nothing through the cache
    assert np.array_equal(await warm.embed(passages), expected[0])
    assert np.array_equal(await warm.embed(QUESTIONS[:2], is_query=True), expected[1])
    assert await warm_up(None) >= 0.0  # no embedder: nothing to load
