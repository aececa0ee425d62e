"""Corrections said the way people say them to a bot ("Forget the Figma thing, the offer fell through",
"Lily actually isn't allergic to peanuts, the test was wrong") take back what they correct."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from language.extract.slots import is_retraction
from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import RetrieveRequest
from tests.helpers import chat_row, write_jsonl

T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("sentence", "retracts"),
    [
        ("Forget the Figma thing, the offer fell through.", True),
        ("Lily actually isn't allergic to peanuts, the test was wrong.", True),
        ("Never mind, we're not going.", True),
        ("The weather forecast was wrong again", False),
        ("I forgot the keys at home", False),
    ],
)
def test_en_correction_cues(sentence, retracts):
    assert is_retraction(sentence) is retracts


ROWS = [
    chat_row("p", 1, "u", "Kim", T0, 0, "Also my daughter Lily is allergic to peanuts"),
    chat_row("p", 2, "u", "Kim", T0, 4, "I'm switching jobs btw, starting at Figma on July 1"),
    chat_row("p", 3, "u", "Kim", T0, 8, "Forget the Figma thing, the offer fell through. Staying at Canva."),
    chat_row("p", 4, "u", "Kim", T0, 8.01, "Lily actually isn't allergic to peanuts, the test was wrong. It's tree nuts."),
]


async def test_corrections_take_back_what_they_correct(tmp_path, minilm):
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="minilm"), embedder=minilm)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", ROWS))
        live = [m.text for m in await clients.store.list_memories("p") if m.kind == "fact"]
        assert not any("Figma on July 1" in t for t in live)  # the job offer is withdrawn
        assert not any("allergic to peanuts" in t and "isn't" not in t for t in live)
        req = RetrieveRequest(chat_id="p", query="Is Lily allergic to peanuts?", k=5, mode="routed", asker="u",
                              now=T0 + timedelta(days=9))  # fmt: skip
        got = await retrieve(clients.store, minilm, req)
        old = [it for it in got.items if it.text.startswith("Also my daughter Lily")]
        assert all(it.note and "retracted" in it.note for it in old)
        assert "isn't allergic" in got.items[0].text
    finally:
        await clients.close()
