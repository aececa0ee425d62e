"""One contract suite over every ``MemoryStore``: SQLite (embedded) and Elasticsearch (noida-db locally),
the latter with server-side and client-side RRF. Same inputs, same answers."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from agents.profile import KEPT_VERSIONS
from backends.sqlite.store import SQLiteStore
from language.text import tokenize
from retrieval.protocols import MemoryStore, SearchQuery
from schemas import ChatMessage, DecisionOp, MemoryDecision, MemoryKind, MemoryRecord, TopicSummary

pytestmark = pytest.mark.integration

T0 = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)
DIM = 8
BACKENDS = ["sqlite", "es-server", "es-client"]


# ---- builders ------------------------------------------------------------------------------------


def msg(
    chat: str, i: int, text: str, sender: str = "u1", name: str | None = None, minutes: int | None = None
):
    return ChatMessage(
        chat_id=chat, message_id=f"m{i}", sender=sender, sender_name=name,
        ts=T0 + timedelta(minutes=i if minutes is None else minutes), text=text,
    )  # fmt: skip


def unit(*hot: int, dim: int = DIM) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[list(hot)] = 1.0
    return v / np.linalg.norm(v)


def hashed(text: str, dim: int = 64) -> np.ndarray:
    """A deterministic bag-of-tokens vector (signed feature hashing over ``tokenize``), L2-normalised."""
    v = np.zeros(dim, dtype=np.float32)
    v[0] = 0.1  # never a zero vector
    for token in tokenize(text):
        h = hashlib.blake2b(token.encode(), digest_size=4).digest()
        v[int.from_bytes(h[:2], "little") % dim] += 1.0 if h[2] & 1 else -1.0
    return v / np.linalg.norm(v)


def record(
    chat: str, mid: str, text: str, *, subject: str = "alice", speaker: str = "Alice", minutes: int = 0
):
    return MemoryRecord(
        memory_id=mid, chat_id=chat, kind=MemoryKind.FACT, text=text, speaker=speaker, subject=subject,
        attribute="lives_in", valid_from=T0 + timedelta(minutes=minutes), source_message_ids=["m1"],
        source_event_id="ev1",
    )  # fmt: skip


def decision(did: str, op: DecisionOp, chat: str = "A", rec=None, target=None, minutes: int = 60):
    return MemoryDecision(
        decision_id=did, op=op, chat_id=chat, target_memory_id=target, record=rec, reason="test",
        source_event_id="ev1", at=T0 + timedelta(minutes=minutes),
    )  # fmt: skip


# ---- fixtures ------------------------------------------------------------------------------------


async def _drop_es(url: str, prefix: str) -> None:
    from elasticsearch import AsyncElasticsearch

    es = AsyncElasticsearch(url)
    try:
        for kind in ("docs", "messages", "memories", "decisions", "topics"):
            await es.options(ignore_status=404).indices.delete(index=f"{prefix}-{kind}-v1")
            await es.options(ignore_status=404).indices.delete_index_template(name=f"{prefix}-{kind}")
    finally:
        await es.close()


@pytest.fixture
async def make_store(request, tmp_path):
    """``make_store(backend, dim)`` -> a bootstrapped store; the same backend name reopens the same data."""
    opened, prefixes = [], {}

    async def make(backend: str, dim: int | None = DIM) -> MemoryStore:
        if backend == "sqlite":
            store: MemoryStore = SQLiteStore(tmp_path / "store.db", dim)
        else:
            from backends.es.store import ESStore

            prefix = prefixes.setdefault(backend, f"test-{uuid.uuid4().hex[:10]}")
            url = request.getfixturevalue("es_url")
            store = ESStore(url, index_prefix=prefix, dim=dim, rrf_mode=backend.removeprefix("es-"))
        await store.bootstrap()
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()
    if prefixes:
        url = request.getfixturevalue("es_url")
        for prefix in prefixes.values():
            await _drop_es(url, prefix)


@pytest.fixture(params=BACKENDS)
async def store(request, make_store):
    return await make_store(request.param)


# ---- messages ------------------------------------------------------------------------------------


async def test_implements_protocol_and_constructor_does_no_io(store):
    assert isinstance(store, MemoryStore)
    fresh = type(store)("/nonexistent/x.db") if isinstance(store, SQLiteStore) else None
    if fresh is None:
        from backends.es.store import ESStore

        fresh = ESStore("http://127.0.0.1:9", dim=DIM)  # nothing listens there: no I/O may happen
    with pytest.raises(RuntimeError):
        await fresh.chats()


async def test_upsert_messages_is_idempotent(store):
    msgs = [msg("A", i, f"message number {i}") for i in range(5)]
    assert await store.upsert_messages(msgs, None) == 5
    assert await store.upsert_messages(msgs, None) == 0
    assert await store.upsert_messages(msgs[:2] + [msg("A", 9, "new one")], None) == 1
    assert [m.message_id for m in await store.list_messages("A")] == ["m0", "m1", "m2", "m3", "m4", "m9"]
    hits = await store.search(SearchQuery(chat_id="A", text="message number", mode="bm25", k=50))
    assert len(hits) == 5  # one turn doc per message, never duplicated
    got = await store.get_messages("A", ["m3", "missing", "m1"])
    assert [m.message_id for m in got] == ["m3", "m1"] and got[0] == msgs[3]
    assert await store.get_messages("B", ["m3"]) == []


async def test_messages_of_many_chats_in_one_read(store):
    """get_messages_in: keys of any chats, in the order asked, unknown keys skipped; an id is looked up in
    its own chat only (chat A's m1 is not chat C's m1)."""
    a = [msg("A", i, f"a says {i}") for i in range(3)]
    b = [msg("B", i, f"b says {i}") for i in range(2)]
    await store.upsert_messages(a, None)
    await store.upsert_messages(b, None)
    got = await store.get_messages_in([("B", "m1"), ("A", "m2"), ("C", "m1"), ("A", "nope"), ("A", "m0"), ("B", "m1")])
    assert got == [b[1], a[2], a[0]]
    assert await store.get_messages_in([]) == []


async def test_turn_doc_shape(store):
    await store.upsert_messages([msg("A", 1, "hello there", sender="u7", name="Melanie")], None)
    [hit] = await store.search(SearchQuery(chat_id="A", text="melanie", mode="bm25"))  # found by speaker
    assert hit.doc.doc_id == "turn:A:m1" and hit.doc.kind == "turn"
    assert hit.doc.speaker == "Melanie" and hit.doc.source_message_ids == ["m1"]
    assert hit.doc.ts == T0 + timedelta(minutes=1) and hit.doc.valid_to is None
    [by_date] = await store.search(SearchQuery(chat_id="A", text="2023-05-08", mode="bm25"))
    assert by_date.doc.doc_id == "turn:A:m1"


async def test_turn_vectors_are_read_back_per_chat(store):
    """Derived items take their source turns' vectors (streams/stages/vectors.py): read back as stored."""
    await store.upsert_messages([msg("A", 1, "one"), msg("A", 2, "two")], np.stack([unit(1), unit(2, 3)]))
    await store.upsert_messages([msg("A", 3, "no vector")], None)
    await store.upsert_messages([msg("B", 1, "other chat")], np.stack([unit(4)]))
    got = await store.turn_vectors("A", ["m2", "m1", "m3", "missing"])
    assert set(got) == {"m1", "m2"}
    assert np.allclose(got["m1"], unit(1), atol=1e-6) and np.allclose(got["m2"], unit(2, 3), atol=1e-6)
    assert set(await store.turn_vectors("B", ["m1", "m2"])) == {"m1"}  # chats stay apart
    # "turn:{chat}:{message}" reads the same for chat "A:x" message "m1" as for chat "A" message "x:m1"
    await store.upsert_messages([msg("A", 1, "colon").model_copy(update={"message_id": "x:m1"})], np.stack([unit(6)]))
    await store.upsert_messages([msg("A:x", 1, "other chat")], np.stack([unit(7)]))
    assert np.allclose((await store.turn_vectors("A:x", ["m1"]))["m1"], unit(7), atol=1e-6)  # not chat A's
    assert np.allclose((await store.turn_vectors("A", ["x:m1"]))["x:m1"], unit(6), atol=1e-6)
    keys = [("B", "m1"), ("A", "m2"), ("B", "m2"), ("A", "m3"), ("C", "m1"), ("A", "m2")]
    many = await store.turn_vectors_in(keys)  # several chats in one read, each id in its own chat only
    assert set(many) == {("B", "m1"), ("A", "m2")}
    assert np.allclose(many[("A", "m2")], got["m2"]) and np.allclose(many[("B", "m1")], unit(4), atol=1e-6)
    assert await store.turn_vectors_in([]) == {}


async def test_list_messages_time_window_and_order(store):
    await store.upsert_messages(
        [msg("A", 1, "b", minutes=5), msg("A", 2, "a", minutes=1), msg("A", 3, "c", minutes=5)], None
    )
    assert [m.message_id for m in await store.list_messages("A")] == ["m2", "m1", "m3"]
    window = await store.list_messages("A", since=T0 + timedelta(minutes=2), until=T0 + timedelta(minutes=5))
    assert [m.message_id for m in window] == ["m1", "m3"]


async def test_a_later_vector_fills_a_turn_without_one_and_never_replaces_one(store):
    await store.upsert_messages([msg("A", 1, "one"), msg("A", 2, "two")], None)
    knn = SearchQuery(chat_id="A", text="", vector=unit(0).tolist(), mode="knn", k=5)
    assert await store.search(knn) == []
    await store.upsert_messages([msg("A", 1, "one"), msg("A", 2, "two")], np.stack([unit(0), unit(1)]))
    await store.upsert_messages([msg("A", 1, "one")], unit(1)[None, :])  # first vector wins
    hits = await store.search(knn)
    assert [(h.doc.doc_id, round(h.score, 4)) for h in hits] == [("turn:A:m1", 1.0), ("turn:A:m2", 0.0)]


async def test_wrong_vector_shapes_rejected(store):
    with pytest.raises(ValueError):
        await store.upsert_messages([msg("A", 1, "x")], np.zeros((2, DIM), dtype=np.float32))
    with pytest.raises(ValueError):
        await store.upsert_messages([msg("A", 1, "x")], np.zeros((1, DIM + 1), dtype=np.float32))
    with pytest.raises(ValueError):
        await store.search(SearchQuery(chat_id="A", text="x", vector=[1.0] * (DIM + 1), mode="knn"))
    assert await store.list_messages("A") == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_reopen_persists_and_checks_dim(make_store, backend):
    first = await make_store(backend)
    await first.upsert_messages([msg("A", 1, "persisted words")], unit(0)[None, :])
    await first.close()
    again = await make_store(backend)
    hits = await again.search(SearchQuery(chat_id="A", text="persisted", vector=unit(0).tolist()))
    assert [h.doc.doc_id for h in hits] == ["turn:A:m1"]
    with pytest.raises(ValueError):
        await make_store(backend, DIM * 2)


# ---- memories ------------------------------------------------------------------------------------


async def test_decisions_are_idempotent(store):
    add = decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice lives in Paris"))
    assert await store.apply_decision(add, unit(0)) is True
    assert await store.apply_decision(add, unit(0)) is False
    assert len(await store.list_memories("A", live_only=False)) == 1
    assert len(await store.search(SearchQuery(chat_id="A", text="paris", mode="bm25"))) == 1
    noop = decision("d2", DecisionOp.NOOP, target="mem1")
    assert await store.apply_decision(noop, None) is True
    assert await store.apply_decision(noop, None) is False
    assert (await store.get_memory("A", "mem1")).live
    assert await store.get_memory("B", "mem1") is None


def _decision_list(chat: str) -> tuple[list[MemoryDecision], list]:
    """Every kind of decision, a repeat among them, and an UPDATE of a memory added earlier in the list."""
    ds = [
        decision(f"{chat}-d1", DecisionOp.ADD, chat, rec=record(chat, f"{chat}-k1", "Alice lives in Paris")),
        decision(f"{chat}-d2", DecisionOp.ADD, chat, rec=record(chat, f"{chat}-k2", "Bob likes tea", subject="bob")),
        decision(f"{chat}-d1", DecisionOp.ADD, chat, rec=record(chat, f"{chat}-k1", "Alice lives in Paris")),  # a repeat: once
        decision(f"{chat}-d3", DecisionOp.UPDATE, chat, rec=record(chat, f"{chat}-k3", "Alice lives in Berlin", minutes=5),
                 target=f"{chat}-k1"),  # fmt: skip
        decision(f"{chat}-d4", DecisionOp.DELETE, chat, target=f"{chat}-k2", minutes=90),
        decision(f"{chat}-d5", DecisionOp.NOOP, chat, target=f"{chat}-k3"),
        decision(f"{chat}-d6", DecisionOp.UPDATE, chat, rec=record(chat, f"{chat}-k4", "Alice lives in Rome", minutes=9),
                 target=f"{chat}-k3", minutes=99),  # fmt: skip
    ]
    return ds, [unit(0), unit(1), unit(0), unit(0, 2), None, None, unit(0, 3)]


async def _memories_of(store: MemoryStore, chat: str) -> list[str]:
    """The chat's memories, every version, with the chat's name taken out of them and their ids (ids are
    unique across chats: each chat's decisions name their memories after it)."""
    mems = await store.list_memories(chat, live_only=False)
    return [m.model_copy(update={"chat_id": "-"}).model_dump_json().replace(f'"{chat}-', '"') for m in mems]


async def test_decisions_in_one_call_as_one_at_a_time(store):
    one, vecs = _decision_list("A")
    applied = [await store.apply_decision(d, v) for d, v in zip(one, vecs, strict=True)]
    assert applied == [True, True, False, True, True, True, True]
    batch, vecs = _decision_list("B")
    assert await store.apply_decisions(batch, vecs) == 6
    assert await _memories_of(store, "B") == await _memories_of(store, "A")
    assert [m.memory_id for m in await store.list_memories("B")] == ["B-k4"]
    old = await store.get_memory("B", "B-k3")
    assert old.superseded_by == "B-k4" and old.valid_to == T0 + timedelta(minutes=99)
    for chat in ("A", "B"):
        q = SearchQuery(chat_id=chat, text="alice lives", vector=unit(0).tolist(), mode="hybrid")
        assert [h.doc.doc_id for h in await store.search(q)] == [f"{chat}-k4"]
    assert await store.apply_decisions(batch, vecs) == 0  # all applied before: nothing changes


async def test_an_invalid_decision_in_a_list_raises_after_the_ones_before_it(store):
    ds, vecs = _decision_list("A")
    bad = decision("d9", DecisionOp.ADD, rec=None)  # an ADD without a record
    with pytest.raises(ValueError, match="carries no record"):
        await store.apply_decisions([*ds[:2], bad, ds[3]], [*vecs[:2], None, vecs[3]])
    assert [m.memory_id for m in await store.list_memories("A")] == ["A-k1", "A-k2"]  # applied; d3 not reached


@pytest.mark.parametrize("backend", ["es-client"])
async def test_a_list_whose_bulk_failed_is_applied_again_whole(make_store, backend, monkeypatch):
    """Elasticsearch: a bulk that fails in part forgets every decision of the list, so the redelivery
    applies them all again, and their effects, done twice, end where one clean call ends."""
    from backends.es.indices import BulkError

    store = await make_store(backend)
    bulk, failed = store.bulk, []

    async def fails_once(ops):
        results = await bulk(ops)  # written, then reported as failed in part
        if not failed and any("create" in action for action, _ in ops):
            failed.append(True)
            raise BulkError("1 bulk actions failed; first: simulated")
        return results

    monkeypatch.setattr(store, "bulk", fails_once)
    ds, vecs = _decision_list("A")
    with pytest.raises(BulkError):
        await store.apply_decisions(ds, vecs)
    assert await store.apply_decisions(ds, vecs) == 6  # none was kept as applied
    clean, vecs = _decision_list("B")
    await store.apply_decisions(clean, vecs)
    assert await _memories_of(store, "A") == await _memories_of(store, "B")


async def test_update_invalidates_old_version_and_keeps_it(store):
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice lives in Paris")), unit(0)
    )
    new = record("A", "mem2", "Alice lives in Berlin", minutes=90).model_copy(update={"version": 2})
    assert await store.apply_decision(
        decision("d2", DecisionOp.UPDATE, rec=new, target="mem1", minutes=90), unit(0, 1)
    )
    old = await store.get_memory("A", "mem1")
    assert old.valid_to == T0 + timedelta(minutes=90) and old.superseded_by == "mem2"
    assert await store.list_memories("A") == [new]
    assert [m.memory_id for m in await store.list_memories("A", live_only=False)] == ["mem1", "mem2"]
    for mode in ("bm25", "knn", "hybrid"):  # superseded: hidden by default, visible on request
        q = SearchQuery(chat_id="A", text="alice lives", vector=unit(0).tolist(), mode=mode)
        assert [h.doc.doc_id for h in await store.search(q)] == ["mem2"]
        hits = {
            h.doc.doc_id: h for h in await store.search(q.model_copy(update={"include_superseded": True}))
        }
        assert set(hits) == {"mem1", "mem2"} and hits["mem1"].doc.valid_to == old.valid_to
    assert [r.memory_id for r, _ in await store.similar_memories("A", unit(0))] == ["mem2"]


async def test_delete_invalidates_without_removing(store):
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice likes tea")), unit(2)
    )
    assert await store.apply_decision(decision("d2", DecisionOp.DELETE, target="mem1", minutes=30), None)
    gone = await store.get_memory("A", "mem1")
    assert gone is not None and gone.valid_to == T0 + timedelta(minutes=30) and gone.superseded_by is None
    assert await store.list_memories("A") == []
    assert await store.search(SearchQuery(chat_id="A", text="tea", mode="bm25")) == []
    assert await store.similar_memories("A", unit(2)) == []
    q = SearchQuery(chat_id="A", text="tea", mode="bm25", include_superseded=True)
    assert [h.doc.valid_to for h in await store.search(q)] == [gone.valid_to]


def profile(mid: str, lines: list[tuple[str, str]], version: int = 1, minutes: int = 0) -> MemoryRecord:
    """Ann's reading profile: one ``(message id, line)`` a line, all on T0's day."""
    return MemoryRecord(
        memory_id=mid, chat_id="A", kind=MemoryKind.PROFILE, text="\n".join(f"{T0:%Y-%m-%d} {t}" for _, t in lines),
        speaker="Ann", subject="Ann", attribute="profile:reading", entities=["Ann"], version=version,
        valid_from=T0 + timedelta(minutes=minutes), source_message_ids=[m for m, _ in lines], source_event_id="ev1",
    )  # fmt: skip


async def test_a_profile_keeps_its_newest_superseded_versions_only(store):
    """Each version of a profile carries every line of the ones before: past ``KEPT_VERSIONS`` superseded
    versions the oldest go for good (keeping every copy grew a long chat's storage with the square of its
    length); a fact keeps its whole history."""
    n = KEPT_VERSIONS + 3
    lines: list[tuple[str, str]] = []
    for v in range(n):
        lines.append((f"m{v}", f"read book {v}"))
        rec = profile(f"p{v}", list(lines), version=v + 1, minutes=v)
        op, target = (DecisionOp.UPDATE, f"p{v - 1}") if v else (DecisionOp.ADD, None)
        assert await store.apply_decision(decision(f"d{v}", op, rec=rec, target=target, minutes=v), None)
    assert not await store.apply_decision(decision(f"d{n - 1}", DecisionOp.UPDATE, rec=rec, target=f"p{n - 2}"), None)
    every = await store.list_memories("A", live_only=False)
    assert [m.memory_id for m in every] == [f"p{v}" for v in range(n - KEPT_VERSIONS - 1, n)]
    assert [m.memory_id for m in every if m.live] == [f"p{n - 1}"] and await store.get_memory("A", "p0") is None
    q = SearchQuery(chat_id="A", text="book", mode="bm25", include_superseded=True, k=50)
    assert {h.doc.doc_id for h in await store.search(q)} == {m.memory_id for m in every}
    await store.apply_decision(decision("f1", DecisionOp.ADD, rec=record("A", "f1", "Alice lives in Paris")), unit(0))
    for v in range(2, n):  # a fact's versions are all kept
        new = record("A", f"f{v}", f"Alice lives in city {v}", minutes=v).model_copy(update={"version": v})
        await store.apply_decision(decision(f"fd{v}", DecisionOp.UPDATE, rec=new, target=f"f{v - 1}", minutes=v), unit(0))
    assert (await store.get_memory("A", "f1")).superseded_by == "f2"


async def test_a_profile_begun_again_keeps_the_versions_superseded_last(store):
    """A profile emptied (DELETE) and begun again counts its versions from 1: what stays is what was
    superseded last, not the highest version numbers."""
    n = KEPT_VERSIONS + 2
    for v in range(n):
        rec = profile(f"p{v}", [(f"m{i}", f"read book {i}") for i in range(v + 1)], version=v + 1, minutes=v)
        op, target = (DecisionOp.UPDATE, f"p{v - 1}") if v else (DecisionOp.ADD, None)
        await store.apply_decision(decision(f"d{v}", op, rec=rec, target=target, minutes=v), None)
    await store.apply_decision(decision("gone", DecisionOp.DELETE, target=f"p{n - 1}", minutes=n), None)
    for v in range(3):
        rec = profile(f"q{v}", [("m90", "read Dune")] + [(f"m9{i + 1}", f"read book {i}") for i in range(v)],
                      version=v + 1, minutes=n + 1 + v)  # fmt: skip
        op, target = (DecisionOp.UPDATE, f"q{v - 1}") if v else (DecisionOp.ADD, None)
        await store.apply_decision(decision(f"e{v}", op, rec=rec, target=target, minutes=n + 1 + v), None)
    every = await store.list_memories("A", live_only=False)
    closed = {m.memory_id for m in every if not m.live}
    assert [m.memory_id for m in every if m.live] == ["q2"] and len(closed) == KEPT_VERSIONS
    assert {"q0", "q1", f"p{n - 1}"} <= closed and "p0" not in closed


async def test_deleting_a_user_trims_their_lines_from_another_persons_profile(store):
    """Bo told of a book Ann read: deleting Bo takes that line out of Ann's profile, which keeps her own."""
    await store.upsert_messages([msg("A", 1, "I read Piranesi", sender="ann", name="Ann"),
                                 msg("A", 2, "Ann read Dune too", sender="bo", name="Bo")], None)  # fmt: skip
    await store.apply_decision(decision("d0", DecisionOp.ADD, rec=profile("p0", [("m1", "read Piranesi")])), None)
    both = profile("p1", [("m1", "read Piranesi"), ("m2", "read Dune")], version=2, minutes=5)
    await store.apply_decision(decision("d1", DecisionOp.UPDATE, rec=both, target="p0", minutes=5), None)
    await store.delete_user("A", "bo")
    (left,) = await store.list_memories("A")  # written back, not the older version reopened beside it
    assert left.memory_id == "p1" and left.source_message_ids == ["m1"] and "Dune" not in left.text
    assert [m.memory_id for m in await store.list_memories("A", live_only=False)] == ["p0", "p1"]
    q = SearchQuery(chat_id="A", text="Piranesi", mode="bm25", kinds=["profile"])
    assert [h.doc.doc_id for h in await store.search(q)] == ["p1"]
    assert await store.search(q.model_copy(update={"text": "Dune"})) == []
    await store.delete_user("A", "ann")  # her own profile goes with her
    assert await store.list_memories("A", live_only=False) == []


async def test_similar_memories(store):
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "m1", "Alice lives in Paris")), unit(0)
    )
    bob = record("A", "m2", "Bob lives in Rome", subject="bob")
    await store.apply_decision(decision("d2", DecisionOp.ADD, rec=bob), unit(0, 1))
    await store.upsert_messages([msg("A", 1, "a turn is not a memory")], unit(0)[None, :])
    sims = await store.similar_memories("A", unit(0), k=5)
    assert [(r.memory_id, round(s, 3)) for r, s in sims] == [("m1", 1.0), ("m2", 0.707)]
    assert sims[1][0] == bob
    assert [r.memory_id for r, _ in await store.similar_memories("A", unit(0), subject="bob")] == ["m2"]
    assert await store.similar_memories("A", unit(0), k=0) == []
    assert await store.similar_memories("B", unit(0)) == []


async def test_similar_memories_of_many_vectors_in_one_call_are_each_ones_own(store):
    """similar_memories_many (the consolidator's candidates of a result, one read): row by row what
    similar_memories answers, in order; other chats' memories stay out."""
    await store.apply_decision(decision("d1", DecisionOp.ADD, rec=record("A", "m1", "Alice lives in Paris")),
                               unit(0))  # fmt: skip
    await store.apply_decision(decision("d2", DecisionOp.ADD, rec=record("A", "m2", "Bob is in Rome")), unit(0, 1))
    await store.apply_decision(decision("d3", DecisionOp.ADD, rec=record("A", "m3", "Cats purr")), unit(5))
    await store.apply_decision(decision("d4", DecisionOp.ADD, "B", record("B", "m9", "Elsewhere")), unit(1))
    rows = np.stack([unit(1), unit(5), unit(0), unit(7)])
    many = await store.similar_memories_many("A", rows, k=2)
    one_by_one = [await store.similar_memories("A", v, k=2) for v in rows]
    assert many == one_by_one
    assert [[r.memory_id for r, _ in found] for found in many] == [["m2", "m1"], ["m3", "m1"], ["m1", "m2"],
                                                                   ["m1", "m2"]]  # fmt: skip
    assert await store.similar_memories_many("A", rows, k=0) == [[], [], [], []]
    assert await store.similar_memories_many("C", rows[:1]) == [[]]


# ---- search --------------------------------------------------------------------------------------


async def test_chat_isolation_in_every_mode(store):
    await store.upsert_messages([msg("A", 1, "secret project falcon launch")], unit(3)[None, :])
    await store.apply_decision(
        decision("dA", DecisionOp.ADD, rec=record("A", "memA", "falcon is secret")), unit(3)
    )
    await store.upsert_messages([msg("B", 1, "weather is nice")], unit(4)[None, :])
    for mode in ("bm25", "knn", "hybrid"):
        q = SearchQuery(chat_id="B", text="secret falcon", vector=unit(3).tolist(), mode=mode, k=50)
        assert all(h.doc.chat_id == "B" for h in await store.search(q))
        assert {h.doc.chat_id for h in await store.search(q.model_copy(update={"chat_id": "A"}))} == {"A"}
    assert await store.similar_memories("B", unit(3)) == []
    assert await store.get_memory("B", "memA") is None
    assert await store.get_messages("B", ["m1"]) == [msg("B", 1, "weather is nice")]


async def test_chinese_bm25(store):
    texts = ["我下个月要搬到杭州了", "今天天气不错，我们去公园吧", "杭州的西湖很漂亮", "晚饭吃火锅"]
    await store.upsert_messages([msg("A", i, t) for i, t in enumerate(texts)], None)
    hits = await store.search(SearchQuery(chat_id="A", text="杭州", mode="bm25"))
    assert {h.doc.text for h in hits} == {"我下个月要搬到杭州了", "杭州的西湖很漂亮"}
    [top] = await store.search(SearchQuery(chat_id="A", text="他搬到哪里了？", mode="bm25", k=1))
    assert top.doc.text == "我下个月要搬到杭州了"


async def test_kind_and_time_filters(store):
    await store.upsert_messages([msg("A", i, f"coffee talk {i}", minutes=i * 10) for i in range(4)], None)
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice loves coffee", minutes=15)), None
    )
    base = SearchQuery(chat_id="A", text="coffee", mode="bm25", k=20)
    assert {h.doc.kind for h in await store.search(base.model_copy(update={"kinds": ["fact"]}))} == {"fact"}
    assert {h.doc.kind for h in await store.search(base.model_copy(update={"kinds": ["turn"]}))} == {"turn"}
    window = base.model_copy(
        update={"since": T0 + timedelta(minutes=10), "until": T0 + timedelta(minutes=20)}
    )
    assert {h.doc.doc_id for h in await store.search(window)} == {"turn:A:m1", "turn:A:m2", "mem1"}
    naive = window.model_copy(
        update={"since": datetime(2023, 5, 8, 10, 10), "until": datetime(2023, 5, 8, 10, 20)}
    )
    assert {h.doc.doc_id for h in await store.search(naive)} == {"turn:A:m1", "turn:A:m2", "mem1"}
    assert await store.search(base.model_copy(update={"kinds": []})) == []
    assert await store.search(base.model_copy(update={"k": 0})) == []


async def test_knn_filters_and_scores(store):
    msgs = [msg("A", i, f"t{i}", minutes=i) for i in range(4)]
    await store.upsert_messages(msgs, np.stack([unit(0), unit(0, 1), unit(1), unit(2)]))
    hits = await store.search(SearchQuery(chat_id="A", text="", vector=unit(0).tolist(), mode="knn", k=3))
    assert [h.doc.doc_id for h in hits] == ["turn:A:m0", "turn:A:m1", "turn:A:m2"]
    assert hits[0].score == pytest.approx(1.0) and hits[1].scores["cosine"] == pytest.approx(
        2**-0.5, abs=1e-6
    )
    assert hits[2].score == pytest.approx(0.0, abs=1e-6)
    assert [h.scores["knn_rank"] for h in hits] == [1.0, 2.0, 3.0]
    later = SearchQuery(
        chat_id="A", text="", vector=unit(0).tolist(), mode="knn", since=T0 + timedelta(minutes=1)
    )
    assert (await store.search(later))[0].doc.doc_id == "turn:A:m1"
    await store.upsert_messages([msg("A", 9, "t9", minutes=9)], unit(0)[None, :])
    assert [h.doc.doc_id for h in (await store.search(later))[:2]] == ["turn:A:m9", "turn:A:m1"]
    assert await store.search(later.model_copy(update={"vector": None})) == []


async def test_hybrid_fuses_both_rankings(store):
    msgs = [msg("A", 1, "pizza party tonight"), msg("A", 2, "unrelated words"), msg("A", 3, "pizza again")]
    await store.upsert_messages(msgs, np.stack([unit(5), unit(0), unit(1)]))
    q = SearchQuery(chat_id="A", text="pizza", vector=unit(0).tolist(), mode="hybrid", k=3, rrf_k=60)
    hits = await store.search(q)
    by_id = {h.doc.doc_id: h for h in hits}
    assert set(by_id) == {"turn:A:m1", "turn:A:m2", "turn:A:m3"}
    for h in hits:
        expected = sum(1 / (60 + h.scores[r]) for r in ("bm25_rank", "knn_rank") if r in h.scores)
        assert h.score == pytest.approx(expected) == pytest.approx(h.scores["rrf"])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert "bm25" in by_id["turn:A:m1"].scores and by_id["turn:A:m2"].scores["cosine"] == pytest.approx(1.0)
    no_vec = await store.search(q.model_copy(update={"vector": None}))
    assert {h.doc.doc_id for h in no_vec} == {"turn:A:m1", "turn:A:m3"}
    no_text = await store.search(q.model_copy(update={"text": "?"}))
    assert [h.doc.doc_id for h in no_text][:1] == ["turn:A:m2"] and "bm25" not in no_text[0].scores


# ---- topics, chats, deletion, export -------------------------------------------------------------


async def test_topics_tag_turns(store):
    await store.upsert_messages([msg("A", 1, "x one"), msg("A", 2, "x two")], None)
    topic = TopicSummary(
        chat_id="A", topic_id="t1", state="active", message_ids=["m1", "m2", "m-unknown"], participants=["u1"],
        started_at=T0, last_active_at=T0 + timedelta(minutes=2), title="x",
    )  # fmt: skip
    await store.upsert_topic(topic)
    closed = topic.model_copy(update={"state": "closed"})
    await store.upsert_topic(closed)
    earlier = closed.model_copy(
        update={"topic_id": "t0", "started_at": T0 - timedelta(hours=1), "message_ids": []}
    )
    await store.upsert_topic(earlier)
    assert await store.list_topics("A") == [earlier, closed] and await store.list_topics("B") == []
    hits = await store.search(SearchQuery(chat_id="A", text="x", mode="bm25"))
    assert {h.doc.topic_id for h in hits} == {"t1"}


async def test_topics_in_one_write_as_one_at_a_time(store):
    """upsert_topics (a segmenter batch's topics, one write) leaves what upsert_topic would, topic by topic
    in order: a topic given twice keeps its later state, and the turns are tagged by the last one naming
    them; chats stay apart; nothing to write is no write."""
    await store.upsert_messages([msg("A", 1, "x one"), msg("A", 2, "x two"), msg("A", 3, "x three")], None)
    await store.upsert_messages([msg("B", 1, "x other chat")], None)
    active = TopicSummary(
        chat_id="A", topic_id="t1", state="active", message_ids=["m1", "m2"], participants=["u1"],
        started_at=T0, last_active_at=T0 + timedelta(minutes=2),
    )  # fmt: skip
    part = active.model_copy(update={"topic_id": "t2", "state": "split", "message_ids": ["m2", "m3"],
                                     "started_at": T0 + timedelta(minutes=1)})  # fmt: skip
    closed = active.model_copy(update={"state": "closed", "message_ids": ["m1"]})
    other = active.model_copy(update={"chat_id": "B", "topic_id": "t9", "message_ids": ["m1"]})
    await store.upsert_topics([active, part, closed, other])
    await store.upsert_topics([])
    assert await store.list_topics("A") == [closed, part] and await store.list_topics("B") == [other]
    hits = await store.search(SearchQuery(chat_id="A", text="x", mode="bm25"))
    assert {h.doc.doc_id: h.doc.topic_id for h in hits} == {"turn:A:m1": "t1", "turn:A:m2": "t2", "turn:A:m3": "t2"}
    other_hits = await store.search(SearchQuery(chat_id="B", text="x", mode="bm25"))
    assert [h.doc.topic_id for h in other_hits] == ["t9"]


async def test_delete_chat_and_user(store):
    await store.upsert_messages([msg("A", 1, "alpha talk", sender="u1", name="Alice")], unit(0)[None, :])
    await store.upsert_messages([msg("A", 2, "beta talk", sender="u2", name="Bob")], unit(1)[None, :])
    await store.upsert_messages([msg("B", 1, "gamma talk", sender="u1", name="Alice")], None)
    await store.apply_decision(
        decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "Alice likes alpha")), unit(0)
    )
    assert await store.chats() == ["A", "B"]

    assert await store.delete_user("A", "u1") == 3  # message + turn doc + memory doc
    assert [m.sender for m in await store.list_messages("A")] == ["u2"]
    assert await store.list_memories("A", live_only=False) == []
    assert len(await store.list_messages("B")) == 1  # other chat untouched
    q = SearchQuery(chat_id="A", text="alpha talk", vector=unit(0).tolist(), mode="hybrid")
    assert [h.doc.doc_id for h in await store.search(q)] == ["turn:A:m2"]

    assert await store.delete_chat("A") == 2
    assert await store.chats() == ["B"]
    assert await store.search(q) == []
    assert await store.delete_user(None, "u1") == 2
    assert await store.chats() == []


async def test_deleting_a_user_leaves_no_id_of_theirs_in_others_reply_fields(store):
    asked = msg("A", 1, "does anyone have a spare bike pump", sender="u1", name="Alice")
    answer = msg("A", 2, "yes, mine is in the shed", sender="u2", name="Bob").model_copy(update={"reply_to": "m1"})
    later = msg("A", 3, "I can bring it tomorrow", sender="u2", name="Bob").model_copy(
        update={"metadata": {"inferred_reply_to": "m1", "lang": "en"}})
    other = msg("A", 4, "thanks Bob", sender="u3", name="Cem").model_copy(update={"reply_to": "m2"})
    await store.upsert_messages([asked, answer, later, other], None)
    await store.delete_user("A", "u1")
    kept = {m.message_id: m for m in await store.list_messages("A")}
    assert set(kept) == {"m2", "m3", "m4"}
    assert kept["m2"].reply_to == "deleted" and kept["m3"].metadata == {"inferred_reply_to": "deleted", "lang": "en"}
    assert kept["m4"].reply_to == "m2"  # a reply to someone kept is kept
    assert '"m1"' not in json.dumps(await store.export_chat("A"), default=str)


async def test_export_chat(store):
    await store.upsert_messages([msg("A", 1, "hello")], None)
    await store.apply_decision(decision("d1", DecisionOp.ADD, rec=record("A", "mem1", "v1")), None)
    await store.apply_decision(
        decision("d2", DecisionOp.UPDATE, rec=record("A", "mem2", "v2"), target="mem1"), None
    )
    out = await store.export_chat("A")
    assert [m["message_id"] for m in out["messages"]] == ["m1"]
    assert [(m["memory_id"], m["valid_to"] is None) for m in out["memories"]] == [
        ("mem1", False),
        ("mem2", True),
    ]
    assert out["topics"] == [] and out["chat_id"] == "A"


# ---- same inputs, same answers ---------------------------------------------------------------------

CORPUS = {
    "en": [
        ("alice", "Alice", "I am moving to Hangzhou next month for the new job"),
        ("bob", "Bob", "The deploy pipeline failed again on Friday night"),
        ("carol", "Carol", "Let's order pizza for the team lunch on Thursday"),
        ("alice", "Alice", "My cat Mochi knocked the laptop off the desk"),
        ("bob", "Bob", "Release notes are due by Thursday, I will write them"),
        ("dave", "Dave", "The football match was cancelled because of rain"),
        ("carol", "Carol", "Budget review meeting moved to next Monday"),
        ("alice", "Alice", "Pizza again? We had pizza yesterday at the office"),
    ],
    "zh": [
        ("li", "李雷", "我下个月要搬到杭州了，新工作在西湖边"),
        ("han", "韩梅梅", "今天天气不错，我们去公园吧"),
        ("li", "李雷", "杭州的西湖很漂亮，周末一起去"),
        ("wang", "王芳", "晚饭吃火锅还是烤鸭"),
        ("han", "韩梅梅", "周四之前我会写好发布说明"),
        ("wang", "王芳", "部署流水线又失败了，需要重新发布"),
        ("li", "李雷", "我的猫把笔记本电脑推下了桌子"),
    ],
}
FACTS = {
    "en": [("f1", "Alice moves to Hangzhou next month", "Alice"), ("f2", "Bob writes the release notes", "Bob"),
           ("f3", "The team orders pizza on Thursdays", "Carol")],
    "zh": [("f1", "李雷下个月搬到杭州", "李雷"), ("f2", "韩梅梅周四前写好发布说明", "韩梅梅")],
}  # fmt: skip
QUERIES = {
    "en": ["Where is Alice moving?", "pizza lunch", "deploy pipeline failure", "release notes Thursday",
           "cat laptop", "budget meeting Monday", "what happened to the football match"],
    "zh": ["杭州", "他搬到哪里了？", "发布说明什么时候写好", "部署失败", "猫", "去公园"],
}  # fmt: skip


async def _load(store: MemoryStore) -> None:
    for chat, rows in CORPUS.items():
        msgs = [msg(chat, i, text, sender=s, name=n, minutes=i) for i, (s, n, text) in enumerate(rows)]
        await store.upsert_messages(msgs, np.stack([hashed(m.text) for m in msgs]))
        for j, (mid, text, speaker) in enumerate(FACTS[chat]):
            rec = record(chat, f"{chat}-{mid}", text, speaker=speaker, subject=speaker, minutes=30 + j)
            await store.apply_decision(decision(f"d-{chat}-{mid}", DecisionOp.ADD, chat, rec), hashed(text))
    # one superseded version in each chat
    newer = record(
        "en", "f1b", "Alice moved to Hangzhou in June", speaker="Alice", subject="Alice", minutes=40
    )
    await store.apply_decision(
        decision("d-f1b", DecisionOp.UPDATE, "en", newer, "en-f1", 40), hashed(newer.text)
    )
    await store.apply_decision(decision("d-f2x", DecisionOp.DELETE, "zh", None, "zh-f2", 41), None)


@pytest.mark.parametrize("backend", ["es-server", "es-client"])
async def test_same_inputs_same_answers(make_store, backend):
    sqlite, es = await make_store("sqlite", 64), await make_store(backend, 64)
    for s in (sqlite, es):
        await _load(s)
    for chat, queries in QUERIES.items():
        assert await es.list_messages(chat) == await sqlite.list_messages(chat)
        assert await es.list_memories(chat, live_only=False) == await sqlite.list_memories(
            chat, live_only=False
        )
        for text in queries:
            vector = hashed(text)
            for superseded in (False, True):
                q = SearchQuery(
                    chat_id=chat, text=text, vector=vector.tolist(), k=50, include_superseded=superseded
                )
                await _assert_same(sqlite, es, q)
            sims = [await s.similar_memories(chat, vector, k=5) for s in (sqlite, es)]
            _same_ranking(*[[(r.memory_id, c) for r, c in found] for found in sims])
            assert [r for r, _ in sims[0]] == sorted(
                (r for r, _ in sims[1]), key=[r for r, _ in sims[0]].index
            )
    assert await es.chats() == await sqlite.chats() == ["en", "zh"]
    assert await es.export_chat("en") == await sqlite.export_chat("en")


async def _assert_same(sqlite: MemoryStore, es: MemoryStore, q: SearchQuery) -> None:
    """kNN: identical ranking and cosines. BM25: the same matching documents and the same best one
    (FTS5 and Lucene weigh terms alike but not identically). Hybrid: the same candidates and best one."""
    knn = [await s.search(q.model_copy(update={"mode": "knn"})) for s in (sqlite, es)]
    _same_ranking(*[[(h.doc.doc_id, h.score) for h in hits] for hits in knn])
    assert {h.doc.doc_id: h.doc for h in knn[0]} == {h.doc.doc_id: h.doc for h in knn[1]}, q
    bm25 = [await s.search(q.model_copy(update={"mode": "bm25"})) for s in (sqlite, es)]
    assert {h.doc.doc_id: h.doc for h in bm25[0]} == {h.doc.doc_id: h.doc for h in bm25[1]}, q
    assert [h.doc for h in bm25[0][:1]] == [h.doc for h in bm25[1][:1]], q
    hybrid = [await s.search(q.model_copy(update={"mode": "hybrid"})) for s in (sqlite, es)]
    assert {h.doc.doc_id: h.doc for h in hybrid[0]} == {h.doc.doc_id: h.doc for h in hybrid[1]}, q
    assert [h.doc.doc_id for h in hybrid[0][:1]] == [h.doc.doc_id for h in hybrid[1][:1]], q
    for h in hybrid[1]:
        assert set(h.scores) >= {"rrf"} and h.score == pytest.approx(h.scores["rrf"])
        assert ("bm25" in h.scores) == ("bm25_rank" in h.scores) and ("cosine" in h.scores) == (
            "knn_rank" in h.scores
        )


def _same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]], tol: float = 1e-5) -> None:
    """The same ids with the same scores (within ``tol``), both best first: the same ranking up to ties."""
    assert [i for i, _ in a] and len(a) == len(b) and dict(a).keys() == dict(b).keys()
    assert all(abs(dict(a)[i] - s) <= tol for i, s in b)
    for ranked in (a, b):
        assert all(x[1] >= y[1] for x, y in zip(ranked, ranked[1:], strict=False))


# ---- Elasticsearch specifics -----------------------------------------------------------------------


async def test_es_bootstrap_makes_versioned_indices_behind_aliases(make_store):
    store = await make_store("es-auto")
    for kind in ("docs", "messages", "memories", "decisions", "topics"):
        assert list((await store.es.indices.get_alias(name=store.alias(kind))).body) == [
            f"{store.alias(kind)}-v1"
        ]
        assert await store.es.indices.exists_index_template(name=store.alias(kind))
    await store.bootstrap()  # idempotent
    again = await make_store("es-auto")  # a second process bootstraps the same indices
    assert again.dim == DIM


async def test_es_auto_mode_settles_on_one_fusion(make_store):
    store = await make_store("es-auto")
    assert store.fusion == "untried"
    await store.upsert_messages([msg("A", 1, "pizza tonight")], unit(0)[None, :])
    q = SearchQuery(chat_id="A", text="pizza", vector=unit(0).tolist(), mode="hybrid")
    [hit] = await store.search(q)
    assert store.fusion == "server"  # noida-db runs (and explains) the rrf retriever
    assert hit.scores == {"bm25": hit.scores["bm25"], "bm25_rank": 1.0, "cosine": pytest.approx(1.0), "knn_rank": 1.0,
                          "rrf": pytest.approx(2 / (q.rrf_k + 1))}  # fmt: skip
