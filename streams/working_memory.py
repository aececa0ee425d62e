"""Working memory: the per-chat state a worker keeps between batches, shared by every worker.

- the segmenter's pool of a chat (its active topics), so a worker that restarts or takes a partition over
  after a rebalance continues the chat's topics where the last one left them;
- the active topic windows (topic id -> message ids), for readers that want the live topics of a chat;
- a small per-chat journal of decisions already taken (e.g. a consolidation), so a redelivered batch
  repeats the same effects instead of deciding again on a store that already holds them.

Pool writes are fenced by a version (the log offset of the last message folded into the pool): a stale
writer — a worker still finishing a batch after its partition moved — can never roll a pool back.
Implementations are chosen by URL: ``memory://`` (in-process, the embedded default) or ``redis://…``
(``?prefix=NAME`` namespaces the keys; default ``ms:wm``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qs, urlparse

PoolRewrite = Callable[[str], str | None]  # a serialized pool -> the pool to keep (None: drop it)


@runtime_checkable
class WorkingMemory(Protocol):
    async def get_pool(self, chat_id: str) -> str | None: ...

    async def put_pool(
        self, chat_id: str, state: str, ttl_s: float | None, *, version: int | None = None
    ) -> bool:
        """Store a chat's pool; with ``version``, only if no newer version is stored. True if written."""
        ...

    async def put_topic_window(
        self, chat_id: str, topic_id: str, message_ids: list[str], ttl_s: float | None
    ) -> None: ...

    async def drop_topic_window(self, chat_id: str, topic_id: str) -> None: ...

    async def topic_windows(self, chat_id: str) -> dict[str, list[str]]: ...

    async def get_journal(self, chat_id: str, entry_id: str) -> str | None: ...

    async def put_journal(self, chat_id: str, entry_id: str, value: str, ttl_s: float | None) -> None: ...

    async def forget_chat(self, chat_id: str) -> None:
        """Drop everything held for a chat (deletion, replay)."""
        ...

    async def forget_messages(
        self,
        chat_id: str,
        message_ids: Collection[str],
        rewrite_pool: PoolRewrite | None = None,
        needles: Collection[str] = (),
    ) -> int:
        """Erase messages from a chat's working memory (a user's deletion): the pool is replaced by
        ``rewrite_pool(pool)`` (same version and expiry), the ids leave every topic window (an emptied
        window is dropped), and journal entries containing any of ``needles`` (quoted ids, texts) are
        dropped. Returns how many entries changed."""
        ...

    async def close(self) -> None: ...


def _mentions(value: str, needles: Collection[str]) -> bool:
    return any(n and n in value for n in needles)


class InProcessWorkingMemory:
    """Dicts with expiry times: the embedded default, one process only."""

    def __init__(self) -> None:
        self._pools: dict[str, tuple[str, int, float | None]] = {}
        self._windows: dict[str, dict[str, tuple[list[str], float | None]]] = {}
        self._journal: dict[tuple[str, str], tuple[str, float | None]] = {}

    @staticmethod
    def _deadline(ttl_s: float | None) -> float | None:
        return None if ttl_s is None else time.monotonic() + ttl_s

    @staticmethod
    def _alive(deadline: float | None) -> bool:
        return deadline is None or deadline > time.monotonic()

    async def get_pool(self, chat_id: str) -> str | None:
        item = self._pools.get(chat_id)
        return item[0] if item and self._alive(item[2]) else None

    async def put_pool(
        self, chat_id: str, state: str, ttl_s: float | None, *, version: int | None = None
    ) -> bool:
        cur = self._pools.get(chat_id)
        if version is not None and cur is not None and self._alive(cur[2]) and cur[1] > version:
            return False
        self._pools[chat_id] = (state, -1 if version is None else version, self._deadline(ttl_s))
        return True

    async def put_topic_window(
        self, chat_id: str, topic_id: str, message_ids: list[str], ttl_s: float | None
    ) -> None:
        self._windows.setdefault(chat_id, {})[topic_id] = (list(message_ids), self._deadline(ttl_s))

    async def drop_topic_window(self, chat_id: str, topic_id: str) -> None:
        self._windows.get(chat_id, {}).pop(topic_id, None)

    async def topic_windows(self, chat_id: str) -> dict[str, list[str]]:
        wins = self._windows.get(chat_id, {})
        return {t: list(ids) for t, (ids, dl) in sorted(wins.items()) if self._alive(dl)}

    async def get_journal(self, chat_id: str, entry_id: str) -> str | None:
        item = self._journal.get((chat_id, entry_id))
        return item[0] if item and self._alive(item[1]) else None

    async def put_journal(self, chat_id: str, entry_id: str, value: str, ttl_s: float | None) -> None:
        self._journal[(chat_id, entry_id)] = (value, self._deadline(ttl_s))

    async def forget_chat(self, chat_id: str) -> None:
        self._pools.pop(chat_id, None)
        self._windows.pop(chat_id, None)
        for key in [k for k in self._journal if k[0] == chat_id]:
            del self._journal[key]

    async def forget_messages(
        self,
        chat_id: str,
        message_ids: Collection[str],
        rewrite_pool: PoolRewrite | None = None,
        needles: Collection[str] = (),
    ) -> int:
        gone, changed = set(message_ids), 0
        pool = self._pools.get(chat_id)
        if pool is not None and rewrite_pool is not None:
            state = rewrite_pool(pool[0])
            if state is None:
                del self._pools[chat_id]
            else:
                self._pools[chat_id] = (state, pool[1], pool[2])
            changed += 1
        windows = self._windows.get(chat_id, {})
        for topic_id, (ids, deadline) in list(windows.items()):
            if gone & set(ids):
                kept = [m for m in ids if m not in gone]
                if kept:
                    windows[topic_id] = (kept, deadline)
                else:
                    del windows[topic_id]
                changed += 1
        for key in [k for k, (v, _) in self._journal.items() if k[0] == chat_id and _mentions(v, needles)]:
            del self._journal[key]
            changed += 1
        return changed

    async def close(self) -> None:
        return None


# Write the pool only if the stored version is not newer; (re)set or clear its expiry.
_PUT_POOL = """
local cur = redis.call('HGET', KEYS[1], 'v')
local v = tonumber(ARGV[2])
if v >= 0 and cur and tonumber(cur) > v then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 'v', ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) else redis.call('PERSIST', KEYS[1]) end
return 1
"""


def _ms(ttl_s: float | None) -> int:
    return 0 if ttl_s is None else max(1, int(ttl_s * 1000))


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


class RedisWorkingMemory:
    """redis.asyncio; every key of a chat shares the hash tag ``{chat_id}`` (one Redis Cluster slot)."""

    def __init__(self, url: str, *, prefix: str | None = None) -> None:
        from redis.asyncio import Redis

        query = parse_qs(urlparse(url).query)
        self.prefix = prefix or query.get("prefix", ["ms:wm"])[0]
        clean = url.split("?", 1)[0]
        self._redis = Redis.from_url(clean, decode_responses=True)
        self._put_pool = self._redis.register_script(_PUT_POOL)

    def _key(self, chat_id: str, *parts: str) -> str:
        return ":".join((self.prefix, "{" + chat_id + "}", *parts))

    async def get_pool(self, chat_id: str) -> str | None:
        return await self._redis.hget(self._key(chat_id, "pool"), "s")

    async def put_pool(
        self, chat_id: str, state: str, ttl_s: float | None, *, version: int | None = None
    ) -> bool:
        args = [state, -1 if version is None else int(version), _ms(ttl_s)]
        return bool(await self._put_pool(keys=[self._key(chat_id, "pool")], args=args))

    async def put_topic_window(
        self, chat_id: str, topic_id: str, message_ids: list[str], ttl_s: float | None
    ) -> None:
        index = self._key(chat_id, "windows")
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.set(self._key(chat_id, "win", topic_id), json.dumps(message_ids), px=_ms(ttl_s) or None)
            pipe.sadd(index, topic_id)
            if ttl_s is None:
                pipe.persist(index)
            else:  # the index lives as long as its longest-lived window
                pipe.pexpire(index, _ms(ttl_s), gt=True)
                pipe.pexpire(index, _ms(ttl_s), nx=True)
            await pipe.execute()

    async def drop_topic_window(self, chat_id: str, topic_id: str) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(self._key(chat_id, "win", topic_id))
            pipe.srem(self._key(chat_id, "windows"), topic_id)
            await pipe.execute()

    async def topic_windows(self, chat_id: str) -> dict[str, list[str]]:
        topics = sorted(await self._redis.smembers(self._key(chat_id, "windows")))
        if not topics:
            return {}
        values = await self._redis.mget([self._key(chat_id, "win", t) for t in topics])
        expired = [t for t, v in zip(topics, values, strict=True) if v is None]
        if expired:
            await self._redis.srem(self._key(chat_id, "windows"), *expired)
        return {t: json.loads(v) for t, v in zip(topics, values, strict=True) if v is not None}

    async def get_journal(self, chat_id: str, entry_id: str) -> str | None:
        return await self._redis.get(self._key(chat_id, "journal", entry_id))

    async def put_journal(self, chat_id: str, entry_id: str, value: str, ttl_s: float | None) -> None:
        await self._redis.set(self._key(chat_id, "journal", entry_id), value, px=_ms(ttl_s) or None)

    async def forget_chat(self, chat_id: str) -> None:
        pattern = _glob_escape(self._key(chat_id)) + ":*"
        batch: list[str] = []
        async for key in self._redis.scan_iter(match=pattern, count=500):
            batch.append(key)
            if len(batch) >= 500:
                await self._redis.delete(*batch)
                batch = []
        if batch:
            await self._redis.delete(*batch)

    async def forget_messages(
        self,
        chat_id: str,
        message_ids: Collection[str],
        rewrite_pool: PoolRewrite | None = None,
        needles: Collection[str] = (),
    ) -> int:
        from redis.exceptions import WatchError

        gone, changed = set(message_ids), 0
        key = self._key(chat_id, "pool")
        while rewrite_pool is not None:  # optimistic: a worker writing the pool meanwhile -> read again
            async with self._redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    raw = await pipe.hget(key, "s")
                    if raw is None:
                        break
                    state = rewrite_pool(raw)
                    pipe.multi()
                    if state is None:
                        pipe.delete(key)
                    else:
                        pipe.hset(key, "s", state)  # the version and the expiry stay
                    await pipe.execute()
                    changed += 1
                    break
                except WatchError:
                    continue
        for topic_id, ids in (await self.topic_windows(chat_id)).items():
            if gone & set(ids):
                kept = [m for m in ids if m not in gone]
                win = self._key(chat_id, "win", topic_id)
                if kept:
                    await self._redis.set(win, json.dumps(kept), keepttl=True)
                else:
                    await self.drop_topic_window(chat_id, topic_id)
                changed += 1
        pattern = _glob_escape(self._key(chat_id, "journal")) + ":*"
        async for jkey in self._redis.scan_iter(match=pattern, count=500):
            value = await self._redis.get(jkey)
            if value is not None and _mentions(value, needles):
                changed += await self._redis.delete(jkey)
        return changed

    async def close(self) -> None:
        await self._redis.aclose()
