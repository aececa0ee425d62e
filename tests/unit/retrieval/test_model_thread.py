"""The model's own threads (backends.embed.base): the pipeline's forwards one at a time, by priority then
arrival; a question's at once beside them; results back on each caller's loop, errors handed to the caller,
a job nobody waits for skipped, the model loaded once."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from backends.embed.base import AHEAD, NORMAL, _LazyModelEmbedder, between_forwards, embedding_priority


class GatedModel(_LazyModelEmbedder):
    """Batch-independent vectors; every forward is recorded, and each but a question's waits for ``gate``."""

    name = "gated-model-test"
    dim = 4

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.loads = 0
        self.gate = threading.Event()
        self.started = threading.Event()

    def _load(self) -> object:
        self.loads += 1
        return object()

    def _encode(self, model: object, texts: list[str], is_query: bool) -> np.ndarray:
        self.calls.append(list(texts))
        self.started.set()
        if not is_query and not self.gate.wait(10):
            raise TimeoutError("gate never opened")
        if "boom" in texts:
            raise ValueError("boom")
        return np.array([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts], dtype=np.float32)


async def _started(model: GatedModel) -> None:
    assert await asyncio.to_thread(model.started.wait, 10)


async def test_jobs_run_by_priority_then_in_arrival_order_and_a_question_at_once():
    model = GatedModel()
    first = asyncio.create_task(model.embed(["first"]))
    await _started(model)  # holds the pipeline's thread
    with embedding_priority(AHEAD):
        ahead = [asyncio.create_task(model.embed([f"ahead {i}"])) for i in range(2)]
    await asyncio.sleep(0)
    normal = asyncio.create_task(model.embed(["normal"]))
    await asyncio.sleep(0)
    question = await asyncio.wait_for(model.embed(["question"], is_query=True), 10)  # not behind "first"
    assert question.shape == (1, 4) and not first.done()
    model.gate.set()
    await asyncio.gather(first, normal, *ahead)
    assert model.calls == [["first"], ["question"], ["normal"], ["ahead 0"], ["ahead 1"]]
    assert model.loads == 1  # loaded once, in the model's thread
    vec = await model.embed(["ae"])
    assert np.allclose(vec, np.array([[2, 1, 1, 1]]) / np.linalg.norm([2, 1, 1, 1]))  # L2-normalised


async def test_the_priority_is_the_blocks_and_its_tasks():
    with embedding_priority(AHEAD):
        from backends.embed.base import current_priority

        assert current_priority() == AHEAD
        assert await asyncio.create_task(asyncio.sleep(0, result=current_priority())) == AHEAD
    assert current_priority() == NORMAL


async def test_an_error_reaches_the_caller_and_the_thread_goes_on():
    model = GatedModel()
    model.gate.set()
    with pytest.raises(ValueError, match="boom"):
        await model.embed(["boom"])
    assert (await model.embed(["fine"])).shape == (1, 4)


async def test_a_cancelled_call_is_not_run():
    model = GatedModel()
    first = asyncio.create_task(model.embed(["first"]))
    await _started(model)
    dropped = asyncio.create_task(model.embed(["nobody waits"]))
    await asyncio.sleep(0)
    dropped.cancel()
    await asyncio.sleep(0)
    model.gate.set()
    await first
    await model.embed(["after"])
    assert model.calls == [["first"], ["after"]]


def test_one_model_serves_several_loops_in_turn():
    model = GatedModel()
    model.gate.set()

    def run(text: str) -> np.ndarray:
        return asyncio.run(model.embed([text]))

    out: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda t=t: out.append(run(t))) for t in ("one", "two", "three")]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    assert len(out) == 3 and sorted(map(tuple, model.calls)) == [("one",), ("three",), ("two",)]


class ForwardsModel(GatedModel):
    """A call is one forward per text; the first forward of all waits for ``gate``; between forwards the
    thread runs what outranks the call (backends.embed.base.between_forwards)."""

    name = "forwards-model-test"

    def _encode(self, model: object, texts: list[str], is_query: bool) -> np.ndarray:
        rows = []
        for text in texts:
            rows.append(super()._encode(model, [text], is_query))
            self.gate.set()  # only the first forward waits
            between_forwards()
        return np.concatenate(rows)


async def test_a_stage_call_runs_between_the_forwards_of_work_embedded_ahead():
    model = ForwardsModel()
    with embedding_priority(AHEAD):
        ahead = asyncio.create_task(model.embed(["a1", "a2", "a3"]))
        await _started(model)  # the first forward holds the thread
        later = asyncio.create_task(model.embed(["b1"]))
    await asyncio.sleep(0)
    normal = asyncio.create_task(model.embed(["n1", "n2"]))
    await asyncio.sleep(0.05)
    model.gate.set()
    done, _ = await asyncio.wait([ahead, later, normal], timeout=10)
    assert len(done) == 3
    # n1, n2 between a1 and a2 (not after a3); the other ahead call still waits for the first to end
    assert model.calls == [["a1"], ["n1"], ["n2"], ["a2"], ["a3"], ["b1"]]
    assert np.array_equal((await ahead)[1], (await model.embed(["a2"]))[0])


async def test_between_forwards_does_nothing_outside_a_model_thread():
    model = ForwardsModel()
    model.gate.set()
    between_forwards()  # no job runs here: returns at once
    assert (await model.embed(["x", "y"])).shape == (2, 4) and model.calls == [["x"], ["y"]]
