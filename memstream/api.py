"""The HTTP API: a thin adapter over retrieval and the store. Clients are built once, in the lifespan.

Every endpoint but ``/healthz`` and the docs needs an API key once keys exist (``memstream keys create``):
``Depends(require_scope(...))`` from :mod:`memstream.auth` checks the scope and the ``{chat_id}`` path
parameter; chat ids in a body are checked with :func:`memstream.auth.authorize`. Store work runs on the
lanes of :mod:`memstream.serving` (``request.app.state.lanes``), never on this event loop; writes go to the
durable log and a background worker processes them. Errors: :mod:`memstream.api_guard`.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel

from memstream import api_guard
from memstream.api_ingest import IngestAccepted, IngestBatch, append_batch, claimed_chats, judge
from memstream.audit_log import AuditLog, AuditQuery, AuditWriter
from memstream.auth import AuthGate, Principal, authorize, require_scope
from memstream.clients import Clients
from memstream.resegment import list_versions
from memstream.serving import Busy, Lanes
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import ChatMessage, MemoryRecord, RetrieveRequest, RetrieveResponse, TopicSummary
from schemas.base import Id
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


class ReplyChain(BaseModel):
    chat_id: str
    message_id: str
    chain: list[ChatMessage]


def get_clients(request: Request) -> Clients:
    return request.app.state.clients


def get_metrics(request: Request) -> Metrics:
    return request.app.state.metrics


ClientsDep = Annotated[Clients, Depends(get_clients)]
ChatPath = Annotated[Id, Path(description="A chat id (no '/', 1-256 characters).")]
Reader = Annotated[Principal, Depends(require_scope("read"))]
Writer = Annotated[Principal, Depends(require_scope("write"))]


def get_lanes(request: Request) -> Lanes:
    return request.app.state.lanes


LanesDep = Annotated[Lanes, Depends(get_lanes)]


def create_app(
    settings: Settings | None = None, clients: Clients | None = None, *, embedder="settings"
) -> FastAPI:
    """Build the app. ``clients`` (or just a loaded ``embedder``) may be injected, e.g. by tests."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        from memstream.dirlock import processing_lock

        with processing_lock(settings.data_dir, "serve"):  # one processing process per data dir
            lanes = app.state.lanes = Lanes(settings, embedder, clients)
            await lanes.start()
            app.state.clients = lanes.clients
            app.state.metrics = Metrics()
            audit = app.state.audit = AuditWriter(await AuditLog(settings.data_dir / "access-log.db").open(),
                                                  settings.serve.audit_flush_s)
            audit.start()
            app.state.auth = await AuthGate(settings.data_dir, settings.serve.auth, audit).open()
            try:
                yield
            finally:
                await audit.stop()
                await audit.log.close()
                await app.state.auth.close()
                await lanes.stop()

    app = FastAPI(title="memstream", version="0.1.0", lifespan=lifespan,
                  description="Routed memory retrieval for chat bots. Every query is confined to one chat. "
                  "Send an API key as `Authorization: Bearer msk_…` (see `memstream keys`).")
    api_guard.install(app, settings.serve.max_body_bytes)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/metrics", response_class=PlainTextResponse,
             dependencies=[Depends(require_scope("admin", chat_param="-"))])
    async def metrics(m: Annotated[Metrics, Depends(get_metrics)], lanes: LanesDep) -> str:
        return m.render() + f"memstream_background_processed_total {lanes.drained}\n"

    @app.get("/v1/audit", dependencies=[Depends(require_scope("admin", chat_param="-"))])
    async def audit_log(request: Request, q: Annotated[AuditQuery, Query()]) -> list[dict]:
        """The access audit log, newest first (admin keys): who read, wrote, exported or deleted which chat."""
        return [e.model_dump(mode="json") for e in await request.app.state.audit.query(q)]

    async def run_retrieve(req: RetrieveRequest, c: Clients) -> RetrieveResponse:
        cfg = c.settings.retrieval
        if "mode" not in req.model_fields_set:  # routed is the default (better on LoCoMo at fewer tokens)
            req = req.model_copy(update={"mode": "routed"})
        return await retrieve(c.store, c.embedder, req, candidates=cfg.candidates, rrf_k=cfg.rrf_k,
                              llm=c.llm, graph=c.extra.get("graph"))

    @app.post("/v1/retrieve", response_model=RetrieveResponse)
    async def retrieve_endpoint(req: RetrieveRequest, request: Request, who: Reader, lanes: LanesDep,
                                m: Annotated[Metrics, Depends(get_metrics)]) -> RetrieveResponse:
        """Retrieve ranked memory items and a rendered, timestamped context for one chat.

        ``mode`` ``routed`` (the default) classifies the query (probabilities in ``strategy_probs``), runs its
        strategy and the abstention check; the trace shows each round's query and scores. ``hybrid``,
        ``bm25`` and ``embedding`` are the uniform searches."""
        authorize(request, who, "read", req.chat_id)
        t0 = time.perf_counter()
        resp = await lanes.reader().call(lambda c: run_retrieve(req, c))
        m.counters["retrieve"] += 1
        m.counters["retrieve_empty"] += int(resp.no_relevant_memory)
        m.latency_ms.append((time.perf_counter() - t0) * 1000)
        return resp

    @app.post("/v1/context", response_model=RetrieveResponse)
    async def context_endpoint(req: RetrieveRequest, request: Request, who: Reader, lanes: LanesDep,
                               m: Annotated[Metrics, Depends(get_metrics)]) -> RetrieveResponse:
        """The bot's context for a triggering message: its reply chain, its active topic, the asker's recent
        messages, then long-term memory, under ``token_budget``; ``layers`` says what each part is."""
        from retrieval.router.context import build_bot_context
        from retrieval.text import count_tokens

        authorize(request, who, "read", req.chat_id)
        t0 = time.perf_counter()
        resp = await lanes.reader().call(lambda c: build_bot_context(
            c.store, c.embedder, req, retrieve=lambda r: run_retrieve(r, c), count=count_tokens))
        m.counters["context"] += 1
        m.latency_ms.append((time.perf_counter() - t0) * 1000)
        return resp

    @app.post("/v1/messages", response_model=IngestAccepted, status_code=202,
              responses={422: {"description": "no message of the batch was valid (each is dead-lettered)"},
                         429: {"description": "too many messages waiting to be processed; retry later"}})
    async def post_messages(batch: IngestBatch, request: Request, who: Writer, lanes: LanesDep) -> IngestAccepted:
        """Append messages to the durable log; a background worker processes them (idempotent by chat id,
        message id and text). Each message gets its own result: ``accepted``, ``duplicate`` or
        ``dead_lettered`` with the reason (the others go on). ``wait`` (default true) answers once the batch
        is processed; ``"wait": false`` answers as soon as it is durable."""
        if len(batch.messages) > settings.serve.max_batch:
            raise HTTPException(413, f"at most {settings.serve.max_batch} messages per request")
        for chat_id in sorted(claimed_chats(batch.messages)):
            authorize(request, who, "write", chat_id, count=len(batch.messages))
        if await lanes.backlog() > settings.serve.max_backlog:
            raise Busy(f"more than {settings.serve.max_backlog} messages are waiting to be processed", 5)
        parsed = judge(batch.messages, lanes.clients.settings.sensitive)
        out = await lanes.ingest.call(lambda c: append_batch(c.log, batch, parsed))
        lanes.wake()
        if out.accepted == 0:
            raise HTTPException(422, [r.model_dump(exclude_none=True) for r in out.results[:10]])
        if batch.wait and lanes.embedded:
            out.processed = (await lanes.exclusive(lambda c: lanes.process_now())).processed
        return out

    @app.get("/v1/chats/{chat_id}/topics", response_model=list[TopicSummary])
    async def topics(chat_id: ChatPath, who: Reader, lanes: LanesDep, state: Annotated[
                         str | None, Query(pattern="^(active|closed|merged|superseded|rolled_back)$")] = None):
        """Working memory (state=active) and episodic memory (state=closed) of a chat. Topics replaced by a
        re-segmentation (superseded) or made by a rolled-back one are listed only when asked for by state."""
        items = await lanes.reader().call(lambda c: c.store.list_topics(chat_id))
        hidden = ("superseded", "rolled_back")
        return [t for t in items if t.state == state or (state is None and t.state not in hidden)]

    @app.get("/v1/chats/{chat_id}/segmentation", response_model=list[SegmentationVersion])
    async def segmentation(chat_id: ChatPath, who: Reader, lanes: LanesDep) -> list[SegmentationVersion]:
        """The chat's segmentation versions (1 = streaming; re-segmentations, rolled back or not)."""

        async def versions(c: Clients) -> list[SegmentationVersion]:
            ledger = await open_ledger(c.settings.data_dir)
            try:
                return await list_versions(c, ledger, chat_id)
            finally:
                await ledger.close()

        return await lanes.reader().call(versions)

    @app.get("/v1/chats/{chat_id}/messages/{message_id}/reply-chain", response_model=ReplyChain)
    async def reply_chain(chat_id: ChatPath, message_id: Annotated[Id, Path()], who: Reader, lanes: LanesDep,
                          depth: Annotated[int, Query(ge=1, le=50)] = 10) -> ReplyChain:
        """Immediate memory: the message and the chain of messages it replies to (oldest first)."""

        async def walk(c: Clients) -> list[ChatMessage]:
            chain: list[ChatMessage] = []
            current: str | None = message_id
            while current and len(chain) < depth:
                found = await c.store.get_messages(chat_id, [current])
                if not found:
                    break
                chain.append(found[0])
                current = found[0].parent_id  # explicit reply, else the segmenter's inferred one
            return chain

        chain = await lanes.reader().call(walk)
        if not chain:
            raise HTTPException(404, f"message {message_id[:100]!r} not found in chat {chat_id[:100]!r}")
        return ReplyChain(chat_id=chat_id, message_id=message_id, chain=list(reversed(chain)))

    @app.get("/v1/chats/{chat_id}/memories", response_model=list[MemoryRecord])
    async def memories(chat_id: ChatPath, who: Reader, lanes: LanesDep, include_superseded: bool = False):
        return await lanes.reader().call(lambda c: c.store.list_memories(chat_id, live_only=not include_superseded))

    async def deletion(request: Request, lanes: Lanes, chat_id: str, sender: str | None) -> dict[str, int]:
        from memstream.ops import delete_report

        report = await lanes.exclusive(lambda c: delete_report(c, chat_id, sender))  # between batches
        await request.app.state.audit.flush()  # a deletion is on record before it is acknowledged
        return {"deleted": report.removed, **report.as_dict()}

    @app.delete("/v1/chats/{chat_id}", dependencies=[Depends(require_scope("delete"))])
    async def delete_chat(chat_id: ChatPath, request: Request, lanes: LanesDep) -> dict[str, int]:
        """Delete everything of a chat, now and physically (ledgered: replay never restores it)."""
        return await deletion(request, lanes, chat_id, None)

    @app.delete("/v1/chats/{chat_id}/users/{sender}", dependencies=[Depends(require_scope("delete"))])
    async def delete_user(chat_id: ChatPath, sender: Annotated[Id, Path()], request: Request,
                          lanes: LanesDep) -> dict[str, int]:
        """Delete a user's messages in a chat and everything derived from them (summaries, titles, Q&A…
        that quote them), now and physically; topics keeping others' messages are distilled again."""
        return await deletion(request, lanes, chat_id, sender)

    @app.get("/v1/chats/{chat_id}/export", dependencies=[Depends(require_scope("read", "export"))])
    async def export(chat_id: ChatPath, request: Request, lanes: LanesDep) -> dict:
        """A chat's messages, memories (all versions) and topics (audited as an export)."""
        out = await lanes.reader().call(lambda c: c.store.export_chat(chat_id))
        await request.app.state.audit.flush()
        return out

    from memstream.ui.routes import build_router  # the inspector page at /ui

    app.include_router(build_router())
    return app
