"""``bench.long_chat``: each round is the same chats again, later, under new ids; the rows count what the
store holds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bench.long_chat import run, shifted
from memstream.clients import build_clients
from memstream.settings import Settings

LOCOMO = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "locomo" / "locomo10_dev.json"


def test_a_round_keeps_the_chats_and_moves_ids_and_times():
    line = json.dumps({"chat_id": "c1", "message_id": "D1:3", "ts": "2023-05-08T13:56:00Z", "text": "hi"})
    (again,) = shifted([line], 2)
    o = json.loads(again)
    assert (o["chat_id"], o["message_id"], o["ts"], o["text"]) == ("c1", "D1:3-r2", "2026-05-08T13:56:00Z", "hi")


def test_two_small_rounds_grow_the_same_chats(tmp_path):
    if not LOCOMO.exists():
        import pytest

        pytest.skip("LoCoMo data not on this machine")
    rows = asyncio.run(run(LOCOMO, 2, 40, "none", tmp_path))
    assert [r["messages"] for r in rows] == [40, 80]
    assert all(r["msgs_per_s"] > 0 and r["store_mb"] > 0 and r["log_mb"] > 0 and r["rss_mb"] > 0 for r in rows)

    async def stored() -> tuple[int, int]:
        clients = await build_clients(Settings(data_dir=tmp_path / "data", embedder="none"))
        try:
            chats = await clients.store.chats()
            return len(chats), sum([len(await clients.store.list_messages(c)) for c in chats])
        finally:
            await clients.close()

    assert asyncio.run(stored()) == (5, 80)
