"""Property-based fuzzing (hypothesis) of the HTTP API and the ingest reader: no input is a 5xx or a crash."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstream.api import create_app
from memstream.formats import read_jsonl
from memstream.settings import Settings

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40))
json_values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                           max_leaves=12)
ids = st.one_of(st.text(max_size=20), st.sampled_from(["a/b", " x", "x\x1f", "\ud800", "", "ok", "..", "%2F"]), scalars)
times = st.one_of(st.sampled_from(["2024-05-20T10:00:00", "2024-05-20T10:00:00Z", "9999-12-31T23:59:59-05:00",
                                   "0001-01-01T00:00:00+14:00", "not a time", "2024-02-30T00:00:00Z"]), scalars)
retrieve_bodies = st.fixed_dictionaries({"chat_id": ids, "query": st.one_of(st.text(max_size=60), scalars)},
                                        optional={"k": scalars, "mode": st.text(max_size=10), "now": times,
                                                  "token_budget": scalars, "kinds": json_values,
                                                  "trigger_message_id": ids, "asker": ids})
messages = st.fixed_dictionaries({"chat_id": ids, "message_id": ids, "sender": ids, "ts": times,
                                  "text": st.one_of(st.text(max_size=60), scalars)},
                                 optional={"reply_to": ids, "mentions": json_values, "metadata": json_values,
                                           "sender_name": st.text(max_size=30), "chat_type": st.text(max_size=8)})
QUERIES = ["how long ago was the trip 10000 years ago?", "what happened 999999999 days ago", "last year",
           "in 3000 years", "上个月", "10000年前发生了什么"]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with TestClient(create_app(Settings(data_dir=tmp_path_factory.mktemp("fuzz")), embedder=None)) as c:
        c.post("/v1/messages", json={"messages": [{"chat_id": "c", "message_id": "1", "sender": "a", "text": "hi",
                                                   "ts": "2024-01-01T00:00:00Z"}], "flush": True})
        yield c


def send(client, path: str, body) -> int:
    text = json.dumps(body, allow_nan=True, ensure_ascii=True)
    r = client.post(path, content=text.encode(), headers={"content-type": "application/json"})
    assert r.status_code < 500, (path, text[:300], r.text[:300])
    assert len(r.content) < 20_000 or r.status_code < 300
    return r.status_code


FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(body=retrieve_bodies)
def test_retrieve_and_context_never_5xx(client, body):
    send(client, "/v1/retrieve", body)
    send(client, "/v1/context", body)


@FAST
@given(batch=st.lists(messages, min_size=1, max_size=4), flush=scalars)
def test_message_batches_never_5xx(client, batch, flush):
    send(client, "/v1/messages", {"messages": batch, "flush": flush, "wait": False})


@FAST
@given(body=json_values)
def test_any_json_body_never_5xx(client, body):
    for path in ("/v1/retrieve", "/v1/messages", "/v1/context"):
        send(client, path, body)


@FAST
@given(chat=st.text(min_size=1, max_size=30), depth=scalars)
def test_path_parameters_never_5xx(client, chat, depth):
    from urllib.parse import quote

    c = quote(chat.encode("utf-8", "surrogatepass"), safe="")
    for path in (f"/v1/chats/{c}/topics", f"/v1/chats/{c}/memories", f"/v1/chats/{c}/export",
                 f"/v1/chats/{c}/messages/{c}/reply-chain?depth={quote(str(depth))}"):
        assert client.get(path).status_code < 500, path


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("now", [None, "9999-12-31T12:00:00+08:00", "0001-01-02T00:00:00Z"])
def test_extreme_dates_in_queries_are_answered(client, query, now):
    for path in ("/v1/retrieve", "/v1/context"):
        body = {"chat_id": "c", "query": query, **({"now": now} if now else {})}
        assert client.post(path, json=body).status_code == 200


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.one_of(st.text(max_size=80), messages.map(lambda m: json.dumps(m, allow_nan=True))),
                      max_size=8))
def test_the_ingest_reader_judges_every_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("jsonl") / "in.jsonl"
    path.write_text("\n".join(line.replace("\n", " ") for line in lines), encoding="utf-8", errors="surrogatepass")
    parsed = list(read_jsonl(path))
    assert all((p.message is None) != (p.error is None) for p in parsed)
    text = path.read_bytes().decode("utf-8", errors="replace")
    lines_read = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # universal newlines, as read
    assert len(parsed) == sum(1 for line in lines_read if line.strip())  # nothing dropped silently
