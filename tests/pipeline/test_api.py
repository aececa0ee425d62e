"""The HTTP API over the embedded default, through a real ASGI client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from memstream.api import create_app
from memstream.settings import Settings


def msg(chat, mid, sender, minutes, text, **kw):
    ts = datetime(2024, 3, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=minutes)
    return {"chat_id": chat, "message_id": mid, "sender": sender, "ts": ts.isoformat(), "text": text, **kw}


@pytest.fixture
def client(tmp_path, minilm):
    app = create_app(Settings(data_dir=tmp_path / "d"), embedder=minilm)
    with TestClient(app) as c:
        yield c


def test_openapi_lists_the_endpoints(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert "/v1/retrieve" in paths and "/v1/messages" in paths and "/v1/chats/{chat_id}/topics" in paths


def test_ingest_then_retrieve_with_evidence_and_trace(client):
    batch = [
        msg("g1", "1", "alice", 0, "I moved to Hangzhou last week, the West Lake is lovely."),
        msg("g1", "2", "bob", 1, "Nice! Which district do you live in?", reply_to="1"),
        msg("g1", "3", "alice", 2, "Xihu district, near the lake.", reply_to="2"),
        msg("g1", "4", "carol", 30, "Has anyone tried the new ramen place downtown?"),
    ]
    r = client.post("/v1/messages", json={"messages": batch, "flush": True})
    assert r.status_code == 202, r.text
    assert r.json()["new"] >= 4
    r = client.post("/v1/retrieve", json={"chat_id": "g1", "query": "Where does Alice live?", "k": 5})
    assert r.status_code == 200
    body = r.json()
    assert body["items"] and not body["no_relevant_memory"]
    assert {"1", "3"} & {s for it in body["items"] for s in it["source_message_ids"]}
    assert body["context_tokens"] > 0 and "[2024-03-01" in body["context"]
    assert [s["step"] for s in body["trace"]][-1] == "render"
    chain = client.get("/v1/chats/g1/messages/3/reply-chain").json()["chain"]
    assert [m["message_id"] for m in chain] == ["1", "2", "3"]
    topics = client.get("/v1/chats/g1/topics", params={"state": "closed"}).json()
    assert topics and all(t["state"] == "closed" for t in topics)
    mems = client.get("/v1/chats/g1/memories").json()
    assert mems and all(m["source_message_ids"] for m in mems)
    assert "memstream_retrieve_total 1" in client.get("/metrics").text


def test_bad_requests_get_4xx_with_a_reason(client):
    r = client.post("/v1/retrieve", json={"chat_id": "g1", "query": ""})
    assert r.status_code == 422 and "query" in r.text
    r = client.post("/v1/messages", json={"messages": [{"chat_id": "g1", "message_id": "x", "sender": "a",
                                                        "ts": "2024-01-01T00:00:00", "text": "naive time"}]})
    assert r.status_code == 422 and "time zone" in r.text
    assert client.get("/v1/chats/g1/messages/nope/reply-chain").status_code == 404


def test_unknown_chat_is_an_explicit_empty_result(client):
    r = client.post("/v1/retrieve", json={"chat_id": "nobody", "query": "anything at all?"})
    assert r.status_code == 200
    body = r.json()
    assert body["no_relevant_memory"] is True and body["items"] == [] and body["context"]


def test_reply_chain_follows_inferred_replies_in_a_busy_group(client):
    """No explicit reply_to anywhere: the segmenter's reply linker infers who answers whom (IRC style)."""
    batch = [
        msg("irc", "1", "alice", 0, "how do I reinstall grub after installing windows?"),
        msg("irc", "2", "carol", 0.2, "anyone tried the new nvidia driver on ubuntu 24.04?"),
        msg("irc", "3", "bob", 0.4, "alice: boot a live usb and run grub-install /dev/sda"),
        msg("irc", "4", "dave", 0.6, "carol: yes, 550 works fine here"),
        msg("irc", "5", "alice", 0.8, "bob: thanks, grub is back"),
    ]
    r = client.post("/v1/messages", json={"messages": batch, "flush": True})
    assert r.status_code == 202, r.text
    chain = client.get("/v1/chats/irc/messages/5/reply-chain").json()["chain"]
    assert [m["message_id"] for m in chain] == ["1", "3", "5"]
    assert chain[-1]["metadata"]["inferred_reply_to"] == "3" and chain[-1]["reply_to"] is None
    other = client.get("/v1/chats/irc/messages/4/reply-chain").json()["chain"]
    assert [m["message_id"] for m in other] == ["2", "4"]
