"""How long a request may wait for a lane of the API (:class:`memstream.serving.Lane`), and the queue that
holds it to that: an overloaded lane refuses (:class:`Busy`; the API answers 429 + Retry-After) rather than
keep a caller waiting.

A lane runs ``parallel`` calls at a time; the others wait their turn in arrival order. A call is refused

- at once, when the lane's queue holds ``max_pending`` calls or is expected to take longer than the bound
  (the calls ahead, and the one running, times the lane's service time: a moving average of its calls'
  durations, so it follows the box getting busier or quieter);
- in the queue, when it has waited the bound (a timer: even a lane stuck in one call keeps no caller past
  it; a call whose turn comes later than its timer is refused, not run).

The bound is ``serve.max_wait_s`` while the lane is calm: its queue was empty and it refused no call within
the last ``max_wait_s`` (a burst is absorbed). Otherwise more arrives than the lane does, and a standing
queue would only add its delay to every answer: the bound is ``serve.standing_wait_s``. This is the adaptive
queue timeout of CoDel, as servers use it (Maurer, "Fail at Scale", ACM Queue 13(8), 2015), with refusals
as a second sign of overload: a queue held short by the bound empties now and then, which alone would let
a second of queue build up again each time. The decisions are the pure functions below; the queue
is used from the caller's (HTTP) event loop only.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

from memstream.settings import ServeConfig

T = TypeVar("T")
ALPHA = 0.2  # weight of the newest call's duration in the service time (the last ~5 calls count)
MAX_RETRY_AFTER = 60


class Busy(Exception):
    """A lane's queue (or the log's backlog) is full: try again after ``retry_after`` seconds."""

    def __init__(self, what: str, retry_after: int = 1) -> None:
        super().__init__(what)
        self.retry_after = retry_after


def ewma(average: float | None, sample: float, alpha: float = ALPHA) -> float:
    """The moving average after ``sample`` (the first sample is the average)."""
    return sample if average is None else average + alpha * (sample - average)


def expected_wait_s(waiting: int, service_s: float | None, parallel: int) -> float:
    """How long a call arriving now waits when every slot is taken: the ``waiting`` calls ahead and the one
    running (its remaining time is not known: counted whole), ``parallel`` at a time. 0 before any call
    has been timed (the queue's timers still bound the wait)."""
    return 0.0 if service_s is None else (waiting + 1) * service_s / parallel


def wait_bound_s(now: float, empty_at: float, refused_at: float, cfg: ServeConfig) -> float:
    """The longest a call arriving at ``now`` may wait, the queue last empty at ``empty_at`` and the last call
    refused at ``refused_at``."""
    calm = now - empty_at <= cfg.max_wait_s and now - refused_at > cfg.max_wait_s
    return cfg.max_wait_s if calm else min(cfg.standing_wait_s, cfg.max_wait_s)


def retry_after_s(expected_s: float) -> int:
    """Retry-After (whole seconds, at least 1): about when the queue seen now has drained."""
    return max(1, min(MAX_RETRY_AFTER, math.ceil(expected_s)))


class LaneQueue:
    """The calls of one lane: ``parallel`` run, the others wait in arrival order, within the bounds of
    ``cfg`` (see the module docstring)."""

    def __init__(self, name: str, cfg: ServeConfig, parallel: int = 1) -> None:
        self.name = name
        self.cfg = cfg
        self.parallel = parallel
        self.running = 0
        self.service_s: float | None = None
        self.empty_at = time.monotonic()
        self.refused_at = -math.inf
        self._waiters: deque[tuple[asyncio.Future[None], float, float]] = deque()  # (turn, deadline, bound)

    @property
    def pending(self) -> int:
        return self.running + len(self._waiters)

    def expected_wait_s(self) -> float:
        return expected_wait_s(len(self._waiters), self.service_s, self.parallel)

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` once it has a slot; :class:`Busy` instead when it would wait past the bound."""
        await self._turn()
        started = time.monotonic()
        try:
            return await call()
        finally:
            self.service_s = ewma(self.service_s, time.monotonic() - started)
            self.running -= 1
            self._next()

    async def _turn(self) -> None:
        now = time.monotonic()
        if not self._waiters:
            self.empty_at = now
            if self.running < self.parallel:
                self.running += 1
                return
        bound, expected = wait_bound_s(now, self.empty_at, self.refused_at, self.cfg), self.expected_wait_s()
        if self.pending >= self.cfg.max_pending or expected > bound:
            self.refused_at = now
            what = f"~{expected:.2f} s of work queued, {self.pending} calls"
            raise Busy(f"the {self.name} lane is busy: {what} (a request waits at most {bound:.2f} s)",
                       retry_after_s(expected))  # fmt: skip
        loop = asyncio.get_running_loop()
        turn: asyncio.Future[None] = loop.create_future()
        self._waiters.append((turn, now + bound, bound))
        timer = loop.call_later(bound, self._expire, turn, bound)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled() and turn.exception() is None:  # given a slot meanwhile
                self.running -= 1
                self._next()
            raise
        finally:
            timer.cancel()
            self._forget(turn)

    def _expire(self, turn: asyncio.Future[None], bound: float) -> None:
        if not turn.done():
            self._forget(turn)
            self.refused_at = time.monotonic()
            turn.set_exception(Busy(f"waited {bound:.2f} s for the {self.name} lane, refused",
                                    retry_after_s(self.expected_wait_s())))  # fmt: skip

    def _forget(self, turn: asyncio.Future[None]) -> None:
        for i, (waiter, _, _) in enumerate(self._waiters):
            if waiter is turn:
                del self._waiters[i]
                break
        if not self._waiters:
            self.empty_at = time.monotonic()

    def _next(self) -> None:
        """Give free slots to the calls waiting longest; one whose deadline passed is refused (its timer
        was late: a busy loop)."""
        now = time.monotonic()
        while self._waiters and self.running < self.parallel:
            turn, deadline, bound = self._waiters.popleft()
            if turn.done():
                continue
            if now > deadline:
                self._expire(turn, bound)
                continue
            self.running += 1
            turn.set_result(None)
        if not self._waiters:
            self.empty_at = now
