"""memstream.lane_queue: how long a call may wait for a lane of the API. The decisions alone, then a real
:class:`memstream.serving.Lane` (its own thread and event loop) whose calls take a known time or are held
until the test lets them go."""

from __future__ import annotations

import asyncio
import threading

import pytest

from memstream.lane_queue import Busy, ewma, expected_wait_s, retry_after_s, wait_bound_s
from memstream.serving import Lane
from memstream.settings import ServeConfig

CFG = ServeConfig(max_wait_s=1.0, standing_wait_s=0.2)


def test_a_burst_may_wait_the_bound_a_standing_queue_only_the_short_one():
    never = float("-inf")
    # empty 0.5 s ago, nothing refused: a burst
    assert wait_bound_s(now=100.0, empty_at=99.5, refused_at=never, cfg=CFG) == 1.0
    assert wait_bound_s(now=100.0, empty_at=98.0, refused_at=never, cfg=CFG) == 0.2  # not empty for 2 s
    assert wait_bound_s(now=100.0, empty_at=100.0, refused_at=99.5, cfg=CFG) == 0.2  # refused 0.5 s ago
    assert wait_bound_s(now=100.0, empty_at=100.0, refused_at=98.0, cfg=CFG) == 1.0  # calm again
    short = ServeConfig(max_wait_s=0.1, standing_wait_s=0.2)
    assert wait_bound_s(now=100.0, empty_at=98.0, refused_at=never, cfg=short) == 0.1


def test_the_expected_wait_counts_the_queue_and_the_running_call_per_slot():
    assert expected_wait_s(0, None, 1) == 0.0  # no call timed yet: nothing to expect
    assert expected_wait_s(0, 0.05, 1) == pytest.approx(0.05)
    assert expected_wait_s(9, 0.05, 1) == pytest.approx(0.5)
    assert expected_wait_s(9, 0.05, 2) == pytest.approx(0.25)
    assert ewma(None, 0.3) == 0.3 and 0.1 < ewma(0.1, 0.3) < 0.3
    assert [retry_after_s(s) for s in (0.0, 0.2, 1.0, 1.01, 7.5, 1e6)] == [1, 1, 1, 2, 8, 60]


@pytest.fixture
async def gated():
    """A started lane and a gate: ``hold()`` occupies the lane until the gate opens."""
    lanes: list[Lane] = []
    gate = threading.Event()

    async def make(cfg: ServeConfig) -> Lane:
        lane = await Lane("reader-0", cfg).start()
        lanes.append(lane)
        return lane

    yield make, gate
    gate.set()
    for lane in lanes:
        await lane.stop()


def hold(lane: Lane, gate: threading.Event) -> asyncio.Task:
    """A call that keeps the lane's one slot until ``gate`` is set."""
    return asyncio.ensure_future(lane.call(lambda c: asyncio.to_thread(gate.wait, 60)))


async def test_a_call_that_waited_its_bound_is_refused_not_run(gated):
    make, gate = gated
    lane = await make(ServeConfig(max_wait_s=0.2))
    held = hold(lane, gate)
    await asyncio.sleep(0)
    ran: list[str] = []

    async def note(c) -> None:
        ran.append("ran")

    # no call timed yet: nothing to expect, so queued, then refused by its timer
    with pytest.raises(Busy, match="waited") as refused:
        await asyncio.wait_for(lane.call(note), 30)
    assert not held.done()  # refused while the lane was still busy, not when it came free
    assert ran == [] and refused.value.retry_after >= 1 and lane.pending == 1
    gate.set()
    await held
    await lane.call(note)  # the lane serves again
    assert ran == ["ran"] and lane.pending == 0


async def test_an_overloaded_lane_refuses_at_once_what_would_wait_past_the_bound(gated):
    make, gate = gated
    lane = await make(ServeConfig(max_wait_s=0.5, standing_wait_s=0.5))
    await lane.call(lambda c: asyncio.sleep(0.2))  # a call of a known time: the lane's service time >= 0.2 s
    held = hold(lane, gate)
    await asyncio.sleep(0)
    calls = [asyncio.ensure_future(lane.call(lambda c: asyncio.sleep(0))) for _ in range(10)]
    await asyncio.sleep(0)  # each call's first step: a refusal at arrival is already an answer
    at_once = [c for c in calls if c.done()]
    # (k + 1) calls ahead of the k-th queued call, each >= 0.2 s: at most two fit in 0.5 s
    assert len(at_once) >= 8 and not held.done()
    for call in at_once:
        assert isinstance(call.exception(), Busy) and "busy" in str(call.exception())
        assert call.exception().retry_after >= 1
    gate.set()
    await held
    await asyncio.gather(*calls, return_exceptions=True)
    assert lane.pending == 0


async def test_max_pending_stays_a_hard_cap(gated):
    make, gate = gated
    lane = await make(ServeConfig(max_pending=3, max_wait_s=30))
    held = hold(lane, gate)
    await asyncio.sleep(0)
    calls = [asyncio.ensure_future(lane.call(lambda c: asyncio.sleep(0))) for _ in range(5)]
    await asyncio.sleep(0)
    assert [c.done() for c in calls] == [False, False, True, True, True]  # 1 running + 2 queued = 3
    gate.set()
    await held
    results = await asyncio.gather(*calls, return_exceptions=True)
    assert results[:2] == [None, None] and all(isinstance(r, Busy) for r in results[2:])
