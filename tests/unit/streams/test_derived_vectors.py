"""Aggregates of whole messages (Q&A pairs, summaries, titles) take their source turns' mean vector: the model
embeds each message and each fact (a sentence, finer than its turn), not what merely regroups messages,
unless told to ("text")."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import numpy as np

from backends.embed.embedder import CachedEmbedder
from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from schemas import ChatMessage, MemoryKind
from streams.stages.vectors import COMPOSED_KINDS, item_vectors, mean_unit
from tests.helpers import write_jsonl
from tests.unit.streams.test_runner_prefetch import HashingEmbedder, _messages


class Recording(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        self.texts += texts
        return await super().embed(texts, is_query=is_query)


async def _ingest(tmp_path, name: str, mode: str):
    inner = Recording()
    settings = Settings(data_dir=tmp_path / name, embedder="none", derived_vectors=mode)
    clients = await build_clients(settings, embedder=CachedEmbedder(inner))
    await ingest(clients, write_jsonl(tmp_path / "in.jsonl", _messages()))
    return clients, inner, settings


def _stored_vectors(settings: Settings) -> dict[str, np.ndarray]:
    with sqlite3.connect(settings.data_dir / "memstream.db") as db:
        return {
            d: np.frombuffer(v, dtype=np.float32) for d, v in db.execute("SELECT doc_id, vec FROM vectors")
        }


async def test_aggregates_take_the_mean_of_their_source_turns_and_are_not_embedded(tmp_path):
    clients, inner, settings = await _ingest(tmp_path, "sources", "sources")
    try:
        vectors = _stored_vectors(settings)
        checked = set()
        for chat in await clients.store.chats():
            turns = await clients.store.turn_vectors(chat, [f"c{chat[-1]}-m{i}" for i in range(60)])
            assert len(turns) == 60
            for record in await clients.store.list_memories(chat, live_only=False):
                if record.kind == MemoryKind.PROFILE:  # read by attribute, never by vector: none stored
                    assert record.memory_id not in vectors and record.text not in inner.texts
                    continue
                vec = vectors[record.memory_id]
                if record.kind in COMPOSED_KINDS:
                    expected = mean_unit([turns[m] for m in record.source_message_ids])
                    assert np.allclose(vec, expected, atol=1e-5), record.kind
                    assert record.text not in inner.texts
                else:  # a fact: embedded (this model pools no sentences: tests/unit/streams/test_fact_vectors.py)
                    assert record.text in inner.texts
                checked.add(record.kind)
        assert {MemoryKind.FACT, MemoryKind.SUMMARY, MemoryKind.TITLE} <= checked
    finally:
        await clients.close()


async def test_text_mode_embeds_what_the_distiller_wrote(tmp_path):
    clients, inner, _ = await _ingest(tmp_path, "text", "text")
    try:
        records = [r for c in await clients.store.chats() for r in await clients.store.list_memories(c)]
        assert {r.kind for r in records} >= {MemoryKind.FACT, MemoryKind.SUMMARY}
        assert all(r.text in inner.texts for r in records if r.kind != MemoryKind.PROFILE)  # profiles: no vector
    finally:
        await clients.close()


async def test_an_item_whose_source_has_no_stored_vector_is_embedded_itself(tmp_path):
    inner = Recording()
    clients = await build_clients(
        Settings(data_dir=tmp_path / "d", embedder="none"), embedder=CachedEmbedder(inner)
    )
    try:
        at = datetime(2024, 5, 1, 9, tzinfo=UTC)
        msgs = [ChatMessage(chat_id="c", message_id=f"m{i}", sender="ann", ts=at, text=f"I live in town {i}")
                for i in range(2)]  # fmt: skip
        await clients.store.upsert_messages(msgs[:1], await clients.embedder.embed([msgs[0].text]))
        await clients.store.upsert_messages(msgs[1:], None)  # stored without a vector

        class Item:
            def __init__(self, text: str, ids: list[str], kind: str = "qa") -> None:
                self.chat_id, self.text, self.source_message_ids, self.kind = "c", text, ids, kind

        items = [Item("Q: where? A: town 0", ["m0"]), Item("Q: where? A: town 1", ["m1"]), Item("both", ["m0", "m1"]),
                 Item("Ann lives in town 0", ["m0"], "fact")]  # fmt: skip
        inner.texts.clear()
        vecs = await item_vectors(clients, items, "sources")
        # m0's Q&A reused its turn's vector; a source without one, or a fact, is embedded
        assert inner.texts == ["Q: where? A: town 1", "both", "Ann lives in town 0"]
        turn = (await clients.store.turn_vectors("c", ["m0", "m1"]))["m0"]
        assert set(await clients.store.turn_vectors("c", ["m0", "m1"])) == {"m0"}
        assert np.allclose(vecs[0], turn) and vecs.shape == (4, HashingEmbedder.dim)
        assert await clients.store.turn_vectors("other-chat", ["m0"]) == {}  # chats stay apart
    finally:
        await clients.close()


async def test_profile_lines_skip_users_deleted_while_the_topic_was_in_flight(tmp_path):
    """The consolidator reads the deletion ledger itself (either runtime): a fact said by a user deleted while
    its topic was in flight (about someone else, so not dropped by its speaker later) gives no profile line."""
    from agents.config import ConsolidatorConfig
    from schemas import CandidateFact, DistillResult
    from streams.stages.consolidate import ConsolidateStage

    at = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    facts = [CandidateFact(fact_id=f"f{i}", chat_id="c", topic_id="t", text=text, speaker=who, subject="Bob",
                           event_time=at, source_message_ids=[f"m{i}"])
             for i, (who, text) in enumerate([("Ann", "Bob read the novel Dune last week."),
                                              ("Bob", "Bob is reading the novel Hyperion now.")])]  # fmt: skip
    result = DistillResult(result_id="r", job_id="j", chat_id="c", topic_id="t", title="", summary="", facts=facts,
                           participants=["Ann", "Bob"], started_at=at, ended_at=at, source_message_ids=["m0", "m1"],
                           at=at)  # fmt: skip
    from streams.codec import decode, encode
    from streams.log import Record
    from streams.topics import DISTILL_RESULTS, MEMORY_DECISIONS

    async def profile_lines(stage: ConsolidateStage) -> list:
        out = await stage.process([Record(DISTILL_RESULTS.name, 0, "c", "r", encode(result))])
        decisions = [decode(MEMORY_DECISIONS, p.value) for p in out.produced if p.topic == MEMORY_DECISIONS.name]
        return [d.record for d in decisions if d.record and d.record.kind == "profile"]

    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=None)
    try:
        before = await profile_lines(ConsolidateStage(clients, ConsolidatorConfig()))
        assert {"m0", "m1"} <= {m for r in before for m in r.source_message_ids}  # both lines without a deletion
        await clients.log.record_deletion("c", "ann", at.isoformat())  # the ledger keeps the sender id
        after = await profile_lines(ConsolidateStage(clients, ConsolidatorConfig()))  # a fresh batch
        assert after and not {"m0"} & {m for r in after for m in r.source_message_ids}
    finally:
        await clients.close()
