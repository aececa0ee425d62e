"""The HTTP API: a thin adapter over retrieval and the store. Clients are built once, in the lifespan."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field

from memstream.clients import Clients, build_clients
from memstream.resegment import list_versions
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import ChatMessage, MemoryRecord, RetrieveRequest, RetrieveResponse, TopicSummary
from schemas.segmentation import SegmentationVersion
from streams.segmentation_ledger import open_ledger


class Metrics:
    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.latency_ms: list[float] = []

    def render(self) -> str:
        lines = [f"memstream_{k}_total {v}" for k, v in sorted(self.counters.items())]
        if self.latency_ms:
            lat = sorted(self.latency_ms[-1000:])
            for q in (0.5, 0.95, 0.99):
                lines.append(f'memstream_retrieve_latency_ms{{quantile="{q}"}} {lat[int(q * (len(lat) - 1))]:.3f}')
        return "\n".join(lines) + "\n"


class IngestBatch(BaseModel):
    messages: list[ChatMessage] = Field(min_length=1, max_length=5000)
    flush: bool = False


class IngestAccepted(BaseModel):
    accepted: int
    new: int
    processed: dict[str, int]


class ReplyChain(BaseModel):
    chat_id: str
    message_id: str
    chain: list[ChatMessage]


def get_clients(request: Request) -> Clients:
    return request.app.state.clients


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


ClientsDep = Annotated[Clients, Depends(get_clients)]


def create_app(
    settings: Settings | None = None, clients: Clients | None = None, *, embedder="settings"
) -> FastAPI:
    """Build the app. ``clients`` (or just a loaded ``embedder``) may be injected, e.g. by tests."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.clients = clients or await build_clients(settings, embedder=embedder)
        app.state.metrics = Metrics()
        app.state.ingest_lock = asyncio.Lock()
        app.state.segmentation_ledger = await open_ledger(app.state.clients.settings.data_dir)
        if app.state.clients.embedder is not None:  # load the model now, not on the first user's query
            await app.state.clients.embedder.embed(["warm-up"], is_query=True)
        yield
        await app.state.segmentation_ledger.close()
        if clients is None:
            await app.state.clients.close()

    app = FastAPI(title="memstream", version="0.1.0", lifespan=lifespan,
                  description="Routed memory retrieval for chat bots. Every query is confined to one chat.")

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics(m: Annotated[Metrics, Depends(get_metrics)]) -> str:
        return m.render()

    async def run_retrieve(req: RetrieveRequest, c: Clients) -> RetrieveResponse:
        cfg = c.settings.retrieval
        if "mode" not in req.model_fields_set:  # routed is the default (better on LoCoMo at fewer tokens)
            req = req.model_copy(update={"mode": "routed"})
        return await retrieve(c.store, c.embedder, req, candidates=cfg.candidates, rrf_k=cfg.rrf_k,
                              llm=c.llm, graph=c.extra.get("graph"))

    @app.post("/v1/retrieve", response_model=RetrieveResponse)
    async def retrieve_endpoint(req: RetrieveRequest, c: ClientsDep,
                                m: Annotated[Metrics, Depends(get_metrics)]) -> RetrieveResponse:
        """Retrieve ranked memory items and a rendered, timestamped context for one chat.

        ``mode`` ``routed`` (the default) classifies the query (probabilities in ``strategy_probs``), runs its
        strategy and the abstention check; the trace shows each round's query and scores. ``hybrid``,
        ``bm25`` and ``embedding`` are the uniform searches."""
        t0 = time.perf_counter()
        resp = await run_retrieve(req, c)
        m.counters["retrieve"] += 1
        m.counters["retrieve_empty"] += int(resp.no_relevant_memory)
        m.latency_ms.append((time.perf_counter() - t0) * 1000)
        return resp

    @app.post("/v1/context", response_model=RetrieveResponse)
    async def context_endpoint(req: RetrieveRequest, c: ClientsDep,
                               m: Annotated[Metrics, Depends(get_metrics)]) -> RetrieveResponse:
        """The bot's context for a triggering message: its reply chain, its active topic, the asker's recent
        messages, then long-term memory, under ``token_budget``; ``layers`` says what each part is."""
        from retrieval.router.context import build_bot_context
        from retrieval.text import count_tokens

        t0 = time.perf_counter()
        resp = await build_bot_context(c.store, c.embedder, req, retrieve=lambda r: run_retrieve(r, c),
                                       count=count_tokens)
        m.counters["context"] += 1
        m.latency_ms.append((time.perf_counter() - t0) * 1000)
        return resp

    @app.post("/v1/messages", response_model=IngestAccepted, status_code=202)
    async def post_messages(batch: IngestBatch, request: Request, c: ClientsDep) -> IngestAccepted:
        """Append messages to the raw stream and process them (idempotent by chat id + message id)."""
        from memstream.formats import Parsed
        from memstream.ops import IngestReport, to_records
        from streams.log import FileLog
        from streams.runner import EmbeddedRunner

        report = IngestReport()
        parsed = [Parsed(message=msg) for msg in batch.messages]
        records = list(to_records(parsed, report, flush=batch.flush, source="api"))
        if not isinstance(c.log, FileLog):  # production: the Faust workers consume the raw topic
            return IngestAccepted(accepted=len(batch.messages), new=await c.log.append(records), processed={})
        async with request.app.state.ingest_lock:
            runner = EmbeddedRunner(c)
            new = await runner.produce(records)
            stats = await runner.run_until_idle()
        return IngestAccepted(accepted=len(batch.messages), new=new, processed=stats.processed)

    @app.get("/v1/chats/{chat_id}/topics", response_model=list[TopicSummary])
    async def topics(chat_id: str, c: ClientsDep, state: Annotated[
                         str | None, Query(pattern="^(active|closed|merged|superseded|rolled_back)$")] = None):
        """Working memory (state=active) and episodic memory (state=closed) of a chat. Topics replaced by a
        re-segmentation (superseded) or made by a rolled-back one are listed only when asked for by state."""
        items = await c.store.list_topics(chat_id)
        hidden = ("superseded", "rolled_back")
        return [t for t in items if t.state == state or (state is None and t.state not in hidden)]

    @app.get("/v1/chats/{chat_id}/segmentation", response_model=list[SegmentationVersion])
    async def segmentation(chat_id: str, c: ClientsDep, request: Request) -> list[SegmentationVersion]:
        """The chat's segmentation versions (1 = streaming; re-segmentations, rolled back or not)."""
        return await list_versions(c, request.app.state.segmentation_ledger, chat_id)

    @app.get("/v1/chats/{chat_id}/messages/{message_id}/reply-chain", response_model=ReplyChain)
    async def reply_chain(chat_id: str, message_id: str, c: ClientsDep,
                          depth: Annotated[int, Query(ge=1, le=50)] = 10) -> ReplyChain:
        """Immediate memory: the message and the chain of messages it replies to (oldest first)."""
        chain: list[ChatMessage] = []
        current: str | None = message_id
        while current and len(chain) < depth:
            found = await c.store.get_messages(chat_id, [current])
            if not found:
                break
            chain.append(found[0])
            current = found[0].parent_id  # explicit reply, else the segmenter's inferred one
        if not chain:
            raise HTTPException(404, f"message {message_id!r} not found in chat {chat_id!r}")
        return ReplyChain(chat_id=chat_id, message_id=message_id, chain=list(reversed(chain)))

    @app.get("/v1/chats/{chat_id}/memories", response_model=list[MemoryRecord])
    async def memories(chat_id: str, c: ClientsDep, include_superseded: bool = False):
        return await c.store.list_memories(chat_id, live_only=not include_superseded)

    @app.delete("/v1/chats/{chat_id}")
    async def delete_chat(chat_id: str, request: Request, c: ClientsDep) -> dict[str, int]:
        """Delete everything of a chat, now and physically (ledgered: replay never restores it)."""
        from memstream.ops import delete_report

        async with request.app.state.ingest_lock:  # never between an ingest's batches
            report = await delete_report(c, chat_id, None)
        return {"deleted": report.removed, **report.as_dict()}

    @app.delete("/v1/chats/{chat_id}/users/{sender}")
    async def delete_user(chat_id: str, sender: str, request: Request, c: ClientsDep) -> dict[str, int]:
        """Delete a user's messages in a chat and everything derived from them (summaries, titles, Q&A…
        that quote them), now and physically; topics keeping others' messages are distilled again."""
        from memstream.ops import delete_report

        async with request.app.state.ingest_lock:
            report = await delete_report(c, chat_id, sender)
        return {"deleted": report.removed, **report.as_dict()}

    @app.get("/v1/chats/{chat_id}/export")
    async def export(chat_id: str, c: ClientsDep) -> dict:
        return await c.store.export_chat(chat_id)

    return app
