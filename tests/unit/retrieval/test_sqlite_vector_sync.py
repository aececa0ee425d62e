"""The embedded store's vector caches across connections (two ``SQLiteStore``s on one file, as the processes
of ``memstream serve --workers 2`` are): a write to one chat leaves the other connection's caches of other
chats in place and is seen by its next search of that chat (only the new rows read); deletions, edits and
invalidations are seen at once. Every check compares against a store opened afresh on the same file."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from backends.sqlite.store import SQLiteStore
from backends.sqlite.vector_cache import ChatVectors
from retrieval.protocols import SearchQuery
from schemas import DecisionOp
from tests.unit.retrieval.test_sqlite_store import DIM, decision, msg, record

RNG = np.random.default_rng(11)


def vecs(n: int) -> np.ndarray:
    v = RNG.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def cached(store: SQLiteStore, chat: str) -> dict:
    """Everything the kNN of ``chat`` answers from, as ``store`` holds it now."""
    cv = store._chat_vectors(chat)
    assert cv is not None
    return {"rids": cv.rids.tolist(), "kinds": cv.kinds.tolist(), "ts": cv.ts.tolist(),
            "live": cv.live.tolist(), "subjects": cv.subjects.tolist(), "matrix": cv.matrix.tolist()}  # fmt: skip


async def answers(store: SQLiteStore, chat: str, queries: np.ndarray) -> list:
    out = []
    for q in queries:
        for kinds, superseded in ((None, False), (None, True), (["turn"], False), (["fact"], True)):
            query = SearchQuery(chat_id=chat, text="", vector=q.tolist(), mode="knn", k=100, kinds=kinds,
                                include_superseded=superseded)  # fmt: skip
            out.append([(h.doc.doc_id, round(h.score, 5)) for h in await store.search(query)])
        out.append([(r.memory_id, round(s, 5)) for r, s in await store.similar_memories(chat, q, k=100)])
    turns = await store.turn_vectors(chat, [f"m{i}" for i in range(600)])  # read from the cached matrix
    out.append(sorted((m, v.tolist()) for m, v in turns.items()))
    return out


async def same_as_fresh(store: SQLiteStore, path, chats=("a", "b")) -> None:
    fresh = SQLiteStore(path, DIM)
    await fresh.bootstrap()
    try:
        queries = vecs(3)
        for chat in chats:
            assert cached(store, chat) == cached(fresh, chat), chat
            turns = await store.turn_vectors(chat, [f"m{i}" for i in range(600)])
            stored = {d.split(":")[-1]: v for d, v in store.db.execute(
                "SELECT doc_id, vec FROM vectors WHERE chat_id = ? AND doc_id LIKE 'turn:%'", (chat,))}  # fmt: skip
            assert {m: v.tobytes() for m, v in turns.items()} == stored, chat  # the file's vectors, to the bit
            assert await answers(store, chat, queries) == await answers(fresh, chat, queries), chat
    finally:
        await fresh.close()


@pytest.fixture
async def pair(tmp_path):
    path = tmp_path / "store.db"
    one, two = SQLiteStore(path, DIM), SQLiteStore(path, DIM)
    for s in (one, two):
        await s.bootstrap()
    for chat in ("a", "b"):
        await one.upsert_messages(
            [msg(chat, i, f"{chat} turn {i}", sender=f"u{i % 3}") for i in range(12)], vecs(12)
        )
        for i in range(4):
            rec = record(chat, f"{chat}k{i}", f"{chat} fact {i}", subject=f"s{i % 2}")
            await one.apply_decision(decision(f"{chat}d{i}", DecisionOp.ADD, chat, rec=rec), vecs(1)[0])
    for s in (one, two):
        for chat in ("a", "b"):
            cached(s, chat)  # both caches filled
    yield one, two, path
    for s in (one, two):
        await s.close()


async def test_a_write_to_one_chat_keeps_the_other_connections_cache_of_another_chat(pair):
    one, two, path = pair
    loads = two._vectors.loads
    b_before = two._chat_vectors("b")
    new = vecs(3)
    await one.upsert_messages([msg("a", 100 + i, f"new {i}") for i in range(3)], new)
    assert two._chat_vectors("b") is b_before and two._vectors.loads == loads  # chat b: not reloaded
    hits = await two.search(SearchQuery(chat_id="a", text="", vector=new[1].tolist(), mode="knn", k=1))
    assert [h.doc.doc_id for h in hits] == ["turn:a:m101"]  # chat a: the new rows seen at once ...
    assert two._vectors.loads == loads and two._vectors.catch_ups == 1  # ... by reading only them
    await same_as_fresh(two, path)
    await same_as_fresh(one, path)


async def test_invalidations_by_the_other_connection_are_seen_at_once(pair):
    one, two, path = pair
    upd = record("a", "ak9", "a fact replaced", subject="s1", minutes=3)
    await one.apply_decision(decision("x1", DecisionOp.UPDATE, "a", rec=upd, target="ak1"), vecs(1)[0])
    await one.apply_decision(decision("x2", DecisionOp.DELETE, "a", target="ak2"), None)
    live = {r.memory_id for r, _ in await two.similar_memories("a", vecs(1)[0], k=100)}
    assert live == {"ak0", "ak3", "ak9"}
    assert two._vectors.loads == 2  # the two chats at the start, nothing since
    await same_as_fresh(two, path)


async def test_a_deletion_by_the_other_connection_leaves_no_vector_in_this_ones_cache(pair):
    one, two, path = pair
    gone = await two.turn_vectors("a", [f"m{i}" for i in range(12) if i % 3 == 1])
    assert len(gone) == 4
    await one.delete_user("a", "u1")
    for v in gone.values():
        hits = await two.search(SearchQuery(chat_id="a", text="", vector=list(v), mode="knn", k=100))
        assert hits and not {h.doc.doc_id for h in hits} & {f"turn:a:m{i}" for i in (1, 4, 7, 10)}
    cv = two._chat_vectors("a")
    assert not any((np.abs(cv.matrix - np.asarray(v)).max(axis=1) < 1e-6).any() for v in gone.values())
    assert await two.turn_vectors("a", list(gone)) == {}
    await same_as_fresh(two, path)
    await one.delete_chat("b")
    assert len(two._chat_vectors("b").rids) == 0
    assert await two.search(SearchQuery(chat_id="b", text="", vector=vecs(1)[0].tolist(), mode="knn")) == []
    await same_as_fresh(two, path)


async def test_an_edit_by_the_other_connection_replaces_the_cached_vector(pair):
    one, two, path = pair
    new = vecs(1)[0]
    assert await one.replace_message(msg("a", 5, "edited text"), new)
    hits = await two.search(SearchQuery(chat_id="a", text="", vector=new.tolist(), mode="knn", k=1))
    assert [h.doc.doc_id for h in hits] == ["turn:a:m5"] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert np.allclose((await two.turn_vectors("a", ["m5"]))["m5"], new, atol=1e-6)
    retracted = msg("a", 6, "x").model_copy(update={"text": "", "metadata": {"retracted": True}})
    assert await one.replace_message(retracted, None)  # a retraction: the turn has no vector any more
    assert await two.turn_vectors("a", ["m6"]) == {}
    assert "turn:a:m6" not in {
        h.doc.doc_id
        for h in await two.search(SearchQuery(chat_id="a", text="", vector=new.tolist(), mode="knn", k=100))
    }
    await same_as_fresh(two, path)


async def test_writes_of_both_connections_interleaved_without_searches_in_between(pair):
    one, two, path = pair
    for step in range(6):
        writer, other = (one, two) if step % 2 == 0 else (two, one)
        base = 200 + 10 * step
        await writer.upsert_messages([msg("a", base + i, f"w {base + i}") for i in range(3)], vecs(3))
        rec = record("a", f"ak{base}", f"fact {base}", subject="s0", minutes=step + 1)
        await writer.apply_decision(decision(f"y{base}", DecisionOp.UPDATE, "a", rec=rec,
                                             target=f"ak{base - 10}" if step else "ak0"), vecs(1)[0])  # fmt: skip
        if step == 3:
            await other.upsert_messages([msg("b", base, "b too")], vecs(1))
    await same_as_fresh(one, path)
    await same_as_fresh(two, path)


async def test_a_store_made_before_the_version_table_opens_and_keeps_in_step(tmp_path):
    path = tmp_path / "old.db"
    old = SQLiteStore(path, DIM)
    await old.bootstrap()
    await old.upsert_messages([msg("a", i, f"t {i}") for i in range(5)], vecs(5))
    await old.close()
    with sqlite3.connect(path) as db:  # the file as the previous version of the store left it
        db.execute("DROP TABLE chat_versions")
    one, two = SQLiteStore(path, DIM), SQLiteStore(path, DIM)
    for s in (one, two):
        await s.bootstrap()
    try:
        assert len(two._chat_vectors("a").rids) == 5
        await one.upsert_messages([msg("a", 9, "t 9")], vecs(1))
        assert len(two._chat_vectors("a").rids) == 6
        await one.delete_user("a", "u1")
        assert len(two._chat_vectors("a").rids) == 0
        await same_as_fresh(two, path, chats=("a",))
    finally:
        for s in (one, two):
            await s.close()


def test_many_small_appends_copy_the_matrix_a_logarithmic_number_of_times():
    rows = vecs(10_000)
    cv = ChatVectors.from_rows([], DIM)
    for start in range(0, len(rows), 5):
        batch = [
            (i, "turn" if i % 3 else "fact", float(i), i % 7 != 0, None, rows[i])
            for i in range(start, start + 5)
        ]
        assert cv.extend(batch) is cv
    assert cv.size == 10_000 and cv.capacity < 2 * cv.size + 64
    assert cv.reallocations <= 10  # 2000 batches: log2(10_000 / 64) + 1 doublings, not 2000 copies
    whole = ChatVectors.from_rows([(i, "turn" if i % 3 else "fact", float(i), i % 7 != 0, None, rows[i])
                                   for i in range(10_000)], DIM)  # fmt: skip
    assert np.array_equal(cv.matrix, whole.matrix) and np.array_equal(cv.rids, whole.rids)
    assert np.array_equal(cv.live, whole.live) and cv.kinds.tolist() == whole.kinds.tolist()
    q = vecs(1)[0]
    for kinds in (None, ["fact"], ["turn", "summary"]):
        assert cv.top(q, cv.mask(kinds, 10.0, 9000.0, True), 20) == whole.top(
            q, whole.mask(kinds, 10.0, 9000.0, True), 20
        )


def test_set_closed_marks_exactly_the_given_rows():
    cv = ChatVectors.from_rows(
        [(r, "fact", 0.0, True, None, v) for r, v in zip((3, 5, 9, 12), vecs(4), strict=True)], DIM
    )
    cv.set_closed([5, 12, 7, 100, 1])  # unknown rids are ignored
    assert cv.live.tolist() == [True, False, True, False]
    cv.close(3)
    assert cv.live.tolist() == [False, False, True, False]
    cv.set_closed([])
    assert cv.live.all()


async def test_random_writes_searches_and_deletions_from_both_connections(pair):
    """Any interleaving: after each step both connections answer as a store opened afresh does."""
    one, two, path = pair
    rng = np.random.default_rng(5)
    live = {"a": ["ak0", "ak1", "ak2", "ak3"], "b": ["bk0", "bk1", "bk2", "bk3"]}
    for step in range(40):
        store, chat = (one, two)[rng.integers(2)], ("a", "b")[rng.integers(2)]
        op = rng.integers(6)
        if op == 0:
            n = int(rng.integers(1, 4))
            await store.upsert_messages([msg(chat, 300 + 4 * step + i, f"r{step}", sender=f"u{i}") for i in range(n)],
                                        vecs(n))  # fmt: skip
        elif op == 1 and live[chat]:
            old, new = live[chat].pop(int(rng.integers(len(live[chat])))), f"{chat}r{step}"
            rec = record(chat, new, f"fact {step}", subject=f"s{step % 2}", minutes=step + 1)
            await store.apply_decision(
                decision(f"z{step}", DecisionOp.UPDATE, chat, rec=rec, target=old), vecs(1)[0]
            )
            live[chat].append(new)
        elif op == 2:
            await store.replace_message(msg(chat, int(rng.integers(12)), f"edit {step}"), vecs(1)[0])
        elif op == 3 and step % 4 == 3:
            await store.delete_user(chat, f"u{rng.integers(3)}")
            live[chat] = [m.memory_id for m in await store.list_memories(chat)]
        else:
            await store.search(SearchQuery(chat_id=chat, text="", vector=vecs(1)[0].tolist(), mode="knn"))
        await same_as_fresh((one, two)[rng.integers(2)], path)


_OTHER_PROCESS = """
import asyncio, sys
import numpy as np
from backends.sqlite.store import SQLiteStore
from tests.unit.retrieval.test_sqlite_store import DIM, msg

async def main(path):
    store = SQLiteStore(path, DIM)
    await store.bootstrap()
    await store.upsert_messages([msg("a", 500, "from the other process", sender="u0")], np.eye(DIM, dtype=np.float32)[:1])
    await store.delete_user("a", "u1")
    await store.close()

asyncio.run(main(sys.argv[1]))
"""


async def test_writes_and_a_deletion_by_another_process_are_seen(pair, tmp_path):
    one, _, path = pair
    b_before = one._chat_vectors("b")
    deleted = {f"turn:a:m{i}" for i in (1, 4, 7, 10)}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", _OTHER_PROCESS, str(path),
                                                cwd=Path(__file__).parents[3])  # fmt: skip
    assert await asyncio.wait_for(proc.wait(), 120) == 0
    hits = await one.search(
        SearchQuery(chat_id="a", text="", vector=np.eye(DIM)[0].tolist(), mode="knn", k=100)
    )
    ids = {h.doc.doc_id for h in hits}
    assert "turn:a:m500" in ids and not ids & deleted
    assert one._chat_vectors("b") is b_before  # the other chat's cache was kept
    await same_as_fresh(one, path)
