"""``memstream mcp``: a Model Context Protocol server on stdio, for agent frameworks.

Tools: ``retrieve`` (ranked memory for a question in one chat), ``context`` (the bot's layered context
before it answers) and ``add`` (append messages to a chat's memory). The server is a thin adapter over
:class:`memstream.client.AsyncClient`, so it talks to a running ``memstream serve`` (embedded or production)
with that server's API keys. It speaks JSON-RPC 2.0, one message per line on stdin/stdout (the MCP stdio
transport), with the ``initialize`` handshake, ``ping``, ``tools/list`` and ``tools/call``; logs go to
stderr. Everything but the two stdio loops is a pure function of the message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from memstream.client import AsyncClient, MemstreamError
from schemas import ChatMessage, RetrieveResponse, stable_id

log = logging.getLogger(__name__)

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
SERVER_INFO = {"name": "memstream", "version": "0.1.0"}
INSTRUCTIONS = (
    "Chat memory: call `context` before answering a message in a chat (it returns the reply chain, the active "
    "topic, the asker's recent messages and long-term memories, timestamped), `retrieve` to look something up, "
    "and `add` to store new messages. Every call is confined to one chat_id."
)

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603

_CHAT = {"type": "string", "description": "The chat (group or private) whose memory to use; never crossed."}
_QUERY = {"type": "string", "description": "The question or the message to answer."}
_BUDGET = {"type": "integer", "minimum": 50, "maximum": 32000, "description": "Token budget of the context."}

def _tool(name: str, title: str, description: str, required: list[str], **properties: Any) -> dict[str, Any]:
    schema = {"type": "object", "required": required, "properties": properties}
    return {"name": name, "title": title, "description": description, "inputSchema": schema}


_MESSAGE = {"type": "object", "required": ["sender", "text"], "properties": {
    "sender": {"type": "string"}, "text": {"type": "string"},
    "message_id": {"type": "string", "description": "Default: derived from the message."},
    "ts": {"type": "string", "description": "ISO time with a zone; default: now."},
    "sender_name": {"type": "string"}, "reply_to": {"type": "string"}}}  # fmt: skip

TOOLS: list[dict[str, Any]] = [
    _tool("retrieve", "Retrieve chat memory",
          "Ranked memories (facts, summaries, Q&A, tasks, messages) for a question in one chat, with a rendered, "
          "timestamped context. Says so when nothing relevant is remembered.",
          ["chat_id", "query"], chat_id=_CHAT, query=_QUERY,
          k={"type": "integer", "minimum": 1, "maximum": 100, "description": "How many items (default 10)."},
          mode={"type": "string", "enum": ["routed", "hybrid", "bm25", "embedding"],
                "description": "routed (default) picks a strategy by query type."},
          token_budget=_BUDGET),
    _tool("context", "Context before answering",
          "The context a bot should read before answering a message: the message's reply chain, its active "
          "topic, the asker's recent messages, then long-term memories, each labelled.",
          ["chat_id", "query"], chat_id=_CHAT, query=_QUERY,
          trigger_message_id={"type": "string", "description": "Id of the message being answered."},
          asker={"type": "string", "description": "Sender id of who asked."}, token_budget=_BUDGET),
    _tool("add", "Add messages",
          "Append messages to a chat's memory (idempotent by message_id). They are segmented into topics, "
          "distilled and indexed; flush=true closes the open topics now.",
          ["chat_id", "messages"], chat_id=_CHAT,
          messages={"type": "array", "minItems": 1, "items": _MESSAGE},
          flush={"type": "boolean", "description": "Close the chat's open topics so they are distilled."}),
]  # fmt: skip


# ---- pure pieces -----------------------------------------------------------------------------------------


def negotiate(requested: Any) -> str:
    """The client's protocol version when this server speaks it, else the newest one it does."""
    return requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]


def initialize_result(params: Mapping[str, Any]) -> dict[str, Any]:
    return {"protocolVersion": negotiate(params.get("protocolVersion")),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": SERVER_INFO, "instructions": INSTRUCTIONS}  # fmt: skip


def messages_from_args(args: Mapping[str, Any], now: datetime) -> list[ChatMessage]:
    """The ``add`` tool's arguments as chat messages (validated); ids and times filled in when left out."""
    chat_id = args.get("chat_id")
    out = []
    for m in args.get("messages") or []:
        ts = m.get("ts") or now.isoformat()
        mid = m.get("message_id") or stable_id(chat_id, m.get("sender"), ts, m.get("text"), prefix="mcp-")
        out.append(ChatMessage.model_validate({**m, "chat_id": chat_id, "message_id": mid, "ts": ts,
                                               "platform": m.get("platform", "mcp")}))  # fmt: skip
    if not out:
        raise ValueError("messages: give at least one message")
    return out


def memory_result(resp: RetrieveResponse) -> dict[str, Any]:
    """A retrieve/context answer as a tool result: the rendered context as text, the items as data."""
    items = [{"text": it.text, "kind": it.kind, "speaker": it.speaker, "timestamp": it.timestamp.isoformat(),
              "source_message_ids": it.source_message_ids, "layer": it.layer, "note": it.note}
             for it in resp.items]  # fmt: skip
    data = {"no_relevant_memory": resp.no_relevant_memory, "query_type": resp.query_type,
            "abstention_reason": resp.abstention_reason, "context_tokens": resp.context_tokens, "items": items}
    return {"content": [{"type": "text", "text": resp.context}], "structuredContent": data, "isError": False}


def tool_error(message: str) -> dict[str, Any]:
    """A failed tool run is a result the model can read and act on, not a protocol error."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def reply(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


# ---- the server ------------------------------------------------------------------------------------------

ToolFn = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]


class MemoryTools:
    """The three tools over a memstream API client."""

    def __init__(self, client: AsyncClient, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.client = client
        self.now = now
        self.by_name: dict[str, ToolFn] = {"retrieve": self.retrieve, "context": self.context, "add": self.add}

    async def retrieve(self, a: Mapping[str, Any]) -> dict[str, Any]:
        options = {k: a[k] for k in ("k", "mode", "token_budget") if k in a}
        return memory_result(await self.client.retrieve(a["chat_id"], a["query"], **options))

    async def context(self, a: Mapping[str, Any]) -> dict[str, Any]:
        options = {k: a[k] for k in ("trigger_message_id", "asker", "token_budget") if k in a}
        return memory_result(await self.client.context(a["chat_id"], a["query"], **options))

    async def add(self, a: Mapping[str, Any]) -> dict[str, Any]:
        messages = messages_from_args(a, self.now())
        got = await self.client.add_messages(messages, flush=bool(a.get("flush", False)))
        text = f"stored {got.new} new of {len(messages)} message(s) in chat {a['chat_id']}"
        if got.withheld:
            text += f" ({got.withheld} withheld: the chat or their sender was deleted)"
        return {"content": [{"type": "text", "text": text}], "structuredContent": got.model_dump(), "isError": False}


async def call_tool(tools: MemoryTools, params: Mapping[str, Any]) -> dict[str, Any]:
    fn = tools.by_name[params["name"]]
    args = params.get("arguments") or {}
    missing = [k for k in next(t for t in TOOLS if t["name"] == params["name"])["inputSchema"]["required"]
               if k not in args]  # fmt: skip
    if missing:
        return tool_error(f"missing argument(s): {', '.join(missing)}")
    try:
        return await fn(args)
    except (MemstreamError, ValidationError, ValueError, TypeError) as exc:
        return tool_error(f"{params['name']} failed: {exc}")


async def handle(tools: MemoryTools, msg: Any) -> dict[str, Any] | None:
    """One JSON-RPC message in, its response out (None for a notification or a response)."""
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        is_response = isinstance(msg, dict) and ("result" in msg or "error" in msg)
        return None if is_response else error(msg.get("id") if isinstance(msg, dict) else None,
                                               INVALID_REQUEST, "not a JSON-RPC 2.0 request")  # fmt: skip
    method, params, id_ = msg["method"], msg.get("params") or {}, msg.get("id")
    if "id" not in msg:  # notifications (initialized, cancelled…) need no answer
        return None
    if method == "initialize":
        return reply(id_, initialize_result(params))
    if method == "ping":
        return reply(id_, {})
    if method == "tools/list":
        return reply(id_, {"tools": TOOLS})
    if method == "tools/call":
        if params.get("name") not in tools.by_name:
            return error(id_, INVALID_PARAMS, f"unknown tool: {params.get('name')!r}")
        return reply(id_, await call_tool(tools, params))
    return error(id_, METHOD_NOT_FOUND, f"method not found: {method}")


async def serve(tools: MemoryTools, reader: asyncio.StreamReader, write: Callable[[bytes], None]) -> None:
    """Answer each line of ``reader`` until it ends; requests run concurrently, answers go out whole."""
    pending: set[asyncio.Task] = set()

    async def answer(msg: Any) -> None:
        try:
            out = await handle(tools, msg)
        except Exception as exc:  # a bug must not kill the session: the client gets an error
            log.exception("MCP request failed")
            out = error(msg.get("id") if isinstance(msg, dict) else None, INTERNAL_ERROR, str(exc))
        if out is not None:
            write(json.dumps(out, ensure_ascii=False).encode() + b"\n")

    while line := await reader.readline():
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            write(json.dumps(error(None, PARSE_ERROR, "parse error")).encode() + b"\n")
            continue
        task = asyncio.create_task(answer(msg))
        pending.add(task)
        task.add_done_callback(pending.discard)
    if pending:
        await asyncio.gather(*pending)


async def run_stdio(url: str, api_key: str | None) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=32 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    async with AsyncClient(url, api_key=api_key) as client:
        await serve(MemoryTools(client), reader, write)
