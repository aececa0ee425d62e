"""The stage adapters and the one stage list both runtimes run (the embedded runner and the Faust worker).

A stage decodes its topic's records, reads what the pure core needs from the clients, calls the core and
returns what to persist and emit (:class:`~streams.stages.io.StageOutput`); it never reads or commits
offsets itself. :func:`build_stages` is the only place stages are built, so a stage added here runs in
both modes.
"""

from __future__ import annotations

from dataclasses import dataclass

from streams.clients import Clients
from streams.config import PipelineConfig
from streams.stages.consolidate import ConsolidateStage
from streams.stages.distill import DistillStage
from streams.stages.graph import GraphStage
from streams.stages.index import IndexStage
from streams.stages.io import StageOutput
from streams.stages.segment import SegmentStage

__all__ = ["Stages", "StageOutput", "build_stages"]


@dataclass
class Stages:
    segment: SegmentStage
    distill: DistillStage
    consolidate: ConsolidateStage
    index: IndexStage
    graph: GraphStage | None  # when the clients have a graph store

    def all(self) -> list[SegmentStage | DistillStage | ConsolidateStage | IndexStage | GraphStage]:
        """Every stage, in pipeline order."""
        return [
            self.segment,
            self.distill,
            *([self.graph] if self.graph else []),
            self.consolidate,
            self.index,
        ]


def build_stages(clients: Clients, cfg: PipelineConfig) -> Stages:
    """The pipeline's stages over ``clients``, configured by ``cfg``."""
    return Stages(
        segment=SegmentStage(clients, cfg.segmenter, cfg.audit, cfg.sensitive),
        distill=DistillStage(clients, cfg.distiller),
        consolidate=ConsolidateStage(clients, cfg.consolidator, cfg.derived_vectors),
        index=IndexStage(clients, cfg.derived_vectors),
        graph=GraphStage(clients, clients.graph, cfg.graph)
        if clients.graph is not None
        else None,
    )
