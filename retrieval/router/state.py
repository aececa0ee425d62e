"""The mutable state of one routed request (:class:`Run`), shared by the pipeline's stages."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from retrieval.router.candidates import Cand, Pool
from retrieval.router.query import QueryAnalysis, analyse
from retrieval.router.recipes import RouterConfig
from schemas import RetrieveRequest, TraceStep


@dataclass
class Run:
    """Mutable state of one routed request."""

    req: RetrieveRequest
    cfg: RouterConfig
    now: datetime
    pool: Pool = field(default_factory=Pool)
    participants: list[str] = field(default_factory=list)
    latest: datetime | None = None  # the chat's last activity (its topics'): the year of "March 4"
    about: str = ""  # the question with the asker's "I" read as their name: for slots and abstention only
    asker_name: str | None = None
    confidence: float = 1.0
    vectors: dict[str, list[float]] = field(default_factory=dict)
    stored_vectors: dict[str, Any] = field(default_factory=dict)  # message id -> its stored vector (None: none)
    trace: list[TraceStep] = field(default_factory=list)
    slot_answers: list[str] = field(default_factory=list)  # memory ids of the live values of an asked slot
    profile: list[Cand] = field(default_factory=list)  # a set question's profile items (shown first)
    analyses: dict[tuple, QueryAnalysis] = field(default_factory=dict)

    def step(self, name: str, t0: float, **detail: Any) -> None:
        self.trace.append(TraceStep(step=name, detail=detail, ms=round((time.perf_counter() - t0) * 1000, 3)))

    def analyse(self, participants: list[str], latest: datetime | None) -> QueryAnalysis:
        """:func:`analyse` of the question, once per distinct (participants, latest): the pipeline asks before
        the main search with the topics' participants and after it with the pool's, most often the same."""
        key = (tuple(participants), latest)
        if (qa := self.analyses.get(key)) is None:
            qa = self.analyses[key] = analyse(self.req.query, participants, self.now, latest)
        return qa
