"""A bot's user asks in the first person: with ``asker`` set, "Where do I work now?" is answered for them
(embedded pipeline, no embedder), in English and Chinese; the response keeps the question as asked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import RetrieveRequest
from tests.helpers import chat_row, write_jsonl

T0 = datetime(2023, 5, 1, 9, 0, tzinfo=UTC)


def _msg(chat: str, i: int, who: str, name: str, day: float, text: str) -> dict:
    return chat_row(chat, i, who, name, T0, day, text)


ROWS = [
    _msg("en", 1, "u1", "Nora", 0, "I work at Siemens, mostly on trains."),
    _msg("en", 2, "u2", "Omar", 0.01, "I work at Bosch, on sensors."),
    _msg("en", 3, "u1", "Nora", 9, "Big change: I joined Airbus this week, left Siemens."),
    _msg("en", 4, "u2", "Omar", 9.01, "Congrats! Still at Bosch here."),
    _msg("zh", 1, "a1", "小美", 0, "我住在广州，通勤半小时。"),
    _msg("zh", 2, "a2", "阿杰", 0.01, "我住在杭州。"),
    _msg("zh", 3, "a1", "小美", 9, "我上周搬到深圳了，新家离公司很近。"),
]


async def test_the_askers_first_person_is_the_asker(tmp_path):
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=None)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", ROWS))

        async def ask(chat: str, q: str, asker: str | None):
            req = RetrieveRequest(chat_id=chat, query=q, k=5, mode="routed", asker=asker,
                                  now=T0 + timedelta(days=400))  # fmt: skip
            return await retrieve(clients.store, None, req)

        nora = await ask("en", "Where do I work now?", "u1")
        assert nora.query == "Where do I work now?" and "Airbus" in nora.items[0].text
        notes = " ".join(it.note or "" for it in nora.items)  # the slot named as a reader would say it
        assert "employer of Nora: Airbus" in notes and "works at of" not in notes
        omar = await ask("en", "Where do I work now?", "u2")
        assert "Bosch" in omar.items[0].text and not any("Airbus" in it.text for it in omar.items[:1])
        mei = await ask("zh", "我现在住哪？", "a1")
        assert "深圳" in mei.items[0].text
        jie = await ask("zh", "我现在住哪？", "a2")
        assert "杭州" in jie.items[0].text
    finally:
        await clients.close()


DRINKS = [
    _msg("d", 1, "amy", "Amy", 0, "Morning all! I'm on my third espresso already"),
    _msg("d", 2, "ben", "Ben", 0.001, "Ha, I only drink green tea these days"),
    _msg("d", 3, "amy", "Amy", 40, "Also I quit coffee, I drink matcha now"),
]


async def test_the_askers_own_words_answer_although_someone_else_said_alike(tmp_path, minilm):
    """Both people said what they drink: a first-person question is about the asker, whose own line answers
    it (the calibrated check, learned on third-person questions, read it as "about someone else")."""
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="minilm"), embedder=minilm)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", DRINKS))
        for asker, own in (("amy", "matcha"), ("ben", "green tea")):
            req = RetrieveRequest(chat_id="d", query="What do I drink now?", k=5, mode="routed", asker=asker,
                                  now=T0 + timedelta(days=41))  # fmt: skip
            got = await retrieve(clients.store, minilm, req)
            assert not got.no_relevant_memory, asker
            assert any(own in it.text for it in got.items[:3]), asker
    finally:
        await clients.close()
