"""API keys scoped to chats, tested endpoint by endpoint through a real ASGI client (BM25-only, no model)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from bench.reliability import app_routes
from memstream.api import create_app
from memstream.cli import app as cli
from memstream.keys import KeyStore, serve_refusal
from memstream.settings import Settings

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def msg(chat: str, i: int, text: str, sender: str = "alice") -> dict:
    return {"chat_id": chat, "message_id": f"m{i}", "sender": sender, "ts": (T0 + timedelta(minutes=i)).isoformat(),
            "text": text}


# (method, path template, json body template, scope it needs); {chat} is the chat under test. Every route of
# the app that names a chat (in its path or its body) must be here: test_every_route_of_the_app_has_an_auth_test
ENDPOINTS = [
    ("POST", "/v1/retrieve", {"chat_id": "{chat}", "query": "where does alice live?"}, "read"),
    ("POST", "/v1/context", {"chat_id": "{chat}", "query": "where does alice live?"}, "read"),
    ("POST", "/v1/messages", {"messages": [msg("{chat}", 9, "one more line about Hangzhou")]}, "write"),
    ("GET", "/v1/chats/{chat}/topics", None, "read"),
    ("GET", "/v1/chats/{chat}/segmentation", None, "read"),
    ("GET", "/v1/chats/{chat}/messages/m1/reply-chain", None, "read"),
    ("GET", "/v1/chats/{chat}/memories", None, "read"),
    ("GET", "/v1/chats/{chat}/export", None, "read"),
    ("DELETE", "/v1/chats/{chat}/users/bob", None, "delete"),
    ("DELETE", "/v1/chats/{chat}", None, "delete"),
    ("GET", "/v1/chats/{chat}/deletions", None, "delete"),
    ("GET", "/ui/chats/{chat}/timeline", None, "read"),
    ("GET", "/ui/chats/{chat}/memories", None, "read"),
    ("GET", "/ui/chats/{chat}/graph", None, "read"),
    ("POST", "/ui/chats/{chat}/query", {"query": "where does alice live?", "mode": "bm25"}, "read"),
]
# routes naming no chat, each with its own test below: open (no data), admin only, or a filtered chat list
OPEN = {("GET", "/healthz"), ("GET", "/ui"), ("GET", "/ui/"), ("GET", "/ui/static/{name}"), ("GET", "/openapi.json"),
        ("GET", "/docs"), ("GET", "/docs/oauth2-redirect"), ("GET", "/redoc")}
ADMIN = {("GET", "/metrics"), ("GET", "/v1/audit")}
FILTERED = {("GET", "/ui/chats")}
PARAMS = {"{chat}": "{chat_id}", "/m1/": "/{message_id}/", "/bob": "/{sender}"}


def route_of(path: str) -> str:
    for concrete, param in PARAMS.items():
        path = path.replace(concrete, param)
    return path


def fill(template, chat: str):
    if isinstance(template, str):
        return template.replace("{chat}", chat)
    if isinstance(template, dict):
        return {k: fill(v, chat) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, chat) for v in template]
    return template


def make_keys(data_dir) -> dict[str, str]:
    store = KeyStore(data_dir / "keys.db")
    asyncio.run(store.open())
    try:
        return {
            "A": store.create("bot-a", ["read", "write", "delete"], ["A"], [])[1],
            "A-read": store.create("reader-a", ["read"], ["A"], [])[1],
            "tenant": store.create("acme", ["read", "write"], [], ["acme:"])[1],
            "admin": store.create("ops", ["admin"], ["*"], [])[1],
        }
    finally:
        asyncio.run(store.close())


@pytest.fixture
def api(tmp_path):
    data = tmp_path / "d"
    data.mkdir()
    keys = make_keys(data)
    with TestClient(create_app(Settings(data_dir=data), embedder=None)) as client:
        for chat in ("A", "B", "acme:1"):
            batch = [msg(chat, 1, "I moved to Hangzhou last week."), msg(chat, 2, "Nice!", "bob")]
            r = client.post("/v1/messages", json={"messages": batch, "flush": True},
                            headers={"Authorization": f"Bearer {keys['admin']}"})
            assert r.status_code == 202, r.text
        yield client, keys


def call(client, method, path, body, key, chat):
    headers = {"X-API-Key": key} if key else {}
    return client.request(method, fill(path, chat), json=fill(body, chat), headers=headers)


def test_every_route_of_the_app_has_an_auth_test():
    """The route list comes from the app itself: a new endpoint without a row above fails here."""
    routes = set(app_routes(create_app(Settings())))
    table = {(m, route_of(p)) for m, p, _, _ in ENDPOINTS}
    assert len(routes) >= 25 and {("GET", "/ui/chats/{chat_id}/graph"), ("DELETE", "/v1/chats/{chat_id}")} <= routes
    assert routes - table - OPEN - ADMIN - FILTERED == set(), "routes without an auth test"
    assert (table | OPEN | ADMIN | FILTERED) - routes == set(), "tested routes the app no longer has"
    for method, path in routes - OPEN - ADMIN - FILTERED:  # every other route names a chat
        assert "{chat_id}" in path or (method, path) in {(m, p) for m, p, b, _ in ENDPOINTS if b}, path


@pytest.mark.parametrize(("method", "path", "body", "scope"), ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS])
def test_a_key_for_chat_A_gets_403_on_chat_B(api, method, path, body, scope):
    client, keys = api
    assert call(client, method, path, body, keys["A"], "B").status_code == 403
    assert call(client, method, path, body, keys["tenant"], "B").status_code == 403
    assert call(client, method, path, body, None, "B").status_code == 401
    assert call(client, method, path, body, "msk_000000000000_" + "x" * 43, "B").status_code == 401
    ok = call(client, method, path, body, keys["A"], "A")
    assert ok.status_code in (200, 202), ok.text
    assert call(client, method, path, body, keys["tenant"], "acme:1").status_code in (
        (200, 202) if scope != "delete" else (403,))
    if scope != "read":
        assert call(client, method, path, body, keys["A-read"], "A").status_code == 403


def test_nothing_of_chat_B_reaches_a_key_for_A(api):
    client, keys = api
    h = {"X-API-Key": keys["A"]}
    r = client.post("/v1/retrieve", json={"chat_id": "A", "query": "Hangzhou", "mode": "bm25"}, headers=h)
    assert r.status_code == 200 and r.json()["items"]
    assert all(it["item_id"] and "B" not in it["source_message_ids"] for it in r.json()["items"])
    batch = {"messages": [msg("A", 20, "fine"), msg("B", 21, "sneaky write into B")]}
    assert client.post("/v1/messages", json=batch, headers=h).status_code == 403  # nothing of it written
    export = client.get("/v1/chats/B/export", headers={"X-API-Key": keys["admin"]}).json()
    assert "sneaky" not in str(export)


def test_admin_endpoints_and_the_audit_log(api):
    client, keys = api
    assert client.get("/metrics", headers={"X-API-Key": keys["A"]}).status_code == 403
    assert client.get("/metrics", headers={"X-API-Key": keys["admin"]}).status_code == 200
    client.get("/v1/chats/B/export", headers={"X-API-Key": keys["A"]})
    client.get("/v1/chats/A/export", headers={"X-API-Key": keys["A"]})
    assert client.get("/v1/audit", headers={"X-API-Key": keys["A"]}).status_code == 403
    log = client.get("/v1/audit", params={"action": "export"}, headers={"X-API-Key": keys["admin"]}).json()
    seen = {(e["chat_id"], e["outcome"]) for e in log}
    assert {("A", "allowed"), ("B", "denied")} <= seen
    assert client.get("/healthz").status_code == 200  # liveness needs no key


@pytest.mark.parametrize(("method", "path"), sorted(ADMIN))
def test_admin_routes_need_an_admin_key(api, method, path):
    client, keys = api
    assert client.request(method, path).status_code == 401
    for key in ("A", "A-read", "tenant"):
        assert client.request(method, path, headers={"X-API-Key": keys[key]}).status_code == 403
    assert client.request(method, path, headers={"X-API-Key": keys["admin"]}).status_code == 200


@pytest.mark.parametrize(("method", "path"), sorted(OPEN))
def test_open_routes_carry_no_chat_data(api, method, path):
    client, _ = api
    r = client.request(method, path.replace("{name}", "inspector.js"))
    assert r.status_code == 200
    assert "Hangzhou" not in r.text and "acme:1" not in r.text


def test_the_chat_list_shows_only_the_chats_a_key_reaches(api):
    client, keys = api
    assert client.get("/ui/chats").status_code == 401
    seen = {k: client.get("/ui/chats", headers={"X-API-Key": keys[k]}).text for k in ("A", "tenant", "admin")}
    assert 'value="A"' in seen["A"] and 'value="B"' not in seen["A"] and "acme:1" not in seen["A"]
    assert "acme:1" in seen["tenant"] and 'value="A"' not in seen["tenant"] and 'value="B"' not in seen["tenant"]
    assert all(f'value="{c}"' in seen["admin"] for c in ("A", "B", "acme:1"))


def test_a_revoked_key_stops_working_and_the_cli_shows_the_audit(api, tmp_path):
    client, keys = api
    h = {"X-API-Key": keys["A-read"]}
    assert client.get("/v1/chats/A/memories", headers=h).status_code == 200
    key_id = keys["A-read"].split("_")[1]
    result = CliRunner().invoke(cli, ["keys", "revoke", key_id, "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    client.app.state.auth._loaded_at = float("-inf")  # the 1 s cache, skipped rather than slept through
    assert client.get("/v1/chats/A/memories", headers=h).status_code == 401
    client.get("/v1/audit", headers={"X-API-Key": keys["admin"]})  # flushes the buffered entries
    result = CliRunner().invoke(cli, ["keys", "audit", "--chat", "A", "--json", "--data-dir", str(tmp_path / "d")])
    assert result.exit_code == 0 and '"chat_id": "A"' in result.output


def test_keys_are_hashed_at_rest(api, tmp_path):
    _, keys = api
    raw = (tmp_path / "d" / "keys.db").read_bytes()
    assert all(token.encode() not in raw for token in keys.values())


def test_serve_refuses_a_public_address_without_keys():
    assert serve_refusal("127.0.0.1", "auto", 0, False) is None
    assert serve_refusal("::1", "auto", 0, False) is None
    assert "without API keys" in serve_refusal("0.0.0.0", "auto", 0, False)
    assert serve_refusal("0.0.0.0", "auto", 1, False) is None
    assert serve_refusal("0.0.0.0", "auto", 0, True) is None
    assert "authentication off" in serve_refusal("10.0.0.5", "off", 3, False)


def test_serve_cli_refuses_before_binding(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path / "d"),
                                      "--embedder", "none"])
    assert result.exit_code == 2 and "without API keys" in " ".join(result.output.split())
