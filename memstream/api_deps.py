"""What the API's routers share: the app-state handles they depend on (lanes, metrics), the path and
principal types (the retrieval call is memstream.clients.retrieve_as_served). Everything here is built once,
in the app's lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from memstream.auth import Principal, require_scope
from memstream.metrics import Metrics
from memstream.serving import Lanes
from schemas.base import Id


async def get_lanes(request: Request) -> Lanes:  # async: a sync dependency costs a threadpool hop per request
    return request.app.state.lanes


async def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


LanesDep = Annotated[Lanes, Depends(get_lanes)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ChatPath = Annotated[Id, Path(description="A chat id (no '/', 1-256 characters).")]
Reader = Annotated[Principal, Depends(require_scope("read"))]
Writer = Annotated[Principal, Depends(require_scope("write"))]
