"""memstream.lane_task.run_on: a task on another thread's loop, awaited here; cancelled, it ends there first."""

from __future__ import annotations

import asyncio
import threading

import pytest

from memstream.lane_task import run_on


@pytest.fixture
def other_loop():
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


async def test_the_result_and_the_error_come_back(other_loop):
    async def work(x: int) -> int:
        assert asyncio.get_running_loop() is other_loop
        if x < 0:
            raise ValueError("negative")
        return x * 2

    assert await run_on(other_loop, lambda: asyncio.ensure_future(work(21))) == 42
    with pytest.raises(ValueError, match="negative"):
        await run_on(other_loop, lambda: asyncio.ensure_future(work(-1)))


async def test_cancelled_it_waits_until_the_other_task_has_ended(other_loop):
    events: list[str] = []
    gate = threading.Event()

    async def work() -> None:
        try:
            events.append("started")
            gate.set()
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(0.05)  # clean-up on its own loop, still to finish when we return
            events.append("ended")

    task = run_on(other_loop, lambda: asyncio.ensure_future(work()))
    await asyncio.to_thread(gate.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert events == ["started", "ended"]


async def test_cancelled_before_it_began_its_task_is_cancelled_as_it_begins(other_loop):
    made: list[asyncio.Task] = []
    blocker = threading.Event()
    other_loop.call_soon_threadsafe(blocker.wait, 5)  # the other loop is busy: start() is still queued

    def start() -> asyncio.Task:
        made.append(asyncio.ensure_future(asyncio.sleep(30)))
        return made[0]

    task = run_on(other_loop, start)
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.sleep(0.05)
    blocker.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert len(made) == 1 and made[0].cancelled()  # begun after the cancel, then cancelled and awaited
