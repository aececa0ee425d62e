"""What stands between the network and the API's handlers: a body size limit, error bodies that never echo
the input (and cannot fail to render), 429 with Retry-After for a request its lane would keep waiting too
long or a full backlog (:class:`memstream.lane_queue.Busy`), and no exception ever escaping as a broken
connection. ``install(app, max_body_bytes)`` wires it all.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from memstream.api_errors import plain
from memstream.lane_queue import Busy

log = logging.getLogger("memstream.api")

MAX_ERRORS = 10
MAX_TEXT = 300


def safe_text(value: Any, limit: int = MAX_TEXT) -> str:
    """Any value as short, valid UTF-8 text (lone surrogates replaced, long values cut)."""
    text = value if isinstance(value, str) else str(value)
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pydantic/FastAPI errors without their ``input``/``ctx``: location, message, type only, at most ten."""
    out = []
    for err in errors[:MAX_ERRORS]:
        loc = [p if isinstance(p, int) else safe_text(p, 80) for p in err.get("loc", ())]
        out.append({"loc": loc, "msg": safe_text(plain(err)), "type": safe_text(err.get("type", ""), 60)})
    if len(errors) > MAX_ERRORS:
        out.append({"loc": [], "msg": f"… and {len(errors) - MAX_ERRORS} more errors", "type": "truncated"})
    return out


def error_response(status: int, detail: Any, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps({"detail": detail}, ensure_ascii=False, allow_nan=False)
    return Response(body.encode("utf-8"), status_code=status, headers=headers, media_type="application/json")


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets 413 (by Content-Length at once, else while
    it streams in) and is never buffered beyond the limit; an exception escaping the app (a bug, not the
    client's fault) is logged and answered with a 500 body, so the connection stays usable. Plain ASGI, no
    per-request task group (Starlette's ``BaseHTTPMiddleware`` cost ~1 ms of CPU a request)."""

    def __init__(self, app, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await self._too_large(scope, receive, send)
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                return await self._too_large(scope, receive, send)
            chunks.append(chunk)
            more = message.get("more_body", False)
        body, sent = b"".join(chunks), False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, replay, tracked)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), safe_text(scope.get("path", ""), 200))
            if not started:
                await error_response(500, "internal error (logged on the server)")(scope, replay, send)

    async def _too_large(self, scope, receive, send):
        resp = error_response(413, f"request body larger than {self.limit} bytes", {"connection": "close"})
        await resp(scope, receive, send)


def install(app: FastAPI, max_body_bytes: int) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        return error_response(422, describe_errors(list(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, list) else safe_text(exc.detail)
        return error_response(exc.status_code, detail, getattr(exc, "headers", None))

    @app.exception_handler(Busy)
    async def busy(request: Request, exc: Busy):
        # 429 for a full lane; a subclass may say otherwise (a chat whose deletion is in progress: 503)
        status = getattr(exc, "status", 429)
        metrics = getattr(request.app.state, "metrics", None)
        if metrics is not None:  # shedding is visible to whoever watches the server, not only to the refused
            metrics.counters["shed" if status == 429 else "deletion_pending"] += 1
        return error_response(status, safe_text(exc), {"Retry-After": str(exc.retry_after)})

    app.add_middleware(BodyLimit, limit=max_body_bytes)
