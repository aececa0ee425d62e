"""The stage adapters, the one stage list both runtimes run (the embedded runner and the Faust worker) and the
one schedule they take distillation results through (:mod:`streams.stages.pipeline`).

A stage decodes its topic's records, reads what the pure core needs from the clients, calls the core and
returns what to persist and emit (:class:`~streams.stages.io.StageOutput`); it never reads or commits
offsets itself. :func:`build_stages` is the only place stages are built, so a stage added here runs in
both modes.
"""

from __future__ import annotations

from streams.stages.io import StageOutput
from streams.stages.pipeline import Consolidated, ResultJournal, Stages, build_stages

__all__ = ["Consolidated", "ResultJournal", "StageOutput", "Stages", "build_stages"]
