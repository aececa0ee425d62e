"""Turn doc ids of the embedded store (backends/sqlite/turn_ids.py): chat ``A:x`` message ``m1`` and chat
``A`` message ``x:m1`` are two turns, both stored and searchable, each with its own vector; a file written
with the old ids (where the second of the two was left out) is brought up to date when it is opened."""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from backends.sqlite.store import SQLiteStore
from backends.sqlite.turn_ids import turn_doc_id
from retrieval.protocols import SearchQuery
from schemas import TopicSummary
from tests.unit.retrieval.test_sqlite_store import DIM, T0, msg, unit


def pair():
    """Two turns whose old ids were both ``turn:A:x:m1``."""
    mine = msg("A", 1, "pottery class on tuesday").model_copy(update={"message_id": "x:m1"})
    theirs = msg("A:x", 1, "violin lessons every friday")
    return mine, theirs


async def found(store: SQLiteStore, chat: str, text: str) -> list[str]:
    return [h.doc.text for h in await store.search(SearchQuery(chat_id=chat, text=text, mode="bm25"))]


def test_ids_are_distinct_and_unchanged_for_plain_chat_ids():
    assert turn_doc_id("A", "m1") == "turn:A:m1" and turn_doc_id("A", "x:m1") == "turn:A:x:m1"
    ids = {turn_doc_id(c, m) for c, m in [("A", "x:m1"), ("A:x", "m1"), ("A%3Ax", "m1"), ("A%3A", "x:m1")]}
    assert len(ids) == 4


async def test_both_turns_of_a_former_clash_are_stored(tmp_path):
    store = SQLiteStore(tmp_path / "s.db", DIM)
    await store.bootstrap()
    try:
        mine, theirs = pair()
        await store.upsert_messages([mine], np.stack([unit(1)]))
        await store.upsert_messages([theirs], np.stack([unit(2)]))
        assert await found(store, "A", "pottery") == [mine.text] and await found(store, "A", "violin") == []
        assert await found(store, "A:x", "violin") == [theirs.text] and await found(store, "A:x", "pottery") == []
        assert np.allclose((await store.turn_vectors("A", ["x:m1"]))["x:m1"], unit(1), atol=1e-6)
        assert np.allclose((await store.turn_vectors("A:x", ["m1"]))["m1"], unit(2), atol=1e-6)
        knn = await store.search(SearchQuery(chat_id="A:x", text="", vector=unit(2).tolist(), mode="knn"))
        assert [h.doc.text for h in knn] == [theirs.text]
    finally:
        await store.close()


async def test_a_file_with_the_old_ids_is_brought_up_to_date_when_opened(tmp_path):
    path = tmp_path / "s.db"
    store = SQLiteStore(path, DIM)
    await store.bootstrap()
    mine, theirs = pair()
    plain = msg("A:x", 2, "dinner at eight")
    await store.upsert_messages([theirs, plain], np.stack([unit(2), unit(3)]))
    await store.upsert_messages([mine], np.stack([unit(1)]))
    topic = TopicSummary(
        chat_id="A", topic_id="t1", state="closed", message_ids=["x:m1"], participants=["u1"],
        started_at=T0, last_active_at=T0 + timedelta(minutes=2), title="x",
    )  # fmt: skip
    await store.upsert_topic(topic)
    # as the previous release left it: chat A:x's turns under "turn:A:x:…", chat A's turn x:m1 never stored
    db = store.db
    rid = db.execute("SELECT rid FROM docs WHERE chat_id = 'A'").fetchone()[0]
    db.execute("DELETE FROM docs_fts WHERE rowid = ?", (rid,))
    db.execute("DELETE FROM docs WHERE rid = ?", (rid,))
    db.execute("DELETE FROM vectors WHERE chat_id = 'A'")
    for m in ("m1", "m2"):
        db.execute("UPDATE docs SET doc_id = ? WHERE doc_id = ?", (f"turn:A:x:{m}", turn_doc_id("A:x", m)))
        db.execute("UPDATE vectors SET doc_id = ? WHERE doc_id = ?", (f"turn:A:x:{m}", turn_doc_id("A:x", m)))
    db.execute("DELETE FROM meta WHERE key = 'turn_ids_v2'")
    assert await found(store, "A", "pottery") == []
    await store.close()

    again = SQLiteStore(path, DIM)
    await again.bootstrap()
    try:
        ids = dict(again.db.execute("SELECT doc_id, chat_id FROM docs WHERE kind = 'turn'"))
        assert ids == {turn_doc_id("A:x", "m1"): "A:x", turn_doc_id("A:x", "m2"): "A:x", "turn:A:x:m1": "A"}
        assert np.allclose((await again.turn_vectors("A:x", ["m1"]))["m1"], unit(2), atol=1e-6)
        assert np.allclose((await again.turn_vectors("A:x", ["m2"]))["m2"], unit(3), atol=1e-6)
        assert await again.turn_vectors("A", ["x:m1"]) == {}  # restored without a vector (replay embeds it)
        hits = await again.search(SearchQuery(chat_id="A", text="pottery", mode="bm25"))
        assert [(h.doc.text, h.doc.topic_id, h.doc.speaker) for h in hits] == [(mine.text, "t1", mine.display_name)]
        assert await found(again, "A:x", "violin") == [theirs.text] and await found(again, "A:x", "pottery") == []
        await again.close()
        third = SQLiteStore(path, DIM)  # once: the flag is set
        await third.bootstrap()
        assert third.db.total_changes == 0 and third.db.execute("SELECT count(*) FROM docs").fetchone()[0] == 3
        await third.close()
    finally:
        await again.close()


async def test_a_vector_the_clash_left_under_the_old_id_goes_back_to_its_turn(tmp_path):
    """Old files: chat A's turn x:m1 stored without a vector, then chat A:x's m1 with one — its doc was
    left out, its vector kept under 'turn:A:x:m1'. Opened now: A:x's turn is back with that vector, and
    chat A's turn can take a vector of its own."""
    path = tmp_path / "s.db"
    store = SQLiteStore(path, DIM)
    await store.bootstrap()
    mine, theirs = pair()
    await store.upsert_messages([mine], None)
    await store.upsert_messages([theirs], np.stack([unit(2)]))
    db, new = store.db, turn_doc_id("A:x", "m1")
    rid = db.execute("SELECT rid FROM docs WHERE doc_id = ?", (new,)).fetchone()[0]
    db.execute("DELETE FROM docs_fts WHERE rowid = ?", (rid,))
    db.execute("DELETE FROM docs WHERE rid = ?", (rid,))
    db.execute("UPDATE vectors SET doc_id = 'turn:A:x:m1' WHERE doc_id = ?", (new,))
    db.execute("DELETE FROM meta WHERE key = 'turn_ids_v2'")
    await store.close()

    again = SQLiteStore(path, DIM)
    await again.bootstrap()
    try:
        assert np.allclose((await again.turn_vectors("A:x", ["m1"]))["m1"], unit(2), atol=1e-6)
        knn = await again.search(SearchQuery(chat_id="A:x", text="", vector=unit(2).tolist(), mode="knn"))
        assert [h.doc.text for h in knn] == [theirs.text]
        assert await again.turn_vectors("A", ["x:m1"]) == {}
        await again.upsert_messages([mine], np.stack([unit(1)]))  # its first vector: no id in the way
        assert np.allclose((await again.turn_vectors("A", ["x:m1"]))["x:m1"], unit(1), atol=1e-6)
    finally:
        await again.close()
