"""Consolidator decisions applied to Elasticsearch: a list in one real-time read and one bulk request.

One call per decision cost two round trips each (an ``mget`` of the decision's state, then a bulk of its
effects), about half of an ingest's requests. :func:`apply_decisions` reads the state of
every decision of the list at once (was it applied; is its target live), works out each decision's effects
in order against that state as the decisions before it leave it (a memory added, then updated, in one
list), and writes them all in one bulk, each decision's record after its own effects: the same end state as
one call per decision (tests/integration/test_store_contract.py). Items of one chat share a shard and are
applied in order.

A bulk that fails in part forgets the decisions of the list, so a redelivery applies them again; their
effects are idempotent (a memory's ``create`` finds it, a close writes the same values).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from agents.profile import kept_versions
from backends.es import mapping as M
from backends.es import queries as Q
from backends.es.indices import BulkError
from retrieval.protocols import check_decision
from schemas import DecisionOp, MemoryDecision, MemoryRecord

Op = tuple[dict[str, Any], dict[str, Any] | None]


class _Store(Protocol):
    es: Any
    refresh: Any

    def alias(self, kind: str) -> str: ...

    def check_vectors(self, vectors: np.ndarray | None, n: int) -> list[list[float] | None] | None: ...

    async def bulk(self, ops: list[Op]) -> list[dict[str, Any]]: ...

    async def scan(
        self, kind: str, query: dict[str, Any], sort: list[str], routing: str | None
    ) -> list[dict[str, Any]]: ...

    def memory_ops(self, record: MemoryRecord, vector: Any) -> list[Op]: ...

    def close_ops(self, chat_id: str, live: MemoryRecord, at: Any, by: str | None) -> list[Op]: ...

    def drop_ops(self, chat_id: str, memory_id: str) -> list[Op]: ...


def _target(decision: MemoryDecision) -> str | None:
    return decision.target_memory_id if decision.op in (DecisionOp.UPDATE, DecisionOp.DELETE) else None


async def apply_decisions(
    store: _Store, decisions: list[MemoryDecision], vectors: list[np.ndarray | None]
) -> int:
    """Apply ``decisions`` in order; returns how many changed the store (re-applied ones do not). An invalid
    decision raises after the ones before it are applied, as one call each would."""
    valid: list[tuple[MemoryDecision, Any]] = []
    error: ValueError | None = None
    for decision, vector in zip(decisions, vectors, strict=True):
        try:
            check_decision(decision)
            vec = store.check_vectors(vector, 1) if vector is not None and decision.record else None
        except ValueError as exc:
            error = exc
            break
        valid.append((decision, None if vec is None else vec[0]))
    applied = await _apply(store, valid) if valid else 0
    if error is not None:
        raise error
    return applied


async def _apply(store: _Store, items: list[tuple[MemoryDecision, Any]]) -> int:
    done, live, stored = await _state(store, [d for d, _ in items])
    ops: list[Op] = []
    fresh: list[tuple[MemoryDecision, int]] = []  # each decision of this call and its record's op index
    for decision, vector in items:
        chat, record = decision.chat_id, decision.record
        key = M.es_id(chat, decision.decision_id)
        if key in done:
            continue
        done.add(key)
        target = _target(decision)
        current = live.get((chat, target)) if target else None
        if target and current is not None:
            by = record.memory_id if decision.op == DecisionOp.UPDATE and record else None
            ops += store.close_ops(chat, current, decision.at, by)
            live[(chat, target)] = None
        if decision.op in (DecisionOp.ADD, DecisionOp.UPDATE) and record is not None:
            ops += store.memory_ops(record, vector)
            if (chat, record.memory_id) not in stored:  # else its create changes nothing (a redelivery)
                live[(chat, record.memory_id)] = record
        ops.append(({"create": {"_index": store.alias("decisions"), "_id": key, "routing": chat}},
                    M.decision_source(decision)))  # fmt: skip
        fresh.append((decision, len(ops) - 1))
    if not fresh:
        return 0
    try:
        results = await store.bulk(ops)
    except BulkError:  # an effect failed: forget the decisions so a redelivery applies them again
        await _forget(store, [d for d, _ in fresh])
        raise
    trims: dict[tuple[str, str | None, str | None], tuple[MemoryRecord, int]] = {}  # one per line of a profile
    for decision, _ in fresh:
        keep = kept_versions(decision.record) if decision.op == DecisionOp.UPDATE else None
        if keep is not None and (r := decision.record) is not None:
            trims[(r.chat_id, r.attribute, r.subject)] = (r, keep)
    for record, keep in trims.values():
        await _drop_beyond(store, record, keep)
    return sum(1 for _, at in fresh if results[at].get("status") == 201)


async def _state(
    store: _Store, decisions: list[MemoryDecision]
) -> tuple[set[str], dict[tuple[str, str], MemoryRecord | None], set[tuple[str, str]]]:
    """In one real-time read: the keys of the decisions applied before, each target's live version (None:
    closed or absent) and the targets stored in any version."""
    keys = list(dict.fromkeys((d.chat_id, M.es_id(d.chat_id, d.decision_id)) for d in decisions))
    targets = list(dict.fromkeys((d.chat_id, t) for d in decisions if (t := _target(d))))
    docs = [{"_index": store.alias("decisions"), "_id": key, "routing": chat, "_source": ["chat_id"]}
            for chat, key in keys]  # fmt: skip
    docs += [{"_index": store.alias("memories"), "_id": M.es_id(chat, mid), "routing": chat}
             for chat, mid in targets]  # fmt: skip
    got = (await store.es.mget(docs=docs))["docs"]
    sources = [d["_source"] if d.get("found") else None for d in got]
    mine = [src if src and src.get("chat_id") == chat else None
            for (chat, _), src in zip([*keys, *targets], sources, strict=True)]  # fmt: skip
    done = {key for (_, key), src in zip(keys, mine[: len(keys)], strict=True) if src}
    live: dict[tuple[str, str], MemoryRecord | None] = {}
    for target, src in zip(targets, mine[len(keys) :], strict=True):
        live[target] = MemoryRecord.model_validate(src["record"]) if src and src.get("valid_to") is None else None
    return done, live, {t for t, src in zip(targets, mine[len(keys) :], strict=True) if src}


async def _forget(store: _Store, decisions: list[MemoryDecision]) -> None:
    ops: list[Op] = [({"delete": {"_index": store.alias("decisions"), "_id": M.es_id(d.chat_id, d.decision_id),
                                  "routing": d.chat_id}}, None) for d in decisions]  # fmt: skip
    await store.bulk(ops)


async def _drop_beyond(store: _Store, record: MemoryRecord, keep: int) -> None:
    """Delete the superseded versions of ``record``'s (attribute, subject) but the ``keep`` superseded last."""
    chat = record.chat_id
    query = Q.build_chat_query(chat, terms={"attribute": [record.attribute or ""], "subject": [record.subject or ""]})
    query["bool"]["filter"].append({"exists": {"field": "valid_to"}})
    closed = await store.scan("memories", query, ["valid_to", "memory_id"], chat)  # superseded first to last
    old = [src["memory_id"] for src in closed[: max(0, len(closed) - keep)]]
    if old:
        await store.bulk([op for memory_id in old for op in store.drop_ops(chat, memory_id)])
