"""The embedded store's batched decisions: one transaction, the same end state as one call per decision."""

from __future__ import annotations

import pytest

from backends.sqlite.store import SQLiteStore
from retrieval.protocols import SearchQuery
from schemas import DecisionOp
from tests.unit.retrieval.test_sqlite_store import DIM, decision, record, unit


def _decisions():
    return [
        decision("d1", DecisionOp.ADD, rec=record("A", "k1", "Alice lives in Paris")),
        decision("d2", DecisionOp.ADD, rec=record("A", "k2", "Bob likes tea", subject="bob")),
        decision("d1", DecisionOp.ADD, rec=record("A", "k1", "Alice lives in Paris")),  # a repeat: once
        decision(
            "d3", DecisionOp.UPDATE, rec=record("A", "k3", "Alice lives in Berlin", minutes=5), target="k1"
        ),
        decision("d4", DecisionOp.DELETE, target="k2", minutes=90),
        decision("d5", DecisionOp.NOOP, target="k3"),
    ]


VECTORS = [unit(0), unit(1), unit(0), unit(0, 2), None, None]


async def _state(store: SQLiteStore) -> dict:
    q = SearchQuery(
        chat_id="A", text="alice lives", vector=unit(0).tolist(), mode="hybrid", include_superseded=True
    )
    return {
        "memories": [m.model_dump_json() for m in await store.list_memories("A", live_only=False)],
        "live": [m.memory_id for m in await store.list_memories("A")],
        "similar": [(r.memory_id, round(s, 5)) for r, s in await store.similar_memories("A", unit(0))],
        "hits": [(h.doc.doc_id, round(h.score, 5)) for h in await store.search(q)],
    }


@pytest.fixture
async def stores(tmp_path):
    one, batch = SQLiteStore(tmp_path / "one.db", DIM), SQLiteStore(tmp_path / "batch.db", DIM)
    for s in (one, batch):
        await s.bootstrap()
        await s.similar_memories("A", unit(0))  # a cached vector matrix, updated by the writes
    yield one, batch
    for s in (one, batch):
        await s.close()


async def test_a_batch_ends_where_one_call_per_decision_ends(stores):
    one, batch = stores
    applied = [await one.apply_decision(d, v) for d, v in zip(_decisions(), VECTORS, strict=True)]
    assert applied == [True, True, False, True, True, True]
    assert await batch.apply_decisions(_decisions(), VECTORS) == 5
    assert await _state(batch) == await _state(one)
    assert (await _state(batch))["live"] == ["k3"]
    assert await batch.apply_decisions(_decisions(), VECTORS) == 0  # all applied before: nothing changes


async def test_an_invalid_decision_raises_after_the_ones_before_it(stores):
    _, batch = stores
    bad = decision("d9", DecisionOp.ADD, rec=None)  # an ADD without a record
    with pytest.raises(ValueError, match="carries no record"):
        await batch.apply_decisions(
            [*_decisions()[:2], bad, _decisions()[3]], [*VECTORS[:2], None, VECTORS[3]]
        )
    assert [m.memory_id for m in await batch.list_memories("A")] == ["k1", "k2"]  # committed; d3 not reached
