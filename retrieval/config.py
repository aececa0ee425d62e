"""Settings of the retrieval layer's backends and search: plain frozen models (``Settings`` composes them:
``MEMSTREAM_LLM__*``, ``MEMSTREAM_RETRIEVAL__*``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from schemas.query_types import QueryType

__all__ = ["LLMConfig", "RetrievalConfig"]


class LLMConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    base_url: str | None = None
    api_key: SecretStr = SecretStr("not-needed")
    model: str = "gpt-4o-mini"
    timeout_s: float = 30.0
    max_retries: int = 2
    backoff_s: float = 0.5  # first retry delay; doubles per retry
    backoff_max_s: float = 8.0
    max_tokens: int = 4096
    temperature: float = 0.0

    @property
    def enabled(self) -> bool:
        return bool(self.base_url)


class RetrievalConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    k: int = 10
    # Fuse the top-20 of each list with a small RRF constant: deep ranks of two weak lists must not outvote
    # the head of a strong one (measured on LoCoMo dev: rrf_k 60 / 50 candidates fell below BM25 alone).
    candidates: int = 20
    rrf_k: int = 10
    token_budget: int = 1500
    include_turns: bool = True
    include_memories: bool = True
    # read-time supersession (retrieval.router.supersede): "auto" (the packaged weights; default), "off" or a
    # weights file (MEMSTREAM_RETRIEVAL__SUPERSESSION, for serve, query and the benches)
    supersession: str = "auto"
    # query types whose answer gets the graph's "related" layer (one-hop facts of the answer's entities,
    # retrieval.graph_expand), e.g. ["multi_hop"]; none by default: on LoCoMo it added tokens and took budget
    # from the direct items without finding evidence they missed (docs/BENCHMARKS.md, LoCoMo)
    related_layer: list[QueryType] = Field(default_factory=list)
