"""The OpenAI-compatible LLM backend for JSON tasks: schema-constrained output, retries with backoff, JSON
repair. Built once per worker (``OpenAILLM(settings.llm)``) and shared by the distiller and the consolidator;
all failure handling lives here so callers see one outcome: a dict, or :class:`agents.llm.LLMError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import openai
from openai import AsyncOpenAI
from pydantic import ValidationError

from agents.llm import LLMError, parse_json_reply, repair_json
from retrieval.config import LLMConfig

__all__ = ["OpenAILLM"]


class OpenAILLM:
    """Async wrapper over :class:`openai.AsyncOpenAI` for one OpenAI-compatible endpoint.

    The SDK's own retries are disabled (``max_retries=0``) so that every request is counted here and the
    backoff is ours: ``cfg.backoff_s * 2**n`` capped at ``cfg.backoff_max_s``, at most ``cfg.max_retries``
    retries after the first attempt.
    """

    def __init__(self, cfg: LLMConfig, *, client: AsyncOpenAI | None = None) -> None:
        self.cfg = cfg
        self.calls = 0
        self._client = client or AsyncOpenAI(
            base_url=cfg.base_url,
            api_key=cfg.api_key.get_secret_value(),
            timeout=cfg.timeout_s,
            max_retries=0,
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def complete_json(
        self,
        messages: list[dict[str, Any]],
        schema_name: str,
        schema: dict[str, Any],
        *,
        validate: Callable[[dict[str, Any]], object] | None = None,
    ) -> dict[str, Any]:
        """The model's JSON reply as a dict; raises :class:`LLMError` when every attempt failed."""
        data, _ = await self.complete_json_counted(messages, schema_name, schema, validate=validate)
        return data

    async def complete_json_counted(
        self,
        messages: list[dict[str, Any]],
        schema_name: str,
        schema: dict[str, Any],
        *,
        validate: Callable[[dict[str, Any]], object] | None = None,
    ) -> tuple[dict[str, Any], int]:
        """Like :meth:`complete_json`, plus the number of requests this call made (1 + retries).

        Retried: timeouts, connection errors, 429 and 5xx, empty or unparseable replies, replies that fail
        ``validate``. A 400/422 (endpoint without ``json_schema`` support) is retried once in ``json_object``
        mode. Truncated JSON is repaired (cut to the last complete element) before it counts as a failure.
        """
        calls, mode, last_error = 0, "json_schema", "no attempt"
        for attempt in range(self.cfg.max_retries + 1):
            if attempt:
                await asyncio.sleep(min(self.cfg.backoff_s * 2 ** (attempt - 1), self.cfg.backoff_max_s))
            calls += 1
            self.calls += 1
            try:
                response = await self._client.chat.completions.create(
                    model=self.cfg.model,
                    messages=messages,  # type: ignore[arg-type]
                    response_format=_response_format(mode, schema_name, schema),  # type: ignore[arg-type]
                    temperature=self.cfg.temperature,
                    max_tokens=self.cfg.max_tokens,
                )
            except openai.APIStatusError as exc:
                last_error = f"HTTP {exc.status_code}"
                if exc.status_code in (400, 422) and mode == "json_schema":
                    mode = "json_object"
                elif exc.status_code in (401, 403, 404):
                    raise LLMError(f"LLM endpoint refused the request: {last_error}", calls) from exc
                continue
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                last_error = type(exc).__name__
                continue
            except openai.OpenAIError as exc:  # malformed body and other client-side decode failures
                last_error = f"{type(exc).__name__}: {exc}"
                continue
            data = _reply_json(response)
            if data is None:
                last_error = "reply is not JSON"
                continue
            if validate is not None:
                try:
                    validate(data)
                except (ValidationError, ValueError, TypeError) as exc:
                    last_error = f"reply does not match the schema: {str(exc)[:200]}"
                    continue
            return data, calls
        raise LLMError(f"LLM gave no usable JSON after {calls} call(s): {last_error}", calls)


def _response_format(mode: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if mode == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _reply_json(response: Any) -> dict[str, Any] | None:
    """JSON of the first choice: tool-call arguments if the model used a tool, else the message text."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        return None
    message = choices[0].message
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        data = repair_json(getattr(function, "arguments", "") or "")
        if data is not None:
            return data
    return parse_json_reply(message.content or "")
