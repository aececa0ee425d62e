"""The inspector's routes, mounted by the API at ``/ui``: a static page and the HTML fragments it loads.

The page itself (``GET /ui``) holds no data; every fragment is read with the caller's API key (the page sends
it as ``Authorization: Bearer …``) and checked like the JSON API: ``read`` on the ``{chat_id}`` of the path,
and the chat list shows only the chats the key reaches. Store work runs on the API's reader lanes. The
handlers only read, call the pure views (:mod:`memstream.ui.views`) and render (:mod:`memstream.ui.html`).
"""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field

from memstream.auth import Principal, require_scope
from memstream.clients import Clients
from memstream.ui import html, views
from retrieval.protocols import SearchQuery
from schemas import RetrieveRequest, RetrieveResponse
from schemas.base import Id

STATIC = {"inspector.js": "text/javascript", "inspector.css": "text/css", "index.html": "text/html"}
RANK_DEPTH = 100  # how deep the single-signal lists are read for the per-list ranks

Reader = Annotated[Principal, Depends(require_scope("read"))]


class Query(BaseModel):
    query: str = Field(min_length=1, max_length=4000)
    mode: Literal["routed", "hybrid", "bm25", "embedding"] = "routed"
    k: int = Field(default=8, ge=1, le=50)
    token_budget: int = Field(default=1500, ge=50, le=32000)


async def on_reader(request: Request, fn) -> Any:
    """Run ``fn(clients)`` on one of the API's reader lanes (never on the HTTP event loop)."""
    return await request.app.state.lanes.reader().call(fn)


def _static(name: str) -> Response:
    body = (resources.files("memstream.ui") / "static" / name).read_bytes()
    return Response(body, media_type=STATIC[name], headers={"Cache-Control": "no-cache"})


async def _timeline(c: Clients, chat_id: str) -> str:
    from memstream.resegment import list_versions
    from streams.segmentation_ledger import open_ledger

    ledger = await open_ledger(c.settings.data_dir)
    try:
        versions = await list_versions(c, ledger, chat_id)
    finally:
        await ledger.close()
    messages = await c.store.list_messages(chat_id)
    topics = await c.store.list_topics(chat_id)
    titles = views.topic_titles(await c.store.list_memories(chat_id, live_only=False))
    return html.timeline_html(views.timeline(messages, topics, versions, titles))


async def _memories(c: Clients, chat_id: str) -> str:
    records = await c.store.list_memories(chat_id, live_only=False)
    messages = {m.message_id: m for m in await c.store.list_messages(chat_id)}
    return html.memories_html(views.memory_chains(records), messages)


async def _graph(c: Clients, chat_id: str, entity: str | None) -> str:
    graph = c.graph
    if graph is None:
        return html.graph_html(chat_id, [], None)
    entities = await graph.entities(chat_id)
    centre = next((n for n in entities if n.entity_id == entity), None)
    if centre is None:
        centre = views.busiest(entities, await graph.edges(chat_id, include_invalid=True))
    if centre is None:
        return html.graph_html(chat_id, [], None)
    sub = await graph.subgraph(chat_id, [centre.entity_id], hops=1, include_invalid=True)
    return html.graph_html(chat_id, entities, views.graph_layout(centre, sub.nodes, sub.edges))


async def _answer(c: Clients, chat_id: str, q: Query) -> tuple[RetrieveResponse, dict[str, list[str]], dict]:
    """The routed answer as the API gives it, and the BM25 / kNN lists of the same query for the ranks."""
    from memstream.clients import served_router
    from retrieval.service import retrieve

    cfg = c.settings.retrieval
    req = RetrieveRequest(chat_id=chat_id, query=q.query, k=q.k, mode=q.mode, token_budget=q.token_budget)
    resp = await retrieve(c.store, c.embedder, req, candidates=cfg.candidates, rrf_k=cfg.rrf_k, llm=c.llm,
                          graph=c.graph, router=served_router(cfg))  # fmt: skip
    base = SearchQuery(chat_id=chat_id, text=q.query, k=RANK_DEPTH, candidates=RANK_DEPTH, include_superseded=True)
    lists = {"bm25": [h.doc.doc_id for h in await c.store.search(base.model_copy(update={"mode": "bm25"}))]}
    if c.embedder is not None:
        vector = (await c.embedder.embed([q.query], is_query=True))[0].tolist()
        knn = await c.store.search(base.model_copy(update={"mode": "knn", "vector": vector}))
        lists["knn"] = [h.doc.doc_id for h in knn]
    cited = {s for it in resp.items for s in it.source_message_ids}
    messages = {m.message_id: m for m in await c.store.get_messages(chat_id, sorted(cited))}
    return resp, lists, messages


def build_router() -> APIRouter:
    router = APIRouter(prefix="/ui", include_in_schema=False)

    @router.get("", response_class=HTMLResponse)
    @router.get("/", response_class=HTMLResponse)
    async def page() -> Response:
        """The inspector page: no data in it; its script loads the fragments below with the API key."""
        return _static("index.html")

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        if name not in STATIC:
            raise HTTPException(404, "no such file")
        return _static(name)

    @router.get("/chats", response_class=HTMLResponse)
    async def chats(request: Request, who: Reader, selected: str | None = None) -> str:
        """The chats this key may read, as <option>s."""
        every = await on_reader(request, lambda c: c.store.chats())
        return html.chat_list(who.visible(sorted(every)), selected)

    @router.get("/chats/{chat_id}/timeline", response_class=HTMLResponse)
    async def timeline(chat_id: Id, request: Request, who: Reader) -> str:
        return await on_reader(request, lambda c: _timeline(c, chat_id))

    @router.get("/chats/{chat_id}/memories", response_class=HTMLResponse)
    async def memories(chat_id: Id, request: Request, who: Reader) -> str:
        return await on_reader(request, lambda c: _memories(c, chat_id))

    @router.get("/chats/{chat_id}/graph", response_class=HTMLResponse)
    async def graph(chat_id: Id, request: Request, who: Reader, entity: str | None = None) -> str:
        return await on_reader(request, lambda c: _graph(c, chat_id, entity))

    @router.post("/chats/{chat_id}/query", response_class=HTMLResponse)
    async def query(chat_id: Id, q: Query, request: Request, who: Reader) -> str:
        """The routed answer with its trace: type probabilities, strategies, per-list ranks, abstention, the
        rendered context and its token count."""
        resp, lists, messages = await on_reader(request, lambda c: _answer(c, chat_id, q))
        return html.trace_html(resp, views.list_ranks(resp.items, lists), messages)

    return router
