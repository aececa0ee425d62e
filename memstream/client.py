"""Python client of the memstream HTTP API, sync (:class:`Client`) and async (:class:`AsyncClient`).

    from memstream.client import Client

    with Client("http://127.0.0.1:8080", api_key="...") as ms:
        ms.add_messages([{"chat_id": "g1", "message_id": "1", "sender": "bob",
                          "ts": "2024-03-04T09:36:00+08:00", "text": "I will write the notes."}], flush=True)
        print(ms.context("g1", "Who writes the notes?").context)

Every operation is written once, as a pure function from arguments to a :class:`Call` (method, path, body,
and how to read the answer into the schemas' pydantic models); the two clients differ only in how they send
a call. Connection errors and 5xx answers are retried with exponential backoff (every endpoint is
idempotent: messages are keyed by chat id + message id); 4xx answers raise :class:`MemstreamError` at once.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, ParamSpec, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from schemas import ChatMessage, MemoryRecord, RetrieveRequest, RetrieveResponse, TopicSummary

T = TypeVar("T")
P = ParamSpec("P")

DEFAULT_URL = "http://127.0.0.1:8080"


class MemstreamError(Exception):
    """The server refused a request (4xx), or kept failing (5xx, connection) after every retry."""

    def __init__(self, message: str, status: int | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class Accepted(BaseModel):
    """The answer to ``add_messages`` (the API's ``IngestAccepted``, read without importing the server):
    messages accepted (new or duplicate), new ones, dead-lettered ones, withheld ones (of a deleted chat or
    sender: not kept), records processed per stage, and each message's result (``{"index", "chat_id",
    "message_id", "status", "reason"}``)."""

    accepted: int
    new: int
    dead_lettered: int = 0
    withheld: int = 0
    processed: dict[str, int] = {}
    results: list[dict[str, Any]] = []


# ---- the operations: pure functions from arguments to a Call --------------------------------------------


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any], T]
    json: Any = None
    params: Mapping[str, Any] = field(default_factory=dict)


def _chat(chat_id: str) -> str:
    return "/v1/chats/" + quote(chat_id, safe="")


def _message(m: ChatMessage | Mapping[str, Any]) -> dict[str, Any]:
    msg = m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m)  # fail here, not on the server
    return msg.model_dump(mode="json", exclude_defaults=True)


def add_messages(messages: Iterable[ChatMessage | Mapping[str, Any]], *, flush: bool = False) -> Call[Accepted]:
    """Append messages to the stream (idempotent by chat id + message id); ``flush`` closes the chats'
    open topics so they are distilled now."""
    body = {"messages": [_message(m) for m in messages], "flush": flush}
    return Call("POST", "/v1/messages", Accepted.model_validate, json=body)


def _request(chat_id: str, query: str, fields: dict[str, Any]) -> dict[str, Any]:
    # only what the caller set: the server keeps its own defaults (e.g. routed mode) for the rest
    req = RetrieveRequest(chat_id=chat_id, query=query, **{k: v for k, v in fields.items() if v is not None})
    return req.model_dump(mode="json", exclude_unset=True)


def retrieve(
    chat_id: str,
    query: str,
    *,
    k: int | None = None,
    mode: Literal["routed", "hybrid", "bm25", "embedding"] | None = None,
    token_budget: int | None = None,
    **options: Any,
) -> Call[RetrieveResponse]:
    """Ranked memory for a question in one chat, with the rendered context and the routed trace."""
    body = _request(chat_id, query, {"k": k, "mode": mode, "token_budget": token_budget, **options})
    return Call("POST", "/v1/retrieve", RetrieveResponse.model_validate, json=body)


def context(
    chat_id: str,
    query: str,
    *,
    trigger_message_id: str | None = None,
    asker: str | None = None,
    token_budget: int | None = None,
    **options: Any,
) -> Call[RetrieveResponse]:
    """The bot's context before it answers: the trigger's reply chain, its active topic, the asker's recent
    messages, then long-term memory, each part labelled (``layers``), under ``token_budget``."""
    fields = {"trigger_message_id": trigger_message_id, "asker": asker, "token_budget": token_budget, **options}
    return Call("POST", "/v1/context", RetrieveResponse.model_validate, json=_request(chat_id, query, fields))


_records = TypeAdapter(list[MemoryRecord])
_topics = TypeAdapter(list[TopicSummary])


def memories(chat_id: str, *, include_superseded: bool = False) -> Call[list[MemoryRecord]]:
    """The chat's memory records (with every superseded version when asked)."""
    params = {"include_superseded": "true"} if include_superseded else {}
    return Call("GET", _chat(chat_id) + "/memories", _records.validate_python, params=params)


def topics(
    chat_id: str, *, state: Literal["active", "closed", "merged", "superseded", "rolled_back"] | None = None
) -> Call[list[TopicSummary]]:
    """Working memory (``active``) and episodic memory (``closed``) of a chat; both when no state."""
    return Call("GET", _chat(chat_id) + "/topics", _topics.validate_python, params={"state": state} if state else {})


def delete(chat_id: str, *, user: str | None = None) -> Call[dict[str, Any]]:
    """Delete a chat's data, or one user's in it, and everything derived from it, now and physically. The
    answer's counts, with ``job_id`` (see :func:`deletions`) and ``state``."""
    path = _chat(chat_id) + (f"/users/{quote(user, safe='')}" if user else "")
    return Call("DELETE", path, dict)


def deletions(chat_id: str) -> Call[list[dict[str, Any]]]:
    """The chat's deletion jobs with their state: ``pending`` (a process killed midway finishes it on
    restart) or ``done``; ``job_id`` as :func:`delete` answered."""
    return Call("GET", _chat(chat_id) + "/deletions", list)


def export(chat_id: str) -> Call[dict[str, Any]]:
    """A chat's messages, memories (all versions) and topics."""
    return Call("GET", _chat(chat_id) + "/export", dict)


# ---- retries ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Retry:
    """Exponential backoff with full jitter: try ``attempts`` times, waiting up to ``base * 2**n`` (at most
    ``cap``) seconds between tries. Retried: connection errors, timeouts and 5xx answers."""

    attempts: int = 4
    base: float = 0.25
    cap: float = 4.0

    def delay(self, attempt: int, rng: Callable[[], float] = random.random) -> float:
        return min(self.cap, self.base * 2**attempt) * (0.5 + 0.5 * rng())

    def retryable(self, status: int) -> bool:
        return status >= 500


def _tries(call: Call[T], retry: Retry) -> Generator[float, httpx.Response | httpx.TransportError, T]:
    """The retry policy without I/O: yields how long to wait before each try and is sent what the try got
    (an answer or a transport error); returns the parsed answer or raises :class:`MemstreamError`."""
    last: httpx.Response | httpx.TransportError | None = None
    for attempt in range(retry.attempts):
        got = yield retry.delay(attempt - 1) if attempt else 0.0
        if isinstance(got, httpx.Response) and not retry.retryable(got.status_code):
            return _result(call, got)
        last = got
    raise _give_up(call, retry.attempts, last)


def _result(call: Call[T], response: httpx.Response) -> T:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail")
        except ValueError:
            detail = response.text[:500]
        raise MemstreamError(f"{call.method} {call.path}: HTTP {response.status_code}: {detail}",
                             response.status_code, detail)  # fmt: skip
    return call.parse(response.json())


def _give_up(call: Call[Any], tries: int, last: BaseException | httpx.Response | None) -> MemstreamError:
    why = f"HTTP {last.status_code}" if isinstance(last, httpx.Response) else f"{type(last).__name__}: {last}"
    status = last.status_code if isinstance(last, httpx.Response) else None
    return MemstreamError(f"{call.method} {call.path}: failed after {tries} tries ({why})", status)


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


# ---- the two clients: each operation bound once to a way of sending -------------------------------------


class _Sync(Generic[P, T]):
    def __init__(self, op: Callable[P, Call[T]]) -> None:
        self.op = op
        self.__doc__ = op.__doc__

    def __get__(self, client: Client, owner: type | None = None) -> Callable[P, T]:
        def send(*args: P.args, **kwargs: P.kwargs) -> T:
            return client.send(self.op(*args, **kwargs))

        return send


class _Async(Generic[P, T]):
    def __init__(self, op: Callable[P, Call[T]]) -> None:
        self.op = op
        self.__doc__ = op.__doc__

    def __get__(self, client: AsyncClient, owner: type | None = None) -> Callable[P, Awaitable[T]]:
        def send(*args: P.args, **kwargs: P.kwargs) -> Awaitable[T]:
            return client.send(self.op(*args, **kwargs))

        return send


class Client:
    """Blocking client. ``api_key`` is sent as ``Authorization: Bearer <key>``."""

    def __init__(self, url: str = DEFAULT_URL, *, api_key: str | None = None, timeout: float = 60.0,
                 retry: Retry = Retry(), transport: httpx.BaseTransport | None = None) -> None:  # fmt: skip
        self.retry = retry
        self.http = httpx.Client(base_url=url, headers=_headers(api_key), timeout=timeout, transport=transport)

    def send(self, call: Call[T]) -> T:
        tries = _tries(call, self.retry)
        try:
            wait = next(tries)
            while True:
                time.sleep(wait)
                try:
                    got = self.http.request(call.method, call.path, json=call.json, params=call.params)
                except httpx.TransportError as exc:
                    got = exc
                wait = tries.send(got)
        except StopIteration as done:
            return done.value

    add_messages = _Sync(add_messages)
    retrieve = _Sync(retrieve)
    context = _Sync(context)
    memories = _Sync(memories)
    topics = _Sync(topics)
    delete = _Sync(delete)
    deletions = _Sync(deletions)
    export = _Sync(export)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """Asyncio client; the same operations as :class:`Client`, awaited."""

    def __init__(self, url: str = DEFAULT_URL, *, api_key: str | None = None, timeout: float = 60.0,
                 retry: Retry = Retry(), transport: httpx.AsyncBaseTransport | None = None) -> None:  # fmt: skip
        self.retry = retry
        self.http = httpx.AsyncClient(base_url=url, headers=_headers(api_key), timeout=timeout, transport=transport)

    async def send(self, call: Call[T]) -> T:
        tries = _tries(call, self.retry)
        try:
            wait = next(tries)
            while True:
                await asyncio.sleep(wait)
                try:
                    got = await self.http.request(call.method, call.path, json=call.json, params=call.params)
                except httpx.TransportError as exc:
                    got = exc
                wait = tries.send(got)
        except StopIteration as done:
            return done.value

    add_messages = _Async(add_messages)
    retrieve = _Async(retrieve)
    context = _Async(context)
    memories = _Async(memories)
    topics = _Async(topics)
    delete = _Async(delete)
    deletions = _Async(deletions)
    export = _Async(export)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
