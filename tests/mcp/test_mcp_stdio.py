"""``memstream mcp`` round trip: a real MCP stdio server subprocess, spoken to in JSON-RPC lines, in front of
a real ``memstream serve`` on a free loopback port."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from memstream.mcp import PROTOCOL_VERSIONS, messages_from_args, negotiate
from tests.live_server import child_env, memstream_cmd, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("mcp") / "data") as url:
        yield url


class Session:
    """One MCP client session over a subprocess's stdin/stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    async def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})})
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        answer = json.loads(line)
        assert answer["jsonrpc"] == "2.0" and answer["id"] == self.next_id
        return answer

    async def call(self, tool: str, **arguments) -> dict:
        answer = await self.request("tools/call", {"name": tool, "arguments": arguments})
        return answer["result"]


@pytest.fixture
async def mcp(server):
    proc = await asyncio.create_subprocess_exec(
        *memstream_cmd("mcp", "--url", server), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=child_env(),
    )  # fmt: skip
    yield Session(proc)
    if proc.returncode is None:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def test_handshake_list_add_retrieve_context(mcp):
    init = await mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "pytest", "version": "1"}})  # fmt: skip
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert init["result"]["serverInfo"]["name"] == "memstream" and "tools" in init["result"]["capabilities"]
    await mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})  # no answer to a notification
    assert (await mcp.request("ping"))["result"] == {}

    tools = (await mcp.request("tools/list"))["result"]["tools"]
    assert {t["name"] for t in tools} == {"retrieve", "context", "add"}
    assert all(t["inputSchema"]["type"] == "object" and "chat_id" in t["inputSchema"]["required"] for t in tools)

    added = await mcp.call("add", chat_id="mcp-chat", flush=True, messages=[
        {"message_id": "1", "sender": "carol", "ts": "2024-05-02T10:00:00+08:00",
         "text": "The offsite is in Suzhou on June 14, I booked the train tickets."},
        {"message_id": "2", "sender": "dave", "ts": "2024-05-02T10:01:00+08:00",
         "text": "Great, which hotel are we staying at?", "reply_to": "1"},
        {"message_id": "3", "sender": "carol", "ts": "2024-05-02T10:02:00+08:00",
         "text": "The Pingjiang Lodge, near the old street.", "reply_to": "2"},
    ])  # fmt: skip
    assert added["isError"] is False and added["structuredContent"]["accepted"] == 3
    assert "stored" in added["content"][0]["text"]

    found = await mcp.call("retrieve", chat_id="mcp-chat", query="Where is the offsite?", k=5)
    assert found["isError"] is False and found["content"][0]["type"] == "text"
    assert "Suzhou" in found["content"][0]["text"]
    data = found["structuredContent"]
    assert data["no_relevant_memory"] is False and data["items"] and data["context_tokens"] > 0
    assert "1" in {s for it in data["items"] for s in it["source_message_ids"]}

    ctx = await mcp.call("context", chat_id="mcp-chat", query="which hotel?", trigger_message_id="3", asker="dave")
    assert ctx["isError"] is False and "Pingjiang" in ctx["content"][0]["text"]


async def test_errors_follow_the_protocol(mcp):
    await mcp.request("initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                                     "clientInfo": {"name": "old", "version": "0"}})  # fmt: skip
    assert (await mcp.request("resources/list"))["error"]["code"] == -32601
    assert (await mcp.request("tools/call", {"name": "nope", "arguments": {}}))["error"]["code"] == -32602
    missing = await mcp.call("retrieve", chat_id="mcp-chat")
    assert missing["isError"] is True and "query" in missing["content"][0]["text"]
    bad = await mcp.call("add", chat_id="mcp-chat", messages=[{"sender": "x", "text": "hi", "ts": "yesterday"}])
    assert bad["isError"] is True and "ts" in bad["content"][0]["text"]
    mcp.proc.stdin.write(b"{not json\n")
    await mcp.proc.stdin.drain()
    answer = json.loads(await asyncio.wait_for(mcp.proc.stdout.readline(), 30))
    assert answer["error"]["code"] == -32700
    assert (await mcp.request("ping"))["result"] == {}  # the session goes on


def test_version_negotiation_and_message_defaults():
    assert negotiate("2024-11-05") == "2024-11-05" and negotiate("1999-01-01") == PROTOCOL_VERSIONS[0]
    now = datetime(2024, 5, 2, 2, 0, tzinfo=UTC)
    [m] = messages_from_args({"chat_id": "c", "messages": [{"sender": "a", "text": "hello"}]}, now)
    assert m.ts == now and m.message_id.startswith("mcp-") and m.platform == "mcp"
    assert messages_from_args({"chat_id": "c", "messages": [{"sender": "a", "text": "hello"}]}, now)[0] == m
    with pytest.raises(ValueError):
        messages_from_args({"chat_id": "c", "messages": []}, now)


async def test_the_official_mcp_sdk_client_talks_to_it(server):
    """The reference client (the ``mcp`` package agent frameworks build on) does the handshake and calls."""
    sdk = pytest.importorskip("mcp", reason="the mcp package (test extra) is not installed")
    from mcp.client.stdio import stdio_client

    cmd = memstream_cmd("mcp", "--url", server)
    params = sdk.StdioServerParameters(command=cmd[0], args=cmd[1:], env=child_env())
    async with stdio_client(params) as (read, write), sdk.ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.protocol_version in PROTOCOL_VERSIONS and init.server_info.name == "memstream"
        assert {t.name for t in (await session.list_tools()).tools} == {"retrieve", "context", "add"}
        added = await session.call_tool("add", {"chat_id": "sdk-chat", "flush": True, "messages": [
            {"sender": "erin", "ts": "2024-05-03T09:00:00+00:00", "text": "My flight to Oslo leaves at 7:40."}]})
        assert not added.is_error and added.structured_content["accepted"] == 1
        got = await session.call_tool("retrieve", {"chat_id": "sdk-chat", "query": "When does the Oslo flight leave?"})
        assert not got.is_error and "7:40" in got.content[0].text


async def test_the_api_key_reaches_the_server_and_a_refusal_is_a_tool_error(tmp_path):
    data = tmp_path / "keyed"
    with running_server(data) as url:
        made = await asyncio.create_subprocess_exec(
            *memstream_cmd("keys", "create", "--name", "agent", "--scope", "read", "--scope", "write", "--chat",
                           "agent-chat", "--data-dir", str(data)),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=child_env())  # fmt: skip
        out, err = await made.communicate()
        assert made.returncode == 0, err.decode()
        token = out.decode().split()[-1]
        await asyncio.sleep(1.2)  # the server re-reads its keys every second
        for env, expect in ((child_env(), "401"), (child_env(MEMSTREAM_API_KEY=token), None)):
            proc = await asyncio.create_subprocess_exec(
                *memstream_cmd("mcp", "--url", url), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, env=env)  # fmt: skip
            session = Session(proc)
            try:
                got = await session.call("add", chat_id="agent-chat", flush=True,
                                         messages=[{"sender": "fay", "text": "The badge office opens at 8."}])  # fmt: skip
                if expect:
                    assert got["isError"] is True and expect in got["content"][0]["text"]
                else:
                    assert got["isError"] is False
                    found = await session.call("retrieve", chat_id="agent-chat", query="When does the badge office open?")
                    assert "opens at 8" in found["content"][0]["text"]
                    other = await session.call("retrieve", chat_id="someone-else", query="anything?")
                    assert other["isError"] is True and "403" in other["content"][0]["text"]
            finally:
                proc.stdin.close()
                await asyncio.wait_for(proc.wait(), 20)
