"""The runtime's settings: what the stages of one pipeline read (the pure cores' configs plus the sensitive-
information policy) and how a Faust worker batches. ``memstream.settings.Settings`` composes them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.config import AuditConfig, ConsolidatorConfig, DistillerConfig, GraphMemoryConfig, SegmenterConfig
from streams.sensitive import SensitivePolicy

__all__ = ["PipelineConfig"]


class PipelineConfig(BaseModel):
    """The configs the stages of :func:`streams.stages.build_stages` read (one object, passed in)."""

    model_config = ConfigDict(frozen=True)

    segmenter: SegmenterConfig = Field(default_factory=SegmenterConfig)
    distiller: DistillerConfig = Field(default_factory=DistillerConfig)
    consolidator: ConsolidatorConfig = Field(default_factory=ConsolidatorConfig)
    graph: GraphMemoryConfig = Field(default_factory=GraphMemoryConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    sensitive: SensitivePolicy = Field(default_factory=SensitivePolicy)
    # a Q&A pair's, summary's or title's vector: the mean of its source turns' vectors ("sources") or its
    # own text embedded ("text"); see streams/stages/vectors.py
    derived_vectors: Literal["sources", "text"] = "sources"
    # the embedded runner's log: derived records kept per topic once every stage has read them
    # (EmbeddedRunner.prune_consumed; the oldest go first, raw messages are all kept)
    log_keep_derived: int = Field(default=1_000, ge=0)
