"""One processing process per embedded data dir.

Two processes running the pipeline over one ``log.db`` would consume the same offsets twice (the landed
code raced: ``IntegrityError`` on ``decisions.decision_id``). ``serve``, ``ingest``, ``replay`` and ``delete``
take an exclusive ``flock`` on ``<data dir>/processing.lock`` first; a second one is refused at once with a
clear error naming the holder. Readers (``query``, ``memories``, ``export``) need no lock (SQLite WAL).
The lock is re-entrant within a process and released by the kernel if the process dies.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = "processing.lock"
_held: dict[Path, int] = {}


class DataDirBusy(RuntimeError):
    pass


@contextmanager
def processing_lock(data_dir: Path, who: str) -> Iterator[None]:
    path = (Path(data_dir) / LOCK_FILE).resolve()
    if path in _held:  # already ours (e.g. the API running a deletion)
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
        os.close(fd)
        raise DataDirBusy(
            f"{data_dir} is being processed by {holder}; run one processing command per data dir at a time "
            "(send messages to a running server with POST /v1/messages, or stop it first)"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"`memstream {who}` (pid {os.getpid()})".encode(), 0)
    _held[path] = fd
    try:
        yield
    finally:
        _held.pop(path, None)
        os.close(fd)
