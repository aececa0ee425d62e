"""One processing process per embedded data dir.

Two processes running the pipeline over one ``log.db`` would consume the same offsets twice (the landed
code raced: ``IntegrityError`` on ``decisions.decision_id``). ``serve``, ``ingest``, ``replay`` and ``delete``
take an exclusive ``flock`` on ``<data dir>/processing.lock`` first; a second one is refused at once with a
clear error naming the holder. Readers (``query``, ``memories``, ``export``) need no lock (SQLite WAL).
The lock is re-entrant within a process and released by the kernel if the process dies.

A command-line ``ingest``/``replay``/``delete`` also holds ``work.lock`` (:func:`command_lock`) for its whole
run: while ``serve --workers`` hands processing from a dead worker to another, the CLI can take the
processing lock, and the serving workers' deletions (which hold only ``work.lock``) must not interleave with its
batches.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

LOCK_FILE = "processing.lock"
_held: dict[Path, int] = {}


class DataDirBusy(RuntimeError):
    pass


def _take(path: Path, who: str) -> int | str:
    """The processing lock at ``path``, taken without waiting: its descriptor (now in ``_held``), or who holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        return holder
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"`memstream {who}` (pid {os.getpid()})".encode(), 0)
    _held[path] = fd
    return fd


@contextmanager
def processing_lock(data_dir: Path, who: str) -> Iterator[None]:
    path = (Path(data_dir) / LOCK_FILE).resolve()
    if path in _held:  # already ours (e.g. the API running a deletion)
        yield
        return
    fd = _take(path, who)
    if isinstance(fd, str):
        raise DataDirBusy(
            f"{data_dir} is being processed by {fd}; run one processing command per data dir at a time "
            "(send messages to a running server with POST /v1/messages, or stop it first)"
        )
    try:
        yield
    finally:
        _held.pop(path, None)
        os.close(fd)


def try_processing_lock(data_dir: Path, who: str) -> bool:
    """Take the processing lock for the rest of this process's life if it is free (``serve --workers``:
    the worker that gets it processes; the others retry, so one takes over when it dies). Never raises
    :class:`DataDirBusy`; True if this process holds it now."""
    path = (Path(data_dir) / LOCK_FILE).resolve()
    return path in _held or not isinstance(_take(path, who), str)


def release_processing_lock(data_dir: Path) -> None:
    fd = _held.pop((Path(data_dir) / LOCK_FILE).resolve(), None)
    if fd is not None:
        os.close(fd)


def processing_lock_free(data_dir: Path) -> str | None:
    """None if no other process holds the processing lock now, else who holds it (a check, not a hold)."""
    path = Path(data_dir) / LOCK_FILE
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None
    except BlockingIOError:
        return os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
    finally:
        os.close(fd)


class WorkLock:
    """Batches and deletions of one data dir, one at a time across the processes of ``serve --workers``
    (``flock`` on ``<data dir>/work.lock``; a new open file per hold, so it also excludes within a process)."""

    def __init__(self, data_dir: Path, waiting: Callable[[str], None] | None = None) -> None:
        self.path = Path(data_dir) / "work.lock"
        self.waiting = waiting  # told once when the lock is held elsewhere and this hold has to wait
        self._fd: int | None = None

    async def __aenter__(self) -> WorkLock:
        import asyncio

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if self.waiting is not None:
                self.waiting(
                    f"{self.path.parent}: waiting for a serving worker's deletion or batch to finish"
                )
            try:
                await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
        self._fd = fd
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor of the open file releases the lock
            self._fd = None


@asynccontextmanager
async def command_lock(
    data_dir: Path, who: str, waiting: Callable[[str], None] | None = None
) -> AsyncIterator[None]:
    """The processing lock (refused at once if held) and then ``work.lock`` (waited for: a serving worker's
    deletion or batch in progress ends soon), for a command-line processing command's whole run.
    ``waiting(message)`` is told once when it has to wait."""
    with processing_lock(data_dir, who):
        async with WorkLock(data_dir, waiting):
            yield
