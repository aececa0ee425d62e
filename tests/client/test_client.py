"""memstream.client against a real ``memstream serve`` on a free loopback port (and, for the retries, a real
local HTTP server that fails on purpose)."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memstream import client as ops
from memstream.client import Accepted, AsyncClient, Client, MemstreamError, Retry
from schemas import ChatMessage, MemoryRecord, RetrieveResponse, TopicSummary
from tests.live_server import free_port, running_server

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def msg(chat: str, mid: str, sender: str, minutes: float, text: str, **kw) -> dict:
    return {"chat_id": chat, "message_id": mid, "sender": sender, "ts": (T0 + timedelta(minutes=minutes)).isoformat(),
            "text": text, **kw}  # fmt: skip


CHAT = [
    msg("team", "1", "wang", 0, "I live in Beijing, the commute takes ninety minutes every day."),
    msg("team", "2", "alice", 1, "That is a long commute, Wang.", reply_to="1"),
    msg("team", "3", "bob", 60 * 24, "I will write the release notes by Thursday."),
    msg("team", "4", "alice", 60 * 24 + 1, "Thanks Bob, please share them in this group.", reply_to="3"),
    msg("team", "5", "wang", 60 * 48, "News: I moved to Hangzhou last week, I live in Hangzhou now."),
    msg("team", "6", "bob", 60 * 48 + 1, "Welcome to Hangzhou! Which district?", reply_to="5"),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("client") / "data") as url:
        yield url


def test_the_sync_client_does_every_operation_typed(server):
    with Client(server) as ms:
        got = ms.add_messages(CHAT, flush=True)
        assert isinstance(got, Accepted) and got.accepted == len(CHAT) and got.new >= len(CHAT)
        assert [r["status"] for r in got.results] == ["accepted"] * len(CHAT)
        again = ms.add_messages([ChatMessage.model_validate(CHAT[0])])  # idempotent
        assert again.new == 0 and again.results[0]["status"] == "duplicate"

        resp = ms.retrieve("team", "Who writes the release notes?", k=5)
        assert isinstance(resp, RetrieveResponse) and resp.strategy.startswith("routed:")  # the server's default
        assert not resp.no_relevant_memory and "3" in {s for it in resp.items for s in it.source_message_ids}
        assert ms.retrieve("team", "release notes", mode="bm25", k=3).strategy.endswith("bm25")

        ctx = ms.context("team", "Which district?", trigger_message_id="6", asker="bob", token_budget=400)
        assert ctx.context_tokens <= 400 and "reply_chain" in [layer.name for layer in ctx.layers]

        live = ms.memories("team")
        every = ms.memories("team", include_superseded=True)
        assert live and all(isinstance(r, MemoryRecord) and r.valid_to is None for r in live)
        assert len(every) > len(live) and any(r.superseded_by for r in every)  # Beijing -> Hangzhou

        topics = ms.topics("team", state="closed")
        assert topics and all(isinstance(t, TopicSummary) and t.state == "closed" for t in topics)

        exported = ms.export("team")
        assert {m["message_id"] for m in exported["messages"]} == {m["message_id"] for m in CHAT}

        deleted = ms.delete("team", user="bob")
        assert deleted["deleted"] > 0 and deleted["state"] == "done"
        assert [(j["job_id"], j["state"], j["user"]) for j in ms.deletions("team")] == [(deleted["job_id"], "done", "bob")]
        left = ms.export("team")["messages"]
        assert left and all(m["sender"] != "bob" for m in left)
        assert ms.delete("team")["deleted"] > 0 and ms.memories("team") == []


async def test_the_async_client_does_the_same_concurrently(server):
    chat = [{**m, "chat_id": "async-team"} for m in CHAT]
    async with AsyncClient(server) as ms:
        assert (await ms.add_messages(chat, flush=True)).accepted == len(chat)
        resp, topics, records = await asyncio.gather(
            ms.retrieve("async-team", "Where does Wang live now?"),
            ms.topics("async-team"),
            ms.memories("async-team", include_superseded=True),
        )
        assert "Hangzhou" in resp.context and topics and records
        ctx = await ms.context("async-team", "Which district?", trigger_message_id="6")
        assert "Hangzhou" in ctx.context
        assert (await ms.delete("async-team"))["deleted"] > 0


def test_a_4xx_is_raised_at_once_with_the_servers_reason(server):
    with Client(server, retry=Retry(attempts=4, base=5.0)) as ms:
        t0 = time.monotonic()
        with pytest.raises(MemstreamError) as err:
            ms.send(ops.Call("POST", "/v1/retrieve", dict, json={"chat_id": "team", "query": ""}))
        assert err.value.status == 422 and "query" in str(err.value.detail)
        assert time.monotonic() - t0 < 5  # not retried


def test_bad_input_is_refused_before_it_is_sent():
    with pytest.raises(ValueError, match="time zone"):
        ops.add_messages([{"chat_id": "c", "message_id": "1", "sender": "a", "ts": "2024-01-01T00:00:00",
                           "text": "naive"}])  # fmt: skip


def test_only_what_the_caller_set_is_sent():
    call = ops.retrieve("team", "q")
    assert call.json == {"chat_id": "team", "query": "q"}  # so the server's default mode (routed) applies
    assert ops.retrieve("team", "q", k=3, mode="bm25").json == {"chat_id": "team", "query": "q", "k": 3, "mode": "bm25"}
    assert ops.memories("a b", include_superseded=True).path == "/v1/chats/a%20b/memories"
    assert ops.delete("team", user="bo b").path == "/v1/chats/team/users/bo%20b"


class Flaky(BaseHTTPRequestHandler):
    """Answers 503 to the first ``failures`` requests, then 200 with a topic list."""

    failures = 2
    seen: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's naming)
        Flaky.seen.append(self.path)
        ok = len(Flaky.seen) > Flaky.failures
        body = b"[]" if ok else b'{"detail": "warming up"}'
        self.send_response(200 if ok else 503)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def flaky():
    Flaky.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_5xx_is_retried_with_backoff_until_it_succeeds(flaky):
    with Client(flaky, retry=Retry(attempts=4, base=0.05)) as ms:
        assert ms.topics("team") == []
    assert len(Flaky.seen) == 3


async def test_5xx_that_persists_gives_up_after_the_attempts(flaky):
    Flaky.failures = 10
    try:
        async with AsyncClient(flaky, retry=Retry(attempts=3, base=0.01)) as ms:
            with pytest.raises(MemstreamError, match="failed after 3 tries.*503") as err:
                await ms.topics("team")
        assert err.value.status == 503 and len(Flaky.seen) == 3
    finally:
        Flaky.failures = 2


def test_connection_errors_are_retried_then_reported():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with Client(url, retry=Retry(attempts=3, base=0.01)) as ms:
        with pytest.raises(MemstreamError, match="failed after 3 tries.*ConnectError"):
            ms.memories("team")


def test_backoff_grows_and_is_capped():
    r = Retry(base=0.5, cap=2.0)
    assert [r.delay(n, rng=lambda: 1.0) for n in range(4)] == [0.5, 1.0, 2.0, 2.0]
    assert r.delay(0, rng=lambda: 0.0) == 0.25  # jitter keeps at least half the delay
    assert r.retryable(502) and not r.retryable(404)


def test_the_api_key_goes_out_as_a_bearer_token(tmp_path):
    """With keys on the server: no key -> 401, a key for another chat -> 403, the right key -> the data."""
    from tests.live_server import child_env, memstream_cmd

    data = tmp_path / "keyed"
    with running_server(data) as url:
        with Client(url) as ms:
            ms.add_messages(CHAT, flush=True)  # no keys yet: the API is open (loopback)
        made = subprocess.run(memstream_cmd("keys", "create", "--name", "bot", "--scope", "read", "--chat", "team",
                                            "--data-dir", str(data)), capture_output=True, text=True, env=child_env())
        assert made.returncode == 0, made.stderr
        token = made.stdout.split()[-1]
        time.sleep(1.2)  # the server re-reads its keys every second
        with Client(url, retry=Retry(attempts=1)) as anonymous, pytest.raises(MemstreamError) as err:
            anonymous.memories("team")
        assert err.value.status == 401
        with Client(url, api_key=token, retry=Retry(attempts=1)) as ms:
            assert ms.memories("team") and "Hangzhou" in ms.retrieve("team", "Where does Wang live?").context
            with pytest.raises(MemstreamError) as err:
                ms.memories("other-chat")
            assert err.value.status == 403
            with pytest.raises(MemstreamError) as err:
                ms.add_messages([{**CHAT[0], "message_id": "7"}])  # a read-only key
            assert err.value.status == 403
