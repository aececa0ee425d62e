"""Batches from a Faust stream with the next batch filling while the current one is processed.

Faust's ``Stream.take_events`` lets one event into its buffer while the agent processes a batch, then waits
for the batch to be done: the next batch only starts to fill (and its texts only reach the model) after
the current one. A worker with MiniLM then ran its model dry at the end of every segmenter batch (~2 s of
a 12 s run). :func:`take_ahead` is ``take_events`` with room for ``ahead`` full batches besides the one
being processed; ``on_full`` sees each batch as it fills, so the worker queues its texts for the model
while the batches before it run their Python, as the embedded runner does.

Each event is acked only after the agent's body has returned from the batch it came in (offsets are
committed only up to the first event not yet acked, so a batch cancelled midway and the batches waiting
here are delivered again after a crash or restart; unlike ``take_events``, which acks a cancelled batch).
A graceful stop waits for every event taken in to be acked: up to ``ahead + 1`` batches where
``take_events`` has one. Relies on the same Faust stream internals as ``take_events`` (a processor fed by
the passive reader, ``enable_acks`` off, ``ack`` per event, the processor removed when done), reached through
:mod:`streams.faust_private`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from streams.faust_private import drop_processor, read_passively, track_generator

__all__ = ["take_ahead"]

log = logging.getLogger("memstream.faust")


def take_ahead(
    stream: Any, max_: int, within: float, *, ahead: int = 1, on_full: Callable[[list[Any]], None] | None = None,
    on_idle: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[list[Any]]:  # fmt: skip
    """Lists of up to ``max_`` events: a full one as soon as it fills, else what came within ``within`` s
    of the batch's first event (events that waited behind a long batch are not held another ``within``).

    While the caller processes a batch, up to ``ahead`` more fill behind it (the stream's reader waits
    when they are all full). ``on_full`` is called with each full batch as it fills (an exception there is
    logged, not raised: it may only prepare work); ``on_idle`` is awaited after a batch is acked when no
    event waits behind it (the agent caught up: the worker commits then). The generator is tracked like
    ``take_events``' so the stream closes it when it stops."""
    agen = _take_ahead(stream, max_, within, ahead=ahead, on_full=on_full, on_idle=on_idle)
    track_generator(stream, agen)
    return agen


async def _take_ahead(
    stream: Any, max_: int, within: float, *, ahead: int, on_full: Callable[[list[Any]], None] | None,
    on_idle: Callable[[], Awaitable[None]] | None,
) -> AsyncIterator[list[Any]]:  # fmt: skip
    max_, ahead = max(1, max_), max(1, ahead)
    loop = asyncio.get_running_loop()
    started = 0.0  # when the batch filling now got its first event
    filling: list[Any] = []
    full: deque[list[Any]] = deque()
    ready = asyncio.Event()  # a full batch waits
    room = asyncio.Event()  # fewer than ``ahead`` full batches wait
    room.set()
    closed = False

    async def add(value: Any) -> Any:
        nonlocal started
        if closed:  # a new take on this stream (an agent restarted) reads from here on
            return value
        event = stream.current_event
        if event is None:
            raise RuntimeError("take_ahead found current_event is None")
        if not filling:
            started = loop.time()
        filling.append(event)
        if len(filling) >= max_:
            batch = filling.copy()
            filling.clear()
            full.append(batch)
            ready.set()
            if on_full is not None:
                try:
                    on_full(batch)
                except Exception:
                    log.exception("preparing a batch failed")
            if len(full) >= ahead:
                room.clear()
                await stream.wait(room)
        return value

    acks = stream.enable_acks
    stream.enable_acks = False  # acked below, once the caller is done with the batch
    stream.add_processor(add)
    read_passively(stream)
    try:
        while not stream.should_stop:
            if not full:  # a batch is due ``within`` s after its first event, however long it waited here
                left = within - (loop.time() - started) if filling else within
                if not within or left > 0:  # 0: as take_events, no timeout
                    await stream.wait_for_stopped(ready, timeout=left if within else None)
            if full:
                batch = full.popleft()
            elif filling:  # not full within ``within``: what there is
                batch = filling.copy()
                filling.clear()
            else:
                continue
            if not full:
                ready.clear()
            room.set()
            yield batch
            for event in batch:  # only once the caller is done with it: a batch cancelled midway is not
                await stream.ack(event)
            if on_idle is not None and not full and not filling:
                try:
                    await on_idle()
                except Exception:
                    log.exception("the idle hook failed")
    finally:
        # closed (the agent stopped or crashed): the batches not processed are dropped unacked, so their
        # offsets are not committed and they are delivered again; the reader is let go
        closed = True
        full.clear()
        filling.clear()
        room.set()
        stream.enable_acks = acks
        drop_processor(stream, add)
