"""LLM paths against a real local OpenAI-compatible HTTP server, scripted per test.

The server (FastAPI + uvicorn on a free loopback port, in a background thread) answers
``POST /v1/chat/completions`` from a script: good JSON, invalid JSON, truncated JSON, HTTP errors, slow replies
and tool calls. Nothing inside memstream is mocked: the real ``openai`` client talks HTTP to it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from agents.config import ConsolidatorConfig, DistillerConfig
from agents.consolidator import decide_batch, decide_llm, memory_id_for
from agents.distiller import distill_extractive, distill_llm
from agents.llm import LLMClient, parse_json_reply, repair_json, strict_json_schema
from agents.prompts import distill_v1
from backends.llm_openai import OpenAILLM
from retrieval.config import LLMConfig
from schemas import CandidateFact, ChatMessage, DecisionOp, DistillJob, MemoryRecord

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@dataclass
class Step:
    """One scripted reply: HTTP ``status``, message ``content`` or ``tool_args``, after ``delay`` seconds."""

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    finish_reason: str = "stop"
    tool_args: str | None = None


@dataclass
class ScriptedLLM:
    steps: list[Step] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def reset(self, *steps: Step) -> None:
        self.steps[:] = list(steps)
        self.requests.clear()

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> JSONResponse:
            self.requests.append(await request.json())
            step = self.steps.pop(0) if self.steps else Step(status=500)
            if step.delay:
                await asyncio.sleep(step.delay)
            if step.status != 200:
                return JSONResponse(
                    {"error": {"message": "scripted failure", "type": "server_error"}}, step.status
                )
            message: dict[str, Any] = {"role": "assistant", "content": step.content}
            if step.tool_args is not None:
                message["tool_calls"] = [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "distill_topic", "arguments": step.tool_args},
                    }
                ]
            return JSONResponse(
                {
                    "id": f"chatcmpl-{len(self.requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "test",
                    "choices": [{"index": 0, "message": message, "finish_reason": step.finish_reason}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )

        return app


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[ScriptedLLM, str]]:
    scripted = ScriptedLLM()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(
        uvicorn.Config(scripted.app(), log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    )
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert uv.started, "scripted LLM server did not start"
    yield scripted, f"http://127.0.0.1:{port}/v1"
    uv.should_exit = True
    thread.join(timeout=5)
    sock.close()


@pytest.fixture
def llm(server: tuple[ScriptedLLM, str]) -> tuple[ScriptedLLM, LLMClient]:
    scripted, base_url = server
    scripted.reset()
    # a loaded CI box can take over half a second for a scripted reply: a short timeout would add a retry
    return scripted, _client(base_url, timeout_s=5.0)


def _client(base_url: str, *, timeout_s: float) -> OpenAILLM:
    return OpenAILLM(LLMConfig(base_url=base_url, model="test", timeout_s=timeout_s, max_retries=2, backoff_s=0.01))


def _job(topic: str = "t1") -> DistillJob:
    rows = [
        ("Alice", "Hey Bob!"),
        ("Alice", "I moved to Hangzhou last month. My cat is named Luna."),
        ("Bob", "Where do you work now?"),
        ("Alice", "I work at Alibaba."),
        ("Bob", "I will book the restaurant for next Friday at 7pm."),
    ]
    msgs = [
        ChatMessage(
            chat_id="chat-1",
            message_id=f"{topic}-m{i}",
            sender=n.lower(),
            sender_name=n,
            ts=T0 + timedelta(minutes=i),
            text=t,
        )
        for i, (n, t) in enumerate(rows)
    ]
    return DistillJob(job_id=f"job-{topic}", chat_id="chat-1", topic_id=topic, messages=msgs, at=msgs[-1].ts)


GOOD = {
    "title": "Alice's move to Hangzhou",
    "summary": "Alice moved to Hangzhou in April 2023 and works at Alibaba. Bob will book a restaurant.",
    "facts": [
        {
            "text": "Alice moved to Hangzhou (in April 2023).",
            "message_ids": [2],
            "speaker": "Alice",
            "subject": "Alice",
            "attribute": "lives_in",
            "value": "Hangzhou",
            "negated": False,
            "entities": ["Hangzhou"],
        },
        {
            "text": "Alice's cat is named Luna.",
            "message_ids": [2],
            "speaker": "Alice",
            "subject": "Alice",
            "attribute": "pet_name:cat",
            "value": "Luna",
            "negated": False,
            "entities": ["Luna"],
        },
        {
            "text": "Alice works at Alibaba.",
            "message_ids": [4, 3],
            "speaker": "Alice",
            "subject": "Alice",
            "attribute": "works_at",
            "value": "Alibaba",
            "negated": False,
            "entities": ["Alibaba"],
        },
        {
            "text": "A fact citing no real message.",
            "message_ids": [99],
            "speaker": None,
            "subject": None,
            "attribute": None,
            "value": None,
            "negated": False,
            "entities": [],
        },
    ],
    "qa_pairs": [{"question": "Where does Alice work?", "answer": "At Alibaba.", "message_ids": [3, 4]}],
    "tasks": [
        {
            "text": "Bob will book the restaurant.",
            "owner": "Bob",
            "due": "2023-05-19T19:00:00",
            "is_decision": False,
            "message_ids": [5],
        }
    ],
    "entities": ["Hangzhou", "Alibaba", "Luna"],
    "relations": [{"subject": "Alice", "predicate": "lives_in", "object": "Hangzhou", "message_ids": [2]}],
}
CFG = DistillerConfig(mode="llm")


def _assert_llm_result(result, calls: int, expected_calls: int) -> None:
    assert calls == expected_calls
    assert result.method == f"llm:{distill_v1.VERSION}"
    assert [f.text for f in result.facts] == [f["text"] for f in GOOD["facts"][:3]]
    work = result.facts[2]
    assert work.source_message_ids == ["t1-m3", "t1-m2"] and work.event_time == T0 + timedelta(minutes=3)
    assert (work.subject, work.attribute, work.value) == ("Alice", "works_at", "Alibaba")
    assert result.tasks[0].due == datetime(2023, 5, 19, 19, 0, tzinfo=UTC) and result.tasks[0].owner == "Bob"
    assert result.qa_pairs[0].source_message_ids == ["t1-m2", "t1-m3"]
    assert result.title == GOOD["title"] and result.summary == GOOD["summary"]


async def test_good_json_is_one_call_with_a_strict_schema(llm) -> None:
    scripted, client = llm
    scripted.reset(Step(json.dumps(GOOD)))
    result, calls = await distill_llm(_job(), client, CFG)
    _assert_llm_result(result, calls, 1)
    (request,) = scripted.requests
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == distill_v1.SCHEMA_NAME
    prompt = request["messages"][-1]["content"]
    assert "[1] 2023-05-08T13:56+00:00 Alice: Hey Bob!" in prompt and "[5]" in prompt
    assert "2023-05-08" in prompt and request["temperature"] == 0


async def test_invalid_json_is_retried(llm) -> None:
    scripted, client = llm
    scripted.reset(Step("Sorry, I cannot help with that."), Step(json.dumps(GOOD)))
    result, calls = await distill_llm(_job(), client, CFG)
    _assert_llm_result(result, calls, 2)
    assert len(scripted.requests) == 2


async def test_truncated_json_is_repaired(llm) -> None:
    scripted, client = llm
    text = json.dumps(GOOD)
    cut = text.index('"A fact citing') + 5  # cut in the middle of the fourth fact
    scripted.reset(Step("```json\n" + text[:cut], finish_reason="length"))
    result, calls = await distill_llm(_job(), client, CFG)
    assert calls == 1 and result.method == f"llm:{distill_v1.VERSION}"
    assert [f.text for f in result.facts] == [f["text"] for f in GOOD["facts"][:3]]
    assert result.tasks == [] and result.summary == GOOD["summary"]  # what came after the cut is lost


async def test_http_500_then_success(llm) -> None:
    scripted, client = llm
    scripted.reset(Step(status=500), Step(json.dumps(GOOD)))
    result, calls = await distill_llm(_job(), client, CFG)
    _assert_llm_result(result, calls, 2)


async def test_slow_reply_times_out_and_is_retried(server) -> None:
    scripted, base_url = server
    client = _client(base_url, timeout_s=1.0)
    scripted.reset(Step(json.dumps(GOOD), delay=6.0), Step(json.dumps(GOOD)))
    started = time.monotonic()
    result, calls = await distill_llm(_job(), client, CFG)
    assert time.monotonic() - started < 5.0  # the slow reply was abandoned at the 1 s timeout
    _assert_llm_result(result, calls, 2)


async def test_persistent_failure_falls_back_to_extractive(llm) -> None:
    scripted, client = llm
    scripted.reset(Step(status=500), Step("not json"), Step(status=503))
    result, calls = await distill_llm(_job(), client, CFG)
    assert calls == 3 and len(scripted.requests) == 3  # 1 + max_retries
    expected = distill_extractive(_job(), CFG)
    assert result.method == "extractive:fallback"
    assert result.model_copy(update={"method": "extractive"}) == expected


async def test_empty_reply_is_retried(llm) -> None:
    scripted, client = llm
    scripted.reset(Step("{}"), Step(json.dumps(GOOD)))
    result, calls = await distill_llm(_job(), client, CFG)
    _assert_llm_result(result, calls, 2)


async def test_schema_mismatch_is_retried_then_falls_back(llm) -> None:
    scripted, client = llm
    bad = {"facts": [{"message_ids": "one"}]}
    scripted.reset(Step(json.dumps(bad)), Step(json.dumps(bad)), Step(json.dumps(bad)))
    result, calls = await distill_llm(_job(), client, CFG)
    assert calls == 3 and result.method == "extractive:fallback"


async def test_tool_call_written_as_text_is_parsed(llm) -> None:
    scripted, client = llm
    wrapped = json.dumps({"name": "distill_topic", "arguments": GOOD})
    scripted.reset(Step(f"<think>let me see</think>\n<tool_call>\n{wrapped}\n</tool_call>"))
    result, calls = await distill_llm(_job(), client, CFG)
    _assert_llm_result(result, calls, 1)


async def test_native_tool_call_is_parsed(llm) -> None:
    scripted, client = llm
    scripted.reset(Step(None, tool_args=json.dumps(GOOD), finish_reason="tool_calls"))
    result, calls = await distill_llm(_job(), client, CFG)
    _assert_llm_result(result, calls, 1)


async def test_endpoint_without_json_schema_gets_json_object_mode(llm) -> None:
    scripted, client = llm
    scripted.reset(Step(status=400), Step(json.dumps(GOOD)))
    result, calls = await distill_llm(_job(), client, CFG)
    _assert_llm_result(result, calls, 2)
    assert [r["response_format"]["type"] for r in scripted.requests] == ["json_schema", "json_object"]


async def test_one_call_per_topic(llm) -> None:
    scripted, client = llm
    scripted.reset(Step(json.dumps(GOOD)), Step(json.dumps(GOOD)), Step(json.dumps(GOOD)))
    total = 0
    for topic in ("t1", "t2", "t3"):
        _, calls = await distill_llm(_job(topic), client, CFG)
        total += calls
    assert total == 3 == len(scripted.requests) == client.calls


# ------------------------------------------------------------------------------------------ consolidation


def _cand(i: int, text: str, **kw: Any) -> CandidateFact:
    return CandidateFact(
        fact_id=f"f{i}",
        chat_id="chat-1",
        topic_id="t9",
        text=text,
        speaker="Alice",
        subject="Alice",
        event_time=T0 + timedelta(minutes=i),
        source_message_ids=[f"m{i}"],
        **kw,
    )


def _mem(mid: str, text: str, **kw: Any) -> MemoryRecord:
    return MemoryRecord(
        memory_id=mid,
        chat_id="chat-1",
        text=text,
        subject="Alice",
        topic_id="t0",
        valid_from=T0 - timedelta(days=9),
        source_message_ids=["old"],
        source_event_id="ev0",
        **kw,
    )


PARIS = _mem("mem-paris", "Alice lives in Paris", attribute="lives_in")
TEA = _mem("mem-tea", "Alice likes tea", attribute="likes")
CANDS = [
    _cand(1, "Alice moved to Berlin.", attribute="lives_in", value="Berlin"),
    _cand(2, "Alice no longer likes tea.", attribute="likes", value="tea", negated=True),
    _cand(3, "Alice has a dog named Rex.", attribute="pet_name:dog", value="Rex"),
]
SIMILAR = [[(PARIS, 0.7)], [(TEA, 0.8), (PARIS, 0.3)], []]
CCFG = ConsolidatorConfig(mode="llm")


def _decisions(*items: dict[str, Any]) -> str:
    return json.dumps({"decisions": list(items)})


async def test_consolidation_is_one_call_for_all_candidates(llm) -> None:
    scripted, client = llm
    # memories are listed best-similarity first: tea (0.8) is [M1], Paris (0.7) is [M2]
    scripted.reset(
        Step(
            _decisions(
                {"candidate": 1, "op": "UPDATE", "target": 2, "text": None, "reason": "moved"},
                {"candidate": 2, "op": "DELETE", "target": 1, "text": None, "reason": "retracted"},
                {"candidate": 3, "op": "ADD", "target": None, "text": None, "reason": "new pet"},
            )
        )
    )
    decisions, calls = await decide_llm(CANDS, SIMILAR, client, CCFG, source_event_id="ev-9")
    assert calls == 1 and len(scripted.requests) == 1
    prompt = scripted.requests[0]["messages"][-1]["content"]
    assert "[M1] (2023-04-29, kind=fact, subject=Alice, attribute=likes) Alice likes tea" in prompt
    assert "[M2]" in prompt and "[C3]" in prompt and "mem-paris" not in prompt
    assert [d.op for d in decisions] == [DecisionOp.UPDATE, DecisionOp.DELETE, DecisionOp.ADD]
    assert decisions[0].target_memory_id == "mem-paris" and decisions[0].record.version == 2
    assert decisions[0].record.memory_id == memory_id_for(CANDS[0])
    assert decisions[1].target_memory_id == "mem-tea" and decisions[1].record is None
    assert all(d.reason.startswith("llm") and d.source_event_id == "ev-9" for d in decisions)


async def test_consolidation_invalid_answers_fall_back_per_candidate(llm) -> None:
    scripted, client = llm
    scripted.reset(
        Step(
            _decisions(
                {"candidate": 1, "op": "UPDATE", "target": 42, "text": None, "reason": "bad target"},
                {"candidate": 3, "op": "ADD", "target": None, "text": None, "reason": "ok"},
            )
        )
    )
    decisions, calls = await decide_llm(CANDS, SIMILAR, client, CCFG, source_event_id="ev-9")
    rules = decide_batch(CANDS, SIMILAR, ConsolidatorConfig(), "ev-9")
    assert calls == 1
    assert decisions[0] == rules[0] and decisions[1] == rules[1]  # rules decided what the model got wrong
    assert decisions[2].op == DecisionOp.ADD and decisions[2].reason == "llm: ok"


async def test_consolidation_failure_falls_back_to_rules(llm) -> None:
    scripted, client = llm
    scripted.reset(Step(status=500), Step('{"oops'), Step(status=502))
    decisions, calls = await decide_llm(CANDS, SIMILAR, client, CCFG, source_event_id="ev-9")
    assert calls == 3
    assert decisions == decide_batch(CANDS, SIMILAR, ConsolidatorConfig(), "ev-9")
    assert [d.op for d in decisions] == [DecisionOp.UPDATE, DecisionOp.DELETE, DecisionOp.ADD]


async def test_consolidation_skips_the_call_when_everything_is_applied(llm) -> None:
    scripted, client = llm
    applied = [[(_mem(memory_id_for(c), c.text), 1.0)] for c in CANDS]
    decisions, calls = await decide_llm(CANDS, applied, client, CCFG, source_event_id="ev-9")
    assert calls == 0 and scripted.requests == []
    assert all(d.op == DecisionOp.NOOP for d in decisions)


# --------------------------------------------------------------------------------------------- pure helpers


def test_repair_json() -> None:
    assert repair_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert repair_json('Here you go: {"a": [1, 2,],}') == {"a": [1, 2]}
    assert repair_json('{"a": [{"b": 1}, {"b": 2}, {"b"') == {"a": [{"b": 1}, {"b": 2}]}
    assert repair_json('{"a": "x", "b": "an unfinished str') == {"a": "x"}
    assert repair_json('{"a": {"b": [1, 2, 3') == {"a": {"b": [1, 2]}}  # "3" may be the start of "35"
    assert repair_json("{") is None and repair_json('{"a') is None
    assert repair_json('{"a": "br}ace", "list": [') == {"a": "br}ace", "list": []}
    assert repair_json("no json here") is None and repair_json("") is None
    assert parse_json_reply('[TOOL_CALLS][{"name": "f", "arguments": "{\\"x\\": 2}"}]') == {"x": 2}
    assert parse_json_reply('<function=distill>{"x": 3}</function>') == {"x": 3}


def test_strict_schema_keeps_a_property_named_title() -> None:
    schema = strict_json_schema(distill_v1.Response)
    assert "title" in schema["properties"] and schema["required"] == list(schema["properties"])
    assert schema["additionalProperties"] is False
    fact = schema["$defs"]["Fact"]
    assert set(fact["required"]) == set(fact["properties"])
    assert fact["properties"]["subject"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}

    def keys(node: Any) -> set[str]:
        if isinstance(node, dict):
            return set(node) | {k for v in node.values() for k in keys(v)}
        return {k for v in node for k in keys(v)} if isinstance(node, list) else set()

    assert "default" not in keys(schema)
