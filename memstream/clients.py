"""The client bundle: every backend built once (worker start-up or the API lifespan), chosen by URL."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from memstream.settings import Settings
from retrieval.protocols import Embedder, MemoryStore
from streams.log import FileLog


class UnsupportedBackend(ValueError):
    pass


def _path_from_url(url: str, scheme: str) -> Path:
    if not url.startswith(f"{scheme}://"):
        raise UnsupportedBackend(f"expected a {scheme}:// URL, got {url!r}")
    return Path(url[len(scheme) + 3 :])


async def open_log(settings: Settings) -> Any:
    url = settings.resolved_log_url
    scheme = urlparse(url).scheme
    if scheme == "file":
        return await FileLog(_path_from_url(url, "file") / "log.db").open()
    if scheme == "kafka":  # the API appends to Kafka; the Faust worker (`memstream worker`) processes
        from streams.faust_app import KafkaLog, brokers_of

        return await KafkaLog(brokers_of(url)).open()
    raise UnsupportedBackend(f"no log backend for scheme {scheme!r} (known: file, kafka)")


async def open_store(settings: Settings, dim: int | None) -> MemoryStore:
    url = settings.resolved_store_url
    scheme = urlparse(url).scheme
    if scheme == "sqlite":
        from retrieval.sqlite_store import SQLiteStore

        path = Path(url[len("sqlite:///") - 1 :]) if url.startswith("sqlite:////") else Path(url[10:])
        path.parent.mkdir(parents=True, exist_ok=True)
        store = SQLiteStore(path, dim)
    elif scheme in ("es", "es+https"):
        from retrieval.es_store import ESStore

        store = ESStore.from_url(url, dim)  # es://host:port?prefix=memstream&rrf=auto|server|client
    else:
        raise UnsupportedBackend(f"no store backend for scheme {scheme!r} (known: sqlite, es, es+https)")
    await store.bootstrap()
    return store


def open_embedder(settings: Settings) -> Embedder | None:
    from retrieval.embedder import build_embedder

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return build_embedder(settings.embedder, settings.data_dir / "embed-cache.db", settings.embed_batch)


async def open_graph(settings: Settings, dim: int | None):
    """The graph memory (entities and relation edges) next to the store."""
    from retrieval.graph_sqlite import GraphSQLiteStore

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    graph = GraphSQLiteStore(settings.data_dir / "graph.db", dim)
    await graph.bootstrap()
    return graph


def open_llm(settings: Settings) -> Any | None:
    if not settings.llm.enabled:
        return None
    from agents.llm import LLMClient

    return LLMClient(settings.llm)


@dataclass
class Clients:
    settings: Settings
    log: Any  # FileLog (embedded) or KafkaLog (production)
    store: MemoryStore
    embedder: Embedder | None
    llm: Any | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    async def close(self) -> None:
        if "graph" in self.extra:
            await self.extra["graph"].close()
        await self.store.close()
        await self.log.close()


class EmbedderMismatch(ValueError):
    """The data dir's vectors come from another embedding model than the one asked for."""


EMBEDDER_RECORD = "embedder.txt"


def settle_embedder(settings: Settings, *, reindex: bool = False, record: bool = True) -> Settings:
    """The embedder a data dir is indexed with is recorded there on first use; vectors of two models cannot
    be compared (MiniLM and e5-small even share a size, so nothing else would notice). Not asked for
    explicitly -> the recorded one is used; asked for and different -> :class:`EmbedderMismatch`, unless
    ``reindex`` (a replay rebuilding every vector), which records the new one. ``none`` (BM25 only) never
    conflicts and is never recorded over a model. ``record=False`` only checks (the CLI, before any work)."""
    path = settings.data_dir / EMBEDDER_RECORD
    recorded = path.read_text(encoding="utf-8").strip() if path.exists() else ""
    wanted = settings.embedder
    if recorded and recorded != wanted and not reindex:
        if "embedder" not in settings.model_fields_set:
            return settings.model_copy(update={"embedder": recorded})
        if wanted != "none" and recorded != "none":
            raise EmbedderMismatch(
                f"{settings.data_dir} is indexed with embedder {recorded!r}, this run asks for {wanted!r}: "
                f"use --embedder {recorded} (or MEMSTREAM_EMBEDDER={recorded}), or rebuild the index with "
                f"`memstream replay --embedder {wanted}`"
            )
    if record and wanted != "none" and (reindex or recorded in ("", "none")):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted + "\n", encoding="utf-8")
    return settings


async def build_clients(
    settings: Settings, *, embedder: Embedder | None | str = "settings", reindex: bool = False
) -> Clients:
    """Open every backend. ``embedder`` may be passed in to share one loaded model (tests, benchmarks);
    otherwise the settings' embedder, reconciled with the one the data dir is indexed with
    (:func:`settle_embedder`)."""
    if embedder == "settings":
        settings = settle_embedder(settings, reindex=reindex)
    emb = open_embedder(settings) if embedder == "settings" else embedder
    log = await open_log(settings)
    store = await open_store(settings, emb.dim if emb is not None else None)
    extra = {"graph": await open_graph(settings, emb.dim if emb is not None else None)}
    return Clients(settings=settings, log=log, store=store, embedder=emb, llm=open_llm(settings), extra=extra)
