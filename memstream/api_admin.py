"""Routes of the service itself: liveness, metrics and the access audit log (admin keys)."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import PlainTextResponse

from memstream.api_deps import LanesDep, MetricsDep
from memstream.audit_log import AuditQuery
from memstream.auth import require_scope

if TYPE_CHECKING:
    from memstream.metrics import Metrics
    from memstream.serving import Lanes

log = logging.getLogger(__name__)
router = APIRouter()
_ADMIN = [Depends(require_scope("admin", chat_param="-"))]


@router.get("/healthz")
async def healthz(request: Request, lanes: LanesDep) -> dict[str, str | int | bool]:
    """Liveness, which process answered (``serve --workers``: ``processing`` is the one running the pipeline;
    the others serve reads and append writes), and the server's state, the same whichever process answers:
    ``background_failing`` is the processing process's (its last background run failed; another process reads
    the figures it publishes every second), ``processes`` how many serve; ``status`` is ``degraded`` while the
    background fails (still 200: the process is alive). Nothing here waits for a lane."""
    from memstream.metrics_shared import merge

    failing, processes = lanes.last_error is not None, 1
    shared = getattr(request.app.state, "shared_metrics", None)
    if shared is not None:
        states = await asyncio.to_thread(shared.read_all)
        processes = max(1, len(states))
        _, pipeline = merge(states)
        if not lanes.leader and pipeline is not None:
            failing = pipeline.failing
    return {"status": "degraded" if failing else "ok", "pid": os.getpid(), "processing": lanes.leader,
            "background_failing": failing, "processes": processes}  # fmt: skip


@router.get("/metrics", response_class=PlainTextResponse, dependencies=_ADMIN)
async def metrics(request: Request, m: MetricsDep, lanes: LanesDep) -> str:
    """The Prometheus exposition; under ``serve --workers`` the whole server's, whichever process answers."""
    from memstream.metrics import pipeline_snapshot
    from memstream.metrics_shared import merge, processes_lines

    shared = getattr(request.app.state, "shared_metrics", None)
    if shared is None:
        return m.render(await pipeline_snapshot(lanes))
    await asyncio.to_thread(shared.write, await _own_state(m, lanes))
    states = await asyncio.to_thread(shared.read_all)
    merged, pipeline = merge(states)
    return merged.render(pipeline) + processes_lines(len(states))


async def _own_state(m: Metrics, lanes: Lanes) -> dict:
    from memstream.metrics import pipeline_snapshot
    from memstream.metrics_shared import state

    return state(m, await pipeline_snapshot(lanes), processing=lanes.leader)


async def publish_metrics(app: FastAPI) -> None:
    """``serve --workers``: write this process's figures for the others' scrapes, every ``INTERVAL_S``."""
    from memstream.metrics_shared import INTERVAL_S

    while True:
        try:
            await asyncio.to_thread(
                app.state.shared_metrics.write, await _own_state(app.state.metrics, app.state.lanes)
            )
        except Exception:  # a full disk or a lane closing: the next round tries again
            log.warning("writing this process's metrics failed", exc_info=True)
        await asyncio.sleep(INTERVAL_S)


@router.get("/v1/audit", dependencies=_ADMIN)
async def audit_log(request: Request, q: Annotated[AuditQuery, Query()]) -> list[dict]:
    """The access audit log, newest first (admin keys): who read, wrote, exported or deleted which chat."""
    return [e.model_dump(mode="json") for e in await request.app.state.audit.query(q)]
