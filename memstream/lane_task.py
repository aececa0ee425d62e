"""A task started on another thread's event loop and awaited from this one (the API's lanes)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["run_on"]

T = TypeVar("T")


def run_on(loop: asyncio.AbstractEventLoop, start: Callable[[], asyncio.Task[T]], *,
           settle_s: float = 10.0) -> asyncio.Task[T]:  # fmt: skip
    """``start()`` called on ``loop`` (after what was handed to that loop before this call, before what is
    handed to it after), its task awaited from the calling loop by the task returned, result or exception.
    Cancelling the returned task cancels the other one and waits until it has ended (at most ``settle_s``),
    so nothing that task does happens after the cancellation is through."""
    ended: concurrent.futures.Future[Any] = concurrent.futures.Future()
    started: list[asyncio.Task[T]] = []

    def begin() -> None:
        try:
            task = start()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting loop
            ended.set_exception(exc)
            return
        started.append(task)
        task.add_done_callback(lambda t: _settle(t, ended))

    loop.call_soon_threadsafe(begin)

    def cancel() -> None:
        if started:
            started[0].cancel()
        elif not ended.done():  # cancelled before it began: it never will
            ended.cancel()

    async def wait() -> T:
        try:
            return await asyncio.shield(asyncio.wrap_future(ended))
        except asyncio.CancelledError:
            if not ended.done():
                loop.call_soon_threadsafe(cancel)
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(ended)), settle_s)
            raise

    return asyncio.ensure_future(wait())


def _settle(task: asyncio.Task, ended: concurrent.futures.Future) -> None:
    if ended.done():
        return
    if task.cancelled():
        ended.cancel()
    elif task.exception() is not None:
        ended.set_exception(task.exception())
    else:
        ended.set_result(task.result())
