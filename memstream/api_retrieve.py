"""Routes that read memory for a bot: ``/v1/retrieve`` (ranked items and a rendered context) and
``/v1/context`` (the layered context of a triggering message). Both run on a reader lane."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request

from memstream.api_deps import LanesDep, MetricsDep, Reader
from memstream.auth import authorize
from memstream.clients import retrieve_as_served
from schemas import RetrieveRequest, RetrieveResponse

router = APIRouter()


@router.post("/v1/retrieve", response_model=RetrieveResponse)
async def retrieve_endpoint(req: RetrieveRequest, request: Request, who: Reader, lanes: LanesDep,
                            m: MetricsDep) -> RetrieveResponse:  # fmt: skip
    """Retrieve ranked memory items and a rendered, timestamped context for one chat.

    ``mode`` ``routed`` (the default) classifies the query (probabilities in ``strategy_probs``), runs its
    strategy and the abstention check; the trace shows each round's query and scores. ``hybrid``,
    ``bm25`` and ``embedding`` are the uniform searches."""
    authorize(request, who, "read", req.chat_id)
    t0 = time.perf_counter()
    resp = await lanes.reader().call(lambda c: retrieve_as_served(c, req))
    m.counters["retrieve"] += 1
    m.counters["retrieve_empty"] += int(resp.no_relevant_memory)
    m.latency_ms.append((time.perf_counter() - t0) * 1000)
    return resp


@router.post("/v1/context", response_model=RetrieveResponse)
async def context_endpoint(req: RetrieveRequest, request: Request, who: Reader, lanes: LanesDep,
                           m: MetricsDep) -> RetrieveResponse:  # fmt: skip
    """The bot's context for a triggering message: its reply chain, its active topic, the asker's recent
    messages, then long-term memory, under ``token_budget``; ``layers`` says what each part is."""
    from language.text import count_tokens
    from retrieval.router.context import build_bot_context

    authorize(request, who, "read", req.chat_id)
    t0 = time.perf_counter()
    resp = await lanes.reader().call(lambda c: build_bot_context(
        c.store, c.embedder, req, retrieve=lambda r: retrieve_as_served(c, r), count=count_tokens))  # fmt: skip
    m.counters["context"] += 1
    m.latency_ms.append((time.perf_counter() - t0) * 1000)
    return resp
