"""API-key authentication and per-chat authorisation for the HTTP API (and any router mounted on it).

Keys are made with ``memstream keys create`` (see :mod:`memstream.keys`); a request carries one as
``Authorization: Bearer msk_…`` or ``X-API-Key: msk_…``. With ``serve.auth = auto`` (the default) keys are
enforced as soon as one exists; before that the API is open (it binds 127.0.0.1 unless told otherwise, and
``serve --host`` on another address refuses to start without keys unless ``--allow-no-keys``).

How a router uses it::

    from memstream.auth import Principal, authorize, require_scope

    @router.get("/v1/chats/{chat_id}/things")           # a {chat_id} path parameter is checked for you
    async def things(chat_id: str, who: Principal = Depends(require_scope("read"))): ...

    @router.post("/v1/search")                          # a chat id from the body: check it yourself
    async def search(body: Body, request: Request, who: Principal = Depends(require_scope("read"))):
        authorize(request, who, "read", body.chat_id)   # 403 unless the key reaches that chat

    @router.get("/v1/chats")                            # listing chats: show only what the key reaches
    async def chats(who: Principal = Depends(require_scope("read"))): return who.visible(all_chat_ids)

No key -> 401; a key without the scope, or for another chat -> 403 (the body never says whether the chat
exists). Every decision is written to the access audit log (:mod:`memstream.audit_log`): key id, action,
chat, endpoint, allowed/denied.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from fastapi import HTTPException, Request

from memstream.audit_log import Action, AuditEntry, AuditWriter
from memstream.keys import ANONYMOUS, KeyStore, Principal, Scope, check

__all__ = ["AuthGate", "Principal", "authorize", "require_scope"]


class AuthGate:
    """The API's view of the key store: active keys cached for ``ttl`` seconds (a revocation takes effect
    within that), refreshed in a worker thread."""

    def __init__(self, data_dir: Path, mode: str = "auto", audit: AuditWriter | None = None, ttl: float = 1.0):
        self.store = KeyStore(Path(data_dir) / "keys.db")
        self.mode = mode
        self.audit = audit
        self.ttl = ttl
        self._active: dict[str, tuple[str, Principal]] = {}
        self._loaded_at = float("-inf")
        self._lock = asyncio.Lock()

    async def open(self) -> AuthGate:
        await self.store.open()
        await self.refresh(force=True)
        return self

    async def close(self) -> None:
        await self.store.close()

    async def refresh(self, *, force: bool = False) -> None:
        if not force and time.monotonic() - self._loaded_at < self.ttl:
            return
        async with self._lock:
            if force or time.monotonic() - self._loaded_at >= self.ttl:
                self._active = await asyncio.to_thread(self.store.active)
                self._loaded_at = time.monotonic()

    @property
    def enforced(self) -> bool:
        return self.mode == "required" or (self.mode == "auto" and bool(self._active))

    async def principal(self, request: Request) -> Principal:
        await self.refresh()
        if not self.enforced:
            return ANONYMOUS
        token = request.headers.get("x-api-key") or ""
        auth = request.headers.get("authorization") or ""
        if not token and auth[:7].lower() == "bearer ":
            token = auth[7:]
        who = check(token, self._active) if token else None
        if who is None:
            self.record(request, "anonymous" if not token else "invalid", "read", None, "denied")
            raise HTTPException(401, "missing or invalid API key (Authorization: Bearer msk_…)",
                                headers={"WWW-Authenticate": "Bearer"})
        return who

    def record(self, request: Request, key_id: str, action: Action, chat_id: str | None, outcome: str,
               **detail: int | str) -> None:
        if self.audit is not None:
            self.audit.record(AuditEntry(key_id=key_id, action=action, chat_id=chat_id, outcome=outcome,  # type: ignore[arg-type]
                                         endpoint=f"{request.method} {_route(request)}", detail=detail))


def _route(request: Request) -> str:
    route = request.scope.get("route")
    return getattr(route, "path", None) or request.url.path[:200]


def authorize(request: Request, who: Principal, scope: Scope, chat_id: str | None,
              action: Action | None = None, **detail: int | str) -> Principal:
    """403 unless ``who`` has ``scope`` on ``chat_id``; the decision goes to the audit log either way."""
    gate: AuthGate = request.app.state.auth
    allowed = who.may(scope, chat_id)
    gate.record(request, who.key_id, action or scope, chat_id, "allowed" if allowed else "denied", **detail)
    if not allowed:
        what = f"chat {chat_id!r}" if chat_id is not None and who.has(scope) else f"the {scope!r} scope"
        raise HTTPException(403, f"this API key has no access to {what[:300]}")
    return who


def require_scope(scope: Scope, action: Action | None = None, *, chat_param: str = "chat_id"):
    """A FastAPI dependency: the caller's :class:`Principal`, with ``scope`` checked, and access to the
    ``{chat_id}`` path parameter when the route has one (use :func:`authorize` for chat ids in a body)."""

    async def dependency(request: Request) -> Principal:
        gate: AuthGate = request.app.state.auth
        who = await gate.principal(request)
        chat_id = request.path_params.get(chat_param)
        if chat_id is not None or action is not None or scope == "admin" or not who.has(scope):
            authorize(request, who, scope, chat_id, action)
        return who

    return dependency
