"""/v1/retrieve (routed by default) and /v1/context through the real app."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from memstream.api import create_app
from memstream.settings import Settings


def msg(mid, sender, minutes, text, **kw):
    ts = datetime(2024, 3, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=minutes)
    return {"chat_id": "g", "message_id": mid, "sender": sender, "ts": ts.isoformat(), "text": text, **kw}


def test_routed_default_and_bot_context(tmp_path, minilm):
    with TestClient(create_app(Settings(data_dir=tmp_path / "d"), embedder=minilm)) as client:
        batch = [msg("1", "alice", 0, "I moved to Hangzhou last week, the West Lake is lovely."),
                 msg("2", "bob", 1, "Nice! Which district do you live in?", reply_to="1"),
                 msg("3", "alice", 2, "Xihu district, near the lake.", reply_to="2")]  # fmt: skip
        assert client.post("/v1/messages", json={"messages": batch, "flush": True}).status_code == 202
        body = client.post(
            "/v1/retrieve", json={"chat_id": "g", "query": "When did Alice move to Hangzhou?"}
        ).json()
        assert body["strategy"].startswith("routed:") and body["query_type"] == "temporal_reasoning"
        assert body["strategy_probs"] and any(s["step"].startswith("round") for s in body["trace"])
        uniform = client.post(
            "/v1/retrieve", json={"chat_id": "g", "query": "Hangzhou", "mode": "hybrid"}
        ).json()
        assert uniform["strategy"] == "uniform-hybrid"
        ctx = client.post("/v1/context", json={"chat_id": "g", "query": "Where does Alice live?",
                                               "trigger_message_id": "3", "asker": "bob"}).json()  # fmt: skip
        assert ctx["layers"][0]["name"] == "reply_chain" and ctx["layers"][0]["item_ids"] == ["1", "2", "3"]
        assert "## reply_chain" in ctx["context"]
