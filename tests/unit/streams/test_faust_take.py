"""streams.faust_take.take_ahead on a real Faust agent (its test context: no broker)."""

from __future__ import annotations

import asyncio

import faust

from streams.faust_take import take_ahead


async def run_agent(values: int, body, *, on_full=None, batch: int = 4, ahead: int = 1) -> None:
    """An agent over take_ahead; ``body(events)`` per batch; returns once every value was yielded."""
    app = faust.App("take-test", broker="kafka://127.0.0.1:1", web_enabled=False, autodiscover=False,
                    store="memory://")  # fmt: skip
    topic = app.topic("take-test", value_serializer="raw")
    done = asyncio.Event()
    total = [0]

    @app.agent(topic)
    async def agent(stream):
        async for events in take_ahead(stream, batch, 0.2, ahead=ahead, on_full=on_full):
            await body(events)
            total[0] += len(events)
            if total[0] >= values:
                done.set()

    async with agent.test_context() as ctx:
        for i in range(values):
            await ctx.put(str(i).encode())
        await asyncio.wait_for(done.wait(), 10)


async def wait_until(check, seconds: float = 2.0) -> bool:
    for _ in range(int(seconds / 0.01)):
        if check():
            return True
        await asyncio.sleep(0.01)
    return check()


async def test_the_next_batch_fills_and_is_prepared_while_one_is_processed_and_acks_follow_the_body():
    prepared: list[list[bytes]] = []
    batches: list[list[bytes]] = []
    acked_during: list[bool] = []
    ahead_seen: list[int] = []
    earlier: list = []

    async def body(events):
        batches.append([e.value for e in events])
        acked_during.extend(e.message.acked for e in events)
        assert all(m.acked for m in earlier)  # the batch before: acked once its body returned
        earlier[:] = [e.message for e in events]
        if len(batches) == 1:  # while this one is processed, the next fills and is handed to on_full
            await wait_until(lambda: len(prepared) >= 2)
            ahead_seen.append(len(prepared))

    await run_agent(10, body, on_full=lambda evs: prepared.append([e.value for e in evs]))
    assert batches == [[b"0", b"1", b"2", b"3"], [b"4", b"5", b"6", b"7"], [b"8", b"9"]]  # last: within 0.2 s
    assert prepared == batches[:2]  # only full batches are prepared
    assert ahead_seen == [2]
    assert not any(acked_during)
    assert all(m.acked for m in earlier) or await wait_until(lambda: all(m.acked for m in earlier))


async def test_the_reader_waits_when_the_batches_ahead_are_full():
    prepared: list[int] = []
    held: list[int] = []

    async def body(events):
        if not held:
            await wait_until(lambda: len(prepared) >= 4, 0.5)  # give the reader time to run past its room
            held.append(len(prepared))

    await run_agent(24, body, on_full=lambda evs: prepared.append(len(evs)), ahead=2)
    assert held == [3]  # the batch being processed and two full ones ahead, no more
    assert prepared == [4] * 6


async def test_a_failing_on_full_is_logged_and_the_batches_still_come(caplog):
    batches: list[int] = []

    def broken(events):
        raise ValueError("boom")

    async def body(events):
        batches.append(len(events))

    await run_agent(9, body, on_full=broken)
    assert batches == [4, 4, 1]
    assert "preparing a batch failed" in caplog.text


def _app(name: str):
    app = faust.App(name, broker="kafka://127.0.0.1:1", web_enabled=False, autodiscover=False, store="memory://")
    return app, app.topic(name, value_serializer="raw")


async def test_a_take_started_again_on_the_same_stream_reads_on_and_the_first_lets_go():
    """An agent whose body raised is restarted by Faust on the same stream: the first take's processor is
    gone and its batches dropped unacked (delivered again from the committed offset), the second reads on."""
    app, topic = _app("take-restart")
    got: list[tuple[int, list[bytes]]] = []
    first: list = []
    done = asyncio.Event()

    @app.agent(topic)
    async def agent(stream):
        for attempt in range(2):  # what Faust's supervisor does after a crash: a new take on the stream
            try:
                async for events in take_ahead(stream, 2, 0.1):
                    got.append((attempt, [e.value for e in events]))
                    if attempt == 0:
                        first.extend(e.message for e in events)
                        raise ValueError("boom")
                    if events[-1].value == b"11":
                        done.set()
            except ValueError:
                await asyncio.sleep(0)
        assert len(stream._processors) == 1  # only the second take's

    async with agent.test_context() as ctx:
        for i in range(12):
            await asyncio.wait_for(ctx.put(str(i).encode()), 2)  # the first take's reader must not hold
        await asyncio.wait_for(done.wait(), 5)
    assert got[0] == (0, [b"0", b"1"]) and not any(m.acked for m in first)
    later = [v for attempt, vs in got[1:] for v in vs]
    assert all(attempt == 1 for attempt, _ in got[1:]) and later == sorted(later, key=int)
    assert later[-1] == b"11"


async def test_a_batch_whose_body_is_cancelled_is_not_acked():
    app, topic = _app("take-cancel")
    seen: list = []
    started = asyncio.Event()

    @app.agent(topic)
    async def agent(stream):
        async for events in take_ahead(stream, 4, 0.2):
            seen.extend(e.message for e in events)
            started.set()
            await asyncio.sleep(100)  # stopped midway

    async with agent.test_context() as ctx:
        for i in range(6):
            await ctx.put(str(i).encode())
        await asyncio.wait_for(started.wait(), 5)
    assert len(seen) == 4 and not any(m.acked for m in seen)  # take_events acks such a batch


async def test_events_that_waited_behind_a_long_batch_come_at_once_not_after_another_within():
    """A partial batch is due ``within`` s after its first event: the one that filled while a long batch was
    processed is handed over as soon as the caller asks, not after waiting ``within`` again."""
    app, topic = _app("take-due")
    gaps: list[float] = []
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    returned = [0.0]

    @app.agent(topic)
    async def agent(stream):
        async for events in take_ahead(stream, 4, 1.0):
            if returned[0]:
                gaps.append(loop.time() - returned[0])
            if events[-1].value == b"4":
                done.set()
            else:
                await asyncio.sleep(1.5)  # longer than ``within``: "4" waits meanwhile
            returned[0] = loop.time()

    async with agent.test_context() as ctx:
        for i in range(5):
            await ctx.put(str(i).encode())
        await asyncio.wait_for(done.wait(), 10)
    assert len(gaps) == 1 and gaps[0] < 0.5  # before: ~1.0 s more


async def test_the_idle_hook_runs_when_the_agent_caught_up_not_while_a_full_batch_waits():
    calls: list[int] = []
    seen: list[int] = []

    async def idle():
        calls.append(len(seen))

    app, topic = _app("take-idle")
    done = asyncio.Event()

    @app.agent(topic)
    async def agent(stream):
        async for events in take_ahead(stream, 4, 0.2, on_idle=idle):
            if not seen:
                await asyncio.sleep(0.3)  # the rest arrive meanwhile: a full batch waits behind this one
            seen.extend(int(e.value) for e in events)
            if len(seen) == 9:
                done.set()

    async with agent.test_context() as ctx:
        for i in range(9):
            await ctx.put(str(i).encode())
        await asyncio.wait_for(done.wait(), 10)
        assert await wait_until(lambda: 9 in calls)
    assert 4 not in calls  # the first batch had a full one behind it
    assert calls[-1] == 9  # after the last batch was acked


async def test_a_failing_idle_hook_is_logged_and_the_batches_still_come(caplog):
    app, topic = _app("take-idle-fails")
    got: list[int] = []
    done = asyncio.Event()

    async def broken():
        raise ValueError("boom")

    @app.agent(topic)
    async def agent(stream):
        async for events in take_ahead(stream, 2, 0.1, on_idle=broken):
            got.extend(int(e.value) for e in events)
            if len(got) == 3:
                done.set()
            await asyncio.sleep(0.15)  # each batch ends with nothing behind it: the hook runs after each

    async with agent.test_context() as ctx:
        for i in range(3):
            await ctx.put(str(i).encode())
            await asyncio.sleep(0.3)
        await asyncio.wait_for(done.wait(), 10)
    assert got == [0, 1, 2]
    assert "the idle hook failed" in caplog.text
