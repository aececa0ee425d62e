"""One backend registry keyed by URL scheme (memstream.clients.BACKENDS): each embedded scheme opens the
backend it names; the service schemes are opened against real servers in tests/integration."""

from __future__ import annotations

import pytest

from backends.sqlite.store import SQLiteStore
from memstream.clients import BACKENDS, UnsupportedBackend, open_backend
from retrieval.protocols import MemoryStore
from streams.clients import StageLog
from streams.log import EventLog, FileLog
from streams.working_memory import InProcessWorkingMemory, WorkingMemory


def test_every_scheme_has_one_kind():
    assert {s: e.kind for s, e in BACKENDS.items()} == {
        "file": "log", "kafka": "log", "sqlite": "store", "es": "store", "es+https": "store",
        "memory": "working_memory", "redis": "working_memory", "rediss": "working_memory",
        "unix": "working_memory",
    }  # fmt: skip


async def test_file_scheme_opens_the_local_log(tmp_path):
    log = await open_backend("log", f"file://{tmp_path}/log")
    try:
        assert isinstance(log, FileLog) and isinstance(log, EventLog) and isinstance(log, StageLog)
        assert (tmp_path / "log" / "log.db").exists()
    finally:
        await log.close()


async def test_sqlite_scheme_opens_the_sqlite_store(tmp_path):
    store = await open_backend("store", f"sqlite:///{tmp_path}/sub/m.db", None)
    try:
        assert isinstance(store, SQLiteStore) and isinstance(store, MemoryStore)
        await store.bootstrap()
        assert (tmp_path / "sub" / "m.db").exists() and await store.chats() == []
    finally:
        await store.close()


async def test_memory_scheme_opens_in_process_working_memory():
    wm = await open_backend("working_memory", "memory://")
    assert isinstance(wm, InProcessWorkingMemory) and isinstance(wm, WorkingMemory)
    await wm.close()


@pytest.mark.parametrize(
    ("kind", "url"), [("log", "sqlite:///x.db"), ("store", "etcd://h"), ("working_memory", "es://h")]
)
async def test_a_scheme_of_another_kind_or_unknown_is_refused_with_the_known_ones(kind, url):
    with pytest.raises(UnsupportedBackend, match="known: "):
        await open_backend(kind, url)  # type: ignore[arg-type]
