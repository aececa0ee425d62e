"""The Elasticsearch store's indices and its low-level I/O (:class:`ESIndices`, the base of
:class:`backends.es.store.ESStore`): bootstrap of the index templates, the ``-v1`` indices and their
aliases, the client's lifecycle, bulk writes, real-time gets, ``search_after`` scans, delete-by-query and
the list of chats. Every request is routed by chat id. Mappings: :mod:`backends.es.mapping`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from elasticsearch import ApiError, AsyncElasticsearch

from backends.es import mapping as M
from backends.es.queries import search_kwargs

__all__ = ["BulkError", "ESIndices"]

_BULK_CHUNK = 500  # actions per bulk request
_PAGE = 1000  # hits per listing page / ids per mget


class BulkError(RuntimeError):
    """Some actions of a bulk request failed (other than the expected create conflicts / update misses)."""


class ESIndices:
    """The five indices behind their aliases and the I/O over them (``bulk``, ``mget``, ``scan``,
    ``delete_where``: what the store and its decision and lookup modules call). The constructor does no I/O;
    call :meth:`bootstrap` first."""

    def __init__(
        self,
        url_or_hosts: str | Sequence[str],
        *,
        index_prefix: str = "memstream",
        dim: int | None = None,
        refresh: Literal["wait_for", "true", "false"] = "wait_for",
        shards: int = 1,
        request_timeout: float = 30.0,
    ) -> None:
        if refresh not in ("wait_for", "true", "false"):  # "false": searches may miss the latest writes
            raise ValueError(f"refresh must be wait_for, true or false, not {refresh!r}")
        self.hosts = [url_or_hosts] if isinstance(url_or_hosts, str) else list(url_or_hosts)
        self.prefix = index_prefix
        self.dim = dim
        self.refresh = refresh
        self.shards = shards
        self.request_timeout = request_timeout
        self._client: AsyncElasticsearch | None = None
        self._seq = 0

    # ---- lifecycle -------------------------------------------------------------------------------

    def alias(self, kind: str) -> str:
        return f"{self.prefix}-{kind}"

    async def bootstrap(self) -> None:
        """Put the index templates and create the ``-v1`` indices and their aliases where missing."""
        if self._client is not None:
            return
        es = AsyncElasticsearch(
            self.hosts, request_timeout=self.request_timeout, max_retries=3, retry_on_timeout=True
        )
        try:
            await self._check_dim(es)
            for kind in M.INDEX_KINDS:
                await es.indices.put_index_template(
                    **M.index_template(self.prefix, kind, self.dim, self.shards)
                )
                if await es.indices.exists_alias(name=self.alias(kind)):
                    continue
                try:
                    await es.indices.create(
                        index=f"{self.alias(kind)}-v1", aliases={self.alias(kind): {"is_write_index": True}}
                    )
                except ApiError as e:
                    if e.error != "resource_already_exists_exception":
                        raise
        except BaseException:
            await es.close()
            raise
        self._client = es

    async def _check_dim(self, es: AsyncElasticsearch) -> None:
        if not await es.indices.exists_alias(name=self.alias("docs")):
            return
        mappings = (await es.indices.get_mapping(index=self.alias("docs"))).body
        dims = {m["mappings"]["properties"].get("vector", {}).get("dims") for m in mappings.values()} - {None}
        if dims and self.dim is not None and dims != {self.dim}:
            raise ValueError(
                f"index {self.alias('docs')} holds {dims.pop()}-d vectors, embedder gives {self.dim}-d"
            )
        if dims and self.dim is None:
            self.dim = dims.pop()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    @property
    def es(self) -> AsyncElasticsearch:
        if self._client is None:
            raise RuntimeError("ESStore used before bootstrap() (or after close())")
        return self._client

    def _next_seq(self, n: int) -> int:
        """``n`` consecutive insertion sequence numbers (monotonic within this process, time-ordered across)."""
        start = max(time.time_ns(), self._seq + 1)
        self._seq = start + n - 1
        return start

    # ---- low-level I/O ---------------------------------------------------------------------------

    async def bulk(self, ops: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> list[dict[str, Any]]:
        """Run ``(action, body)`` pairs in chunks; returns each action's result. A ``create`` that finds the
        document (409) or an ``update`` that misses it (404) is an expected outcome; anything else raises."""
        results: list[dict[str, Any]] = []
        failed: list[str] = []
        for i in range(0, len(ops), _BULK_CHUNK):
            lines: list[dict[str, Any]] = []
            for action, body in ops[i : i + _BULK_CHUNK]:
                lines += [action] if body is None else [action, body]
            resp = await self.es.bulk(operations=lines, refresh=self.refresh)
            for item in resp["items"]:
                ((op, result),) = item.items()
                status = result.get("status", 500)
                if status >= 300 and (op, status) not in {("create", 409), ("update", 404), ("delete", 404)}:
                    failed.append(f"{op} {result.get('_index')}/{result.get('_id')}: {result.get('error')}")
                results.append(result)
        if failed:
            raise BulkError(f"{len(failed)} bulk actions failed; first: {failed[0]}")
        return results

    async def mget(self, kind: str, chat_id: str, local_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Real-time fetch of a chat's records by local id -> ``_source`` (missing ids left out)."""
        found = await self.mget_keys(kind, [(chat_id, x) for x in dict.fromkeys(local_ids)])
        return {x: source for (_, x), source in found.items()}

    async def mget_keys(self, kind: str, keys: list[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Real-time fetch by ``(chat_id, local_id)`` keys of any chats -> ``_source``, one request a page:
        each id routed to its chat, and a hit that belongs to another chat is left out."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for i in range(0, len(keys), _PAGE):
            chunk = keys[i : i + _PAGE]
            docs = [{"_id": M.es_id(chat, x), "routing": chat} for chat, x in chunk]
            resp = await self.es.mget(index=self.alias(kind), docs=docs)
            for (chat, x), d in zip(chunk, resp["docs"], strict=True):
                if d.get("found") and d["_source"].get("chat_id") == chat:
                    out[(chat, x)] = d["_source"]
        return out

    async def scan(
        self, kind: str, query: dict[str, Any], sort: list[str], routing: str | None
    ) -> list[dict[str, Any]]:
        """Every hit of a filter query in ``sort`` order (``search_after`` pages)."""
        out: list[dict[str, Any]] = []
        after = None
        while True:
            resp = await self.es.search(
                index=self.alias(kind), query=query, sort=[{f: "asc"} for f in sort], size=_PAGE,
                search_after=after, routing=routing, track_total_hits=False,
            )  # fmt: skip
            hits = resp["hits"]["hits"]
            out += [h["_source"] for h in hits]
            if len(hits) < _PAGE:
                return out
            after = hits[-1]["sort"]

    async def delete_where(self, kind: str, query: dict[str, Any], routing: str | None) -> int:
        resp = await self.es.delete_by_query(
            index=self.alias(kind), query=query, routing=routing, refresh=True, conflicts="proceed"
        )
        return int(resp.get("deleted", 0))

    async def _search(self, kind: str, chat_id: str, body: dict[str, Any], **extra: Any) -> Any:
        return await self.es.search(index=self.alias(kind), routing=chat_id, **search_kwargs(body), **extra)

    async def chats(self) -> list[str]:
        index = ",".join(self.alias(k) for k in ("messages", "docs", "topics"))
        found: set[str] = set()
        after: dict[str, Any] | None = None
        while True:
            source = {"sources": [{"chat": {"terms": {"field": "chat_id"}}}], "size": _PAGE}
            aggs = {"c": {"composite": {**source, **({"after": after} if after else {})}}}
            try:
                resp = await self.es.search(index=index, size=0, aggs=aggs)
            except ApiError as e:  # no composite aggregation (some compatible servers): one terms page
                if e.status_code != 400 or after is not None:
                    raise
                resp = await self.es.search(index=index, size=0,
                                            aggs={"c": {"terms": {"field": "chat_id", "size": 65_536}}})  # fmt: skip
                return sorted(b["key"] for b in resp["aggregations"]["c"]["buckets"])
            agg = resp["aggregations"]["c"]
            found.update(b["key"]["chat"] for b in agg["buckets"])
            after = agg.get("after_key")
            if not agg["buckets"] or after is None:
                return sorted(found)
