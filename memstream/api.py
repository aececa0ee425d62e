"""The HTTP API: a thin adapter over retrieval and the store. Clients are built once, in the lifespan.

Every endpoint but ``/healthz`` and the docs needs an API key once keys exist (``memstream keys create``):
``Depends(require_scope(...))`` from :mod:`memstream.auth` checks the scope and the ``{chat_id}`` path
parameter; chat ids in a body are checked with :func:`memstream.auth.authorize`. Store work runs on the
lanes of :mod:`memstream.serving` (``request.app.state.lanes``), never on this event loop; writes go to the
durable log and the one background runner of the processor lane processes them. Routes: one ``APIRouter``
per resource (``api_admin``, ``api_retrieve``, ``api_messages``, ``api_chats``, ``api_privacy``); shared
dependencies in :mod:`memstream.api_deps`. Errors: :mod:`memstream.api_guard`.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager, nullcontext

from fastapi import FastAPI

from memstream import api_admin, api_chats, api_guard, api_messages, api_privacy, api_retrieve, served
from memstream.api_admin import publish_metrics
from memstream.api_deps import Metrics
from memstream.audit_log import AuditLog, AuditWriter
from memstream.auth import AuthGate
from memstream.clients import Clients
from memstream.metrics_shared import SharedMetrics
from memstream.serving import Lanes
from memstream.settings import Settings

ROUTERS = (api_admin.router, api_retrieve.router, api_messages.router, api_chats.router, api_privacy.router)


def create_app(
    settings: Settings | None = None, clients: Clients | None = None, *, embedder="settings", shared: bool = False,
    announce: tuple[str, int] | None = None, instance: str | None = None,
) -> FastAPI:
    """Build the app. ``clients`` (or just a loaded ``embedder``) may be injected, e.g. by tests. ``shared``:
    one of the processes of ``serve --workers`` (:mod:`memstream.serve_procs`); the one holding the
    processing lock processes, the others serve and append (see :mod:`memstream.serving`). ``announce``:
    the (host, port) it listens on, written in the data dir while it runs (:mod:`memstream.served`);
    ``instance``: the token its responses carry (one of an announced ``serve --workers``: the supervisor's)."""
    token = instance or (served.new_token() if announce else None)
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        from memstream.dirlock import processing_lock
        from memstream.ops import finish_deletions

        # one processing process per data dir; shared, the lanes take the lock if it is free
        with nullcontext() if shared else processing_lock(settings.data_dir, "serve"):
            lanes = app.state.lanes = Lanes(settings, embedder, clients, shared=shared)
            await lanes.start()
            if lanes.leader and lanes.embedded:  # a deletion a killed process left pending, before any request
                await lanes.exclusive(finish_deletions)
            app.state.clients = lanes.clients
            app.state.runner = lanes.runner  # the one pipeline runner (embedded log), guarded by lanes.work_lock
            app.state.metrics = Metrics()
            shared_metrics = app.state.shared_metrics = SharedMetrics(settings.data_dir) if shared else None
            publisher = asyncio.create_task(publish_metrics(app)) if shared_metrics else None
            audit = app.state.audit = AuditWriter(await AuditLog(settings.data_dir / "access-log.db").open(),
                                                  settings.serve.audit_flush_s)
            audit.start()
            app.state.auth = await AuthGate(settings.data_dir, settings.serve.auth, audit).open()
            told = served.announce(settings.data_dir, *announce, settings.embedder, token) if announce else nullcontext()
            try:
                with told:
                    yield
            finally:
                if publisher is not None:
                    publisher.cancel()
                    shared_metrics.remove()
                await audit.stop()
                await audit.log.close()
                await app.state.auth.close()
                await lanes.stop()

    app = FastAPI(title="memstream", version="0.1.0", lifespan=lifespan,
                  description="Routed memory retrieval for chat bots. Every query is confined to one chat. "
                  "Send an API key as `Authorization: Bearer msk_…` (see `memstream keys`).")
    api_guard.install(app, settings.serve.max_body_bytes)
    if token is not None:  # `memstream query` takes an answer only from the server its data dir announces
        app.add_middleware(served.InstanceHeader, token=token)
    for router in ROUTERS:  # one router per resource (memstream/api_*.py)
        app.include_router(router)

    from memstream.ui.routes import build_router  # the inspector page at /ui

    app.include_router(build_router())
    return app
