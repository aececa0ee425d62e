"""The LLM as the pure cores see it: a Protocol for JSON tasks, its one error, and the pure JSON helpers
(parsing, repair of truncated replies, strict schemas). The I/O lives in :mod:`backends.llm_openai`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel

__all__ = ["LLMClient", "LLMError", "parse_json_reply", "repair_json", "strict_json_schema"]

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)(?:```|$)", re.S)
_THINK_RE = re.compile(r"<think>.*?(?:</think>|$)", re.S)
_TOOL_TAG_RE = re.compile(
    r"<(?:tool_call|\|tool_call\|)>\s*(.*?)\s*(?:</tool_call>|<\|/tool_call\|>|$)", re.S
)
_FUNCTION_TAG_RE = re.compile(r"<function=[\w.-]+>\s*(.*?)\s*(?:</function>|$)", re.S)
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")


class LLMError(RuntimeError):
    """The LLM gave no usable JSON after every retry. ``calls`` says how many requests were made."""

    def __init__(self, message: str, calls: int) -> None:
        super().__init__(message)
        self.calls = calls


class LLMClient(Protocol):
    """What the distiller and the consolidator need of an LLM: one JSON reply per request (the OpenAI-compatible
    backend is :class:`backends.llm_openai.OpenAILLM`). Failure is one outcome, :class:`LLMError`."""

    calls: int

    async def aclose(self) -> None: ...

    async def complete_json(
        self,
        messages: list[dict[str, Any]],
        schema_name: str,
        schema: dict[str, Any],
        *,
        validate: Callable[[dict[str, Any]], object] | None = None,
    ) -> dict[str, Any]: ...

    async def complete_json_counted(
        self,
        messages: list[dict[str, Any]],
        schema_name: str,
        schema: dict[str, Any],
        *,
        validate: Callable[[dict[str, Any]], object] | None = None,
    ) -> tuple[dict[str, Any], int]: ...


def parse_json_reply(text: str) -> dict[str, Any] | None:
    """A dict from a model reply: plain JSON, fenced JSON, ``<think>`` preambles, and tool calls written as
    text (``<tool_call>{"name": …, "arguments": {…}}</tool_call>``, ``[TOOL_CALLS][…]``, ``<function=…>``)."""
    text = _THINK_RE.sub("", text or "").strip()
    for pattern in (_TOOL_TAG_RE, _FUNCTION_TAG_RE):
        m = pattern.search(text)
        if m:
            text = m.group(1)
            break
    text = text.removeprefix("[TOOL_CALLS]").strip()
    data = repair_json(text)
    return _unwrap_tool_call(data) if data is not None else None


def _unwrap_tool_call(data: dict[str, Any]) -> dict[str, Any]:
    inner = data.get("function") if isinstance(data.get("function"), dict) else data
    if (
        isinstance(inner, dict)
        and "name" in inner
        and set(inner) <= {"name", "arguments", "parameters", "id", "type"}
    ):
        args = inner.get("arguments", inner.get("parameters"))
        if isinstance(args, str):
            args = repair_json(args)
        if isinstance(args, dict):
            return args
    return data


def repair_json(text: str) -> dict[str, Any] | None:
    """Best-effort JSON object from model text; ``None`` if there is none.

    Strips code fences and anything before the first ``{``; drops trailing commas; and when the text was
    cut off (``finish_reason == "length"``), cuts back to the last complete element and closes the open
    strings-free brackets, so ``{"facts": [{"a": 1}, {"a"`` becomes ``{"facts": [{"a": 1}]}``.
    """
    if not text:
        return None
    fenced = _FENCE_RE.search(text)
    if fenced and "{" in fenced.group(1):
        text = fenced.group(1)
    start = text.find("{")
    if start < 0:
        return None
    text = text[start:]
    end = text.rfind("}")
    if end >= 0:
        for candidate in (text[: end + 1], _TRAILING_COMMA_RE.sub(r"\1", text[: end + 1])):
            value = _loads(candidate)
            if value is not None:
                return value
    return _close_truncated(text)


def _loads(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _close_truncated(text: str) -> dict[str, Any] | None:
    """Try cut points from the end: after a complete element (before a comma or after a closing bracket),
    or right after a ``[`` (an empty list is still valid); close what is open."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            if ch == "[" or len(stack) == 1:
                cuts.append((i + 1, "".join(reversed(stack))))
        elif ch in "}]":
            if not stack:
                break
            stack.pop()
            cuts.append((i + 1, "".join(reversed(stack))))
            if not stack:
                break
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    for cut, closers in reversed(cuts[-400:]):
        value = _loads(text[:cut].rstrip().rstrip(",") + closers)
        if value:  # an empty object is no repair
            return value
    return None


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema in OpenAI strict form: every property required, no extra properties, no
    defaults or titles. Optional fields stay nullable, so the model can still say "none"."""
    schema = model.model_json_schema()

    def fix(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("default", "title"):  # annotations only: a property may itself be called "title"
                if key in node and not isinstance(node[key], dict):
                    del node[key]
            if node.get("type") == "object" and "properties" in node:
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            for value in node.values():
                fix(value)
        elif isinstance(node, list):
            for value in node:
                fix(value)

    fix(schema)
    return schema
