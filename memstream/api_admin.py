"""Routes of the service itself: liveness, metrics and the access audit log (admin keys)."""

from __future__ import annotations

import os
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse

from memstream.api_deps import LanesDep, MetricsDep
from memstream.audit_log import AuditQuery
from memstream.auth import require_scope

router = APIRouter()
_ADMIN = [Depends(require_scope("admin", chat_param="-"))]


@router.get("/healthz")
async def healthz(lanes: LanesDep) -> dict[str, str | int | bool]:
    """Liveness, and which process answered (``serve --workers``: ``processing`` is the one running the
    pipeline; the others serve reads and append writes)."""
    return {"status": "ok", "pid": os.getpid(), "processing": lanes.leader}


@router.get("/metrics", response_class=PlainTextResponse, dependencies=_ADMIN)
async def metrics(m: MetricsDep, lanes: LanesDep) -> str:
    from memstream.metrics import pipeline_snapshot

    return m.render(await pipeline_snapshot(lanes))


@router.get("/v1/audit", dependencies=_ADMIN)
async def audit_log(request: Request, q: Annotated[AuditQuery, Query()]) -> list[dict]:
    """The access audit log, newest first (admin keys): who read, wrote, exported or deleted which chat."""
    return [e.model_dump(mode="json") for e in await request.app.state.audit.query(q)]
