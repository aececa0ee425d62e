"""What the API's routers share: the app-state handles they depend on (lanes, metrics), the path and
principal types, and the retrieval call itself. Everything here is built once, in the app's lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from memstream.auth import Principal, require_scope
from memstream.clients import Clients, retrieve_as_served
from memstream.metrics import Metrics
from memstream.serving import Lanes
from schemas import RetrieveRequest, RetrieveResponse
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


async def run_retrieve(req: RetrieveRequest, c: Clients) -> RetrieveResponse:
    """One retrieval with the clients of the lane it runs on (:func:`memstream.clients.retrieve_as_served`, as
    ``memstream query`` runs it in its own process)."""
    return await retrieve_as_served(c, req)
