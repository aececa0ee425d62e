"""The API processes every POST with one pipeline runner kept in app state (not one per request): the
segmenter state it loaded for the first batch is the one the next batch continues."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from memstream.api import create_app
from memstream.settings import Settings

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def msg(i: int, text: str) -> dict:
    ts = (T0 + timedelta(minutes=i)).isoformat()
    return {"chat_id": "c1", "message_id": f"m{i}", "sender": "alice" if i % 2 else "bob", "ts": ts, "text": text}


def test_posts_share_one_runner_and_its_segmenter_state(tmp_path):
    with TestClient(create_app(Settings(data_dir=tmp_path / "d"), embedder=None)) as client:
        runner = client.app.state.runner
        assert runner is client.app.state.lanes.runner
        first = client.post("/v1/messages", json={"messages": [msg(0, "I moved to Hangzhou."), msg(1, "Nice!")]})
        assert first.status_code == 202  # processed when it answers ("wait" is true by default)
        pools = runner.segment.pools
        assert "c1" in pools  # the chat's segmenter pool, loaded once
        second = client.post("/v1/messages", json={"messages": [msg(2, "Which district?")]})
        assert second.status_code == 202
        assert client.app.state.runner is runner and runner.segment.pools is pools
        topics = client.get("/v1/chats/c1/topics").json()
        assert sorted(m for t in topics for m in t["message_ids"]) == ["m0", "m1", "m2"]
