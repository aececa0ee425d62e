"""One contract suite over every WorkingMemory implementation (in-process and real Redis)."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from memstream.clients import open_working_memory
from streams.working_memory import InProcessWorkingMemory, RedisWorkingMemory, WorkingMemory

pytestmark = pytest.mark.integration

REDIS_URL = os.environ.get("MEMSTREAM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(params=["memory", "redis"])
async def wm(request):
    if request.param == "memory":
        backend: WorkingMemory = await open_working_memory("memory://")
        assert isinstance(backend, InProcessWorkingMemory)
    else:
        backend = await open_working_memory(f"{REDIS_URL}?prefix=test-wm-{uuid.uuid4().hex[:12]}")
        assert isinstance(backend, RedisWorkingMemory)
    assert isinstance(backend, WorkingMemory)
    yield backend
    for chat in ("c1", "c2", "odd*[chat]?"):
        await backend.forget_chat(chat)
    await backend.close()


async def test_pool_round_trip_and_isolation(wm):
    assert await wm.get_pool("c1") is None
    assert await wm.put_pool("c1", '{"chat_id": "c1"}', 60)
    assert await wm.get_pool("c1") == '{"chat_id": "c1"}'
    assert await wm.get_pool("c2") is None


async def test_pool_writes_are_fenced_by_version(wm):
    assert await wm.put_pool("c1", "v5", 60, version=5)
    assert not await wm.put_pool("c1", "v3", 60, version=3)  # a stale writer loses
    assert await wm.get_pool("c1") == "v5"
    assert await wm.put_pool("c1", "v5-again", 60, version=5)  # a redelivered batch may rewrite
    assert await wm.put_pool("c1", "v9", 60, version=9)
    assert await wm.put_pool("c1", "forced", 60)  # unversioned (replay) always writes
    assert await wm.get_pool("c1") == "forced"
    assert await wm.put_pool("c1", "v1", 60, version=1)


async def test_pool_expires_after_its_ttl(wm):
    await wm.put_pool("c1", "short", 0.2)
    await wm.put_pool("c2", "forever", None)
    await asyncio.sleep(0.35)
    assert await wm.get_pool("c1") is None
    assert await wm.get_pool("c2") == "forever"
    assert await wm.put_pool("c1", "old version gone", 60, version=0)


async def test_topic_windows(wm):
    await wm.put_topic_window("c1", "t1", ["m1", "m2"], 60)
    await wm.put_topic_window("c1", "t2", ["m3"], 0.2)
    await wm.put_topic_window("c2", "t9", ["x"], 60)
    assert await wm.topic_windows("c1") == {"t1": ["m1", "m2"], "t2": ["m3"]}
    await wm.put_topic_window("c1", "t1", ["m1", "m2", "m4"], 60)
    await asyncio.sleep(0.35)
    assert await wm.topic_windows("c1") == {"t1": ["m1", "m2", "m4"]}
    await wm.drop_topic_window("c1", "t1")
    await wm.drop_topic_window("c1", "never-there")
    assert await wm.topic_windows("c1") == {}
    assert await wm.topic_windows("c2") == {"t9": ["x"]}


async def test_journal(wm):
    assert await wm.get_journal("c1", "r1") is None
    await wm.put_journal("c1", "r1", "[1, 2]", 60)
    await wm.put_journal("c1", "r2", "gone soon", 0.2)
    assert await wm.get_journal("c1", "r1") == "[1, 2]"
    assert await wm.get_journal("c2", "r1") is None
    await asyncio.sleep(0.35)
    assert await wm.get_journal("c1", "r2") is None


async def test_forget_chat_drops_only_that_chat(wm):
    odd = "odd*[chat]?"
    for chat in ("c1", odd):
        await wm.put_pool(chat, f"pool-{chat}", 60, version=3)
        await wm.put_topic_window(chat, "t1", ["m1"], 60)
        await wm.put_journal(chat, "r1", "x", 60)
    await wm.forget_chat(odd)
    assert await wm.get_pool(odd) is None
    assert await wm.topic_windows(odd) == {}
    assert await wm.get_journal(odd, "r1") is None
    assert await wm.put_pool(odd, "fresh", 60, version=0)  # the fence went with it
    assert await wm.get_pool("c1") == "pool-c1"
    assert await wm.topic_windows("c1") == {"t1": ["m1"]}
    assert await wm.get_journal("c1", "r1") == "x"


async def test_unknown_scheme_is_rejected():
    with pytest.raises(ValueError, match="scheme"):
        await open_working_memory("etcd://somewhere")


async def test_redis_scheme_opens_redis_working_memory():
    """memstream.clients.BACKENDS["redis"] against the local Redis."""
    backend = await open_working_memory(f"{REDIS_URL}?prefix=test-wm-{uuid.uuid4().hex[:12]}")
    try:
        assert isinstance(backend, RedisWorkingMemory)
        await backend.put_pool("c1", "p", None)
        assert await backend.get_pool("c1") == "p"
        await backend.forget_chat("c1")
    finally:
        await backend.close()
