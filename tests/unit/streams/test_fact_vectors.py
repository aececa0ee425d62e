"""A fact's vector is its source sentence's (pooled in its turn's forward) plus its speaker's name's: no forward
of its own; a fact whose sentence is not found is embedded as before."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memstream.clients import build_clients
from memstream.settings import Settings
from retrieval.embedder import CachedEmbedder
from schemas import ChatMessage
from streams.stages.vectors import FACT_NAME_WEIGHT, item_vectors, mean_unit, source_sentence

TURN = "I went to a LGBTQ support group yesterday. It was so powerful! My cat Luna hid under the bed all day."


def test_the_restated_sentence_is_the_one_whose_words_the_fact_holds():
    fact = "Caroline went to a LGBTQ support group yesterday (on 2023-05-07)."
    assert source_sentence(TURN, fact) == ("I went to a LGBTQ support group yesterday.", 3)
    assert source_sentence(TURN, "Caroline's cat Luna hid under the bed all day.")[0].startswith("My cat Luna")
    assert source_sentence(TURN, "Caroline supports equal rights for everyone.") is None  # a free rewrite
    assert source_sentence("Just one here.", "Ann said just one here.") == ("Just one here.", 1)
    assert source_sentence("", "anything") is None


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
