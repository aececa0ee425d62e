"""The input contract as a client meets it: 4xx with a short reason, never 5xx, never the input echoed;
a batch judged message by message; sensitive values masked before anything is stored."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from memstream.api import create_app
from memstream.settings import ServeConfig, Settings
from streams.sensitive import SensitivePolicy, apply, detect

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def msg(i: int, text: str = "hello there", chat: str = "c1", **kw) -> dict:
    return {"chat_id": chat, "message_id": f"m{i}", "sender": "alice", "ts": (T0 + timedelta(minutes=i)).isoformat(),
            "text": text, **kw}


@pytest.fixture
def client(tmp_path):
    settings = Settings(data_dir=tmp_path / "d", serve=ServeConfig(max_body_bytes=300_000))
    with TestClient(create_app(settings, embedder=None)) as c:
        yield c


def raw_post(client, path: str, body: str):
    return client.post(path, content=body.encode("utf-8", "surrogatepass"), headers={"content-type": "application/json"})


@pytest.mark.parametrize("body", [
    {"chat_id": "c1", "query": "when?", "now": "2024-05-20T10:00:00"},  # no zone
    {"chat_id": "c1", "query": "when?", "k": "5"},  # no silent coercion
    {"chat_id": "c1", "query": "   "},
    {"chat_id": "a/b", "query": "when?"},
    {"chat_id": "c1", "query": "when?", "k": 10**30},
    {"chat_id": "c1", "query": "x" * 5000},
])
def test_bad_retrieve_requests_get_a_short_422(client, body):
    r = client.post("/v1/retrieve", json=body)
    assert r.status_code == 422, r.text
    assert len(r.content) < 2000 and "x" * 400 not in r.text


@pytest.mark.parametrize("text", [
    '{"chat_id": "c1", "query": "\\ud800"}',  # a lone surrogate
    '{"chat_id": "c1", "query": "when?", "k": NaN}',
    '{"chat_id": "c1", "query": "when?", "token_budget": Infinity}',
    '{"chat_id": "\\udfff", "query": "q"}',
    '[1, 2, 3]', '{"chat_id": ', "\x00\x01",
])
def test_malformed_json_never_breaks_the_error_renderer(client, text):
    r = raw_post(client, "/v1/retrieve", text)
    assert r.status_code == 422, r.text
    assert client.get("/healthz").status_code == 200  # the connection is still fine


def test_a_large_input_is_not_echoed_and_an_oversized_body_is_refused(client):
    big = "y" * 200_000
    r = client.post("/v1/retrieve", json={"chat_id": "c1", "query": big})
    assert r.status_code == 422 and len(r.content) < 2000
    r = client.post("/v1/messages", json={"messages": [msg(1, "z" * 400_000)]})
    assert r.status_code == 413 and len(r.content) < 500


def test_a_bug_in_a_handler_is_a_500_body_and_the_server_goes_on(tmp_path):
    app = create_app(Settings(data_dir=tmp_path / "d"), embedder=None)

    @app.get("/boom")
    async def boom():
        raise RuntimeError("a bug")

    with TestClient(app) as c:  # raise_server_exceptions stays on: an escaping exception would fail here
        r = c.get("/boom")
        assert r.status_code == 500 and r.json() == {"detail": "internal error (logged on the server)"}
        assert c.get("/healthz").status_code == 200


def test_one_bad_message_does_not_sink_the_batch(client):
    batch = [msg(1, "I moved to Hangzhou."), msg(2, "   "), {**msg(3), "chat_id": "a/b"},
             {**msg(4), "ts": "2024-03-01T09:00:00"}, msg(5, "still here"), msg(1, "I moved to Hangzhou.")]
    r = client.post("/v1/messages", json={"messages": batch, "flush": True})
    assert r.status_code == 202, r.text
    statuses = [x["status"] for x in r.json()["results"]]
    assert statuses == ["accepted", "dead_lettered", "dead_lettered", "dead_lettered", "accepted", "duplicate"]
    reasons = " ".join(x.get("reason") or "" for x in r.json()["results"])
    assert "blank" in reasons and "'/'" in reasons and "time zone" in reasons
    again = client.post("/v1/messages", json={"messages": [msg(5, "still here")]}).json()
    assert again["results"][0]["status"] == "duplicate" and again["new"] == 0
    exported = client.get("/v1/chats/c1/export").json()
    assert {m["message_id"] for m in exported["messages"]} == {"m1", "m5"}


def test_a_chat_id_with_a_slash_is_refused_everywhere(client):
    assert client.get("/v1/chats/a%2Fb/memories").status_code in (404, 422)
    assert client.post("/v1/retrieve", json={"chat_id": "a/b", "query": "q"}).status_code == 422


def test_sensitive_values_are_masked_before_they_are_stored(client, tmp_path):
    text = "my card is 4111 1111 1111 1111 and the wifi password: hunter2hunter"
    r = client.post("/v1/messages", json={"messages": [msg(1, text)], "flush": True})
    assert r.status_code == 202, r.text
    stored = client.get("/v1/chats/c1/export").json()["messages"][0]
    assert "4111" not in stored["text"] and "hunter2hunter" not in stored["text"]
    assert stored["metadata"]["sensitive"] == {"bank_card": 1, "secret": 1, "masked": 2}
    everything = log_values(tmp_path)
    assert "[bank_card]" in everything and "4111 1111" not in everything and "hunter2hunter" not in everything


def test_the_policy_masks_drops_or_keeps_per_chat():
    policy = SensitivePolicy(actions={"phone": "keep", "email": "mask"}, per_chat={"vip": {"phone": "drop"}})
    text = "call 138 1234 5678 or mail bob@example.com"
    assert [f.kind for f in detect(text)] == ["phone", "email"]
    kept = apply(policy, "team", text)
    assert kept.text == "call 138 1234 5678 or mail [email]" and not kept.drop
    dropped = apply(policy, "vip", text)
    assert dropped.drop and "138" not in dropped.text and dropped.counts == {"phone": 1, "email": 1}
    assert detect("meet at 10:30 on 2024-05-01, order 4111111111111112, v2.3.14") == []


def log_values(tmp_path) -> str:
    with sqlite3.connect(tmp_path / "d" / "log" / "log.db") as db:
        return "\n".join(v for (v,) in db.execute("SELECT value FROM records"))


def test_dead_letters_keep_the_payload_and_the_reason(client, tmp_path):
    r = client.post("/v1/messages", json={"messages": [msg(1, "ok"), msg(2, "")]})
    assert r.status_code == 202 and r.json()["dead_lettered"] == 1
    letters = [json.loads(v) for v in log_values(tmp_path).splitlines() if '"dead_letter_id"' in v]
    assert len(letters) == 1 and "blank" in letters[0]["error"] and '"m2"' in letters[0]["payload"]
