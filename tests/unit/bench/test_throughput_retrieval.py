"""bench throughput's retrieval latencies: wall and CPU percentiles per mode, over a real embedded store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backends.sqlite.store import SQLiteStore
from bench.throughput_retrieval import MODES, latencies
from schemas import ChatMessage

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)


async def test_latencies_report_wall_and_cpu_per_mode(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    await store.bootstrap()
    try:
        texts = ["I moved to Hangzhou last spring.", "The lake is lovely when it rains.", "I play the violin."]
        await store.upsert_messages([ChatMessage(chat_id="c", message_id=f"m{i}", sender="ann", text=t,
                                                 ts=T0 + timedelta(minutes=i)) for i, t in enumerate(texts)], None)  # fmt: skip
        questions = [("c", "Where did ann move?"), ("c", "Who plays the violin?"), ("c", "How is the lake?")]
        out = await latencies(store, None, questions, now={"c": T0 + timedelta(days=1)}, warmup=1)
    finally:
        await store.close()
    assert set(out) == set(MODES)
    for mode in MODES:
        wall, cpu = out[mode], out[mode]["cpu_ms"]
        assert wall["n"] == cpu["n"] == 3
        assert 0 < wall["p50"] <= wall["p95"] <= wall["p99"] and 0 <= cpu["p50"] <= cpu["p95"] <= cpu["p99"]
