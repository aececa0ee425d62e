"""Mem0-style consolidation rules: ADD / UPDATE / DELETE / NOOP, idempotency, in-batch supersession."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from agents.config import ConsolidatorConfig, DistillerConfig
from agents.consolidator import (
    candidates_from_result,
    decide,
    decide_batch,
    lexical_similarity,
    memory_id_for,
)
from agents.distiller import distill_extractive
from schemas import (
    CandidateFact,
    ChatMessage,
    DecisionOp,
    DistillJob,
    MemoryDecision,
    MemoryKind,
    MemoryRecord,
    QAPair,
    stable_id,
)

RULES = ConsolidatorConfig()
ADD_ONLY = ConsolidatorConfig(mode="add-only")
T0 = datetime(2023, 5, 8, 10, 0, tzinfo=UTC)
CST = timezone(timedelta(hours=8))


def _job(
    rows: list[tuple[str, str]], start: datetime = T0, topic: str = "t1", chat: str = "chat-1"
) -> DistillJob:
    msgs = [
        ChatMessage(
            chat_id=chat,
            message_id=f"{topic}-m{i}",
            sender=name.lower(),
            sender_name=name,
            ts=start + timedelta(minutes=i),
            text=text,
        )
        for i, (name, text) in enumerate(rows)
    ]
    return DistillJob(job_id=f"job-{topic}", chat_id=chat, topic_id=topic, messages=msgs, at=msgs[-1].ts)


def _facts(rows: list[tuple[str, str]], **kw) -> list[CandidateFact]:
    return distill_extractive(_job(rows, **kw), DistillerConfig()).facts


def _stored(
    text: str,
    *,
    subject: str = "Alice",
    attribute: str | None = None,
    at: datetime = T0 - timedelta(days=30),
    memory_id: str = "mem-old",
    chat: str = "chat-1",
    kind: MemoryKind = MemoryKind.FACT,
) -> MemoryRecord:
    return MemoryRecord(
        memory_id=memory_id,
        chat_id=chat,
        kind=kind,
        text=text,
        speaker=subject,
        subject=subject,
        attribute=attribute,
        topic_id="t0",
        valid_from=at,
        source_message_ids=["old-m1"],
        source_event_id="ev-old",
    )


class Store:
    """The documented semantics of a MemoryDecision, applied to a dict (a reference, not a mock)."""

    def __init__(self, records: list[MemoryRecord] = ()) -> None:
        self.rows = {r.memory_id: r for r in records}

    def apply(self, d: MemoryDecision) -> None:
        if d.op in (DecisionOp.UPDATE, DecisionOp.DELETE) and d.target_memory_id in self.rows:
            old = self.rows[d.target_memory_id]
            if old.live:
                new_id = d.record.memory_id if d.record else None
                self.rows[old.memory_id] = old.model_copy(update={"valid_to": d.at, "superseded_by": new_id})
        if d.op in (DecisionOp.ADD, DecisionOp.UPDATE) and d.record is not None:
            self.rows.setdefault(d.record.memory_id, d.record)

    def similar(self, c: CandidateFact) -> list[tuple[MemoryRecord, float]]:
        pairs = [
            (r, lexical_similarity(c.text, r.text)) for r in self.rows.values() if r.chat_id == c.chat_id
        ]
        return sorted((p for p in pairs if p[1] > 0.2), key=lambda p: -p[1])[:10]

    def live_texts(self) -> set[str]:
        return {r.text for r in self.rows.values() if r.live}


def test_moved_address_updates_and_invalidates_the_old() -> None:
    old = _stored("Alice lives in Paris", attribute="lives_in")
    (cand,) = _facts([("Alice", "I moved to Berlin last month.")])
    d = decide(cand, [(old, 0.71)], RULES, "ev-1")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old"
    assert d.at == cand.event_time == T0
    assert (
        d.record is not None
        and d.record.version == 2
        and d.record.memory_id == stable_id("mem", cand.fact_id)
    )
    assert d.record.valid_from == cand.event_time and d.record.attribute == "lives_in"
    assert d.decision_id == stable_id("decision", cand.fact_id) and d.candidate_fact_id == cand.fact_id
    assert "lives_in" in d.reason and d.source_event_id == "ev-1"


def test_repeated_fact_is_noop() -> None:
    (cand,) = _facts([("Alice", "My cat is named Luna.")])
    same_text = _stored(cand.text, attribute="pet_name:cat")
    assert decide(cand, [(same_text, 0.99)], RULES, "ev").op == DecisionOp.NOOP
    reworded = _stored("Alice has a cat called Luna", attribute="pet_name:cat")
    d = decide(cand, [(reworded, 0.8)], RULES, "ev")
    assert d.op == DecisionOp.NOOP and d.target_memory_id == "mem-old" and "already known" in d.reason
    near = _stored("Alice's cat is named Luna!!", attribute=None)
    assert (
        decide(cand.model_copy(update={"attribute": None}), [(near, 0.97)], RULES, "ev").op == DecisionOp.NOOP
    )


def test_near_duplicate_of_someone_else_is_added() -> None:
    (cand,) = _facts([("Bob", "I went hiking in Moganshan yesterday.")])
    other = _stored("Alice went hiking in Moganshan yesterday.", subject="Alice")
    assert decide(cand, [(other, 0.97)], RULES, "ev").op == DecisionOp.ADD


def test_retraction_deletes_the_live_memory() -> None:
    old = _stored("Alice lives in Paris", attribute="lives_in")
    (cand,) = _facts([("Alice", "I don't live in Paris anymore.")])
    d = decide(cand, [(old, 0.8)], RULES, "ev")
    assert d.op == DecisionOp.DELETE and d.target_memory_id == "mem-old" and d.record is None
    assert d.at == cand.event_time
    unrelated = _stored("Alice lives in Rome", attribute="lives_in")
    assert decide(cand, [(unrelated, 0.8)], RULES, "ev").op == DecisionOp.ADD  # value must match


def test_add_only_mode() -> None:
    (cand,) = _facts([("Alice", "I moved to Berlin last month.")])
    old = _stored("Alice lives in Paris", attribute="lives_in")
    dup = _stored(cand.text, memory_id="mem-dup")
    d = decide(cand, [(old, 0.9), (dup, 1.0)], ADD_ONLY, "ev")
    assert d.op == DecisionOp.ADD and d.record.memory_id == memory_id_for(cand) and d.reason
    applied = _stored(cand.text, memory_id=memory_id_for(cand))
    assert decide(cand, [(applied, 1.0)], ADD_ONLY, "ev").op == DecisionOp.NOOP


def test_reapplying_the_same_event_changes_nothing() -> None:
    store = Store([_stored("Alice lives in Paris", attribute="lives_in")])
    result = distill_extractive(
        _job(
            [
                ("Alice", "I live in Lyon now."),
                ("Bob", "Cool!"),
                ("Alice", "Actually I moved to Berlin last week."),
            ]
        ),
        DistillerConfig(),
    )
    cands = candidates_from_result(result)
    first = decide_batch(cands, [store.similar(c) for c in cands], RULES, result.result_id)
    for d in first:
        store.apply(d)
    snapshot = dict(store.rows)
    again = decide_batch(cands, [store.similar(c) for c in cands], RULES, result.result_id)
    for d in again:
        store.apply(d)
    assert store.rows == snapshot
    assert [d.decision_id for d in again] == [d.decision_id for d in first]
    assert all(d.op == DecisionOp.NOOP for d in again)
    assert "Alice lives in Paris" not in store.live_texts()


def test_in_batch_supersession() -> None:
    cands = _facts(
        [
            ("Alice", "I live in Paris."),
            ("Bob", "Nice city."),
            ("Alice", "Oh wait, I moved to Berlin last week."),
        ]
    )
    decisions = decide_batch(cands, {}, RULES, "ev")
    paris, berlin = decisions[0], decisions[-1]
    assert paris.op == DecisionOp.ADD
    assert berlin.op == DecisionOp.UPDATE and berlin.target_memory_id == paris.record.memory_id
    assert berlin.record.version == 2
    store = Store()
    for d in decisions:
        store.apply(d)
    assert [r.text for r in store.rows.values() if r.live and r.attribute == "lives_in"] == [cands[-1].text]


def test_older_value_is_stored_as_history() -> None:
    live = _stored("Alice lives in Berlin", attribute="lives_in", at=T0 + timedelta(days=10))
    (cand,) = _facts([("Alice", "I live in Paris.")])
    d = decide(cand, [(live, 0.8)], RULES, "ev")
    assert (
        d.op == DecisionOp.ADD
        and d.record.valid_to == live.valid_from
        and d.record.superseded_by == "mem-old"
    )


def test_multi_valued_slots_are_added_not_replaced() -> None:
    old = _stored("Alice likes tea", attribute="likes")
    (cand,) = _facts([("Alice", "I love hiking in the mountains.")])
    assert cand.attribute == "likes"
    assert decide(cand, [(old, 0.7)], RULES, "ev").op == DecisionOp.ADD


def test_refinement_updates() -> None:
    old = _stored("Alice plays violin")
    cand = _facts([("Alice", "I play violin in the city orchestra every Sunday.")])[0]
    d = decide(cand, [(old, 0.75)], RULES, "ev")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old"


def test_other_chats_are_ignored() -> None:
    (cand,) = _facts([("Alice", "My cat is named Luna.")])
    foreign = _stored(cand.text, chat="chat-2")
    assert decide(cand, [(foreign, 1.0)], RULES, "ev").op == DecisionOp.ADD


def test_chinese_update_and_delete() -> None:
    start = datetime(2024, 5, 13, 10, 0, tzinfo=CST)
    old = _stored("小王住在北京", subject="小王", attribute="lives_in")
    moved, retract = _facts([("小王", "我上周搬到杭州了"), ("小王", "我不住在杭州了")], start=start)
    d = decide(moved, [(old, 0.7)], RULES, "ev")
    assert (
        d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-old" and d.record.text.startswith("小王上周")
    )
    decisions = decide_batch([moved, retract], [[(old, 0.7)], [(old, 0.6)]], RULES, "ev")
    assert [x.op for x in decisions] == [DecisionOp.UPDATE, DecisionOp.DELETE]
    assert decisions[1].target_memory_id == decisions[0].record.memory_id


def test_candidates_from_result() -> None:
    result = distill_extractive(
        _job(
            [
                ("Alice", "Hi all"),
                ("Alice", "I moved to Hangzhou last month."),
                ("Bob", "Where do you work now?"),
                ("Alice", "I work at Alibaba."),
                ("Bob", "I will book the restaurant for Friday at 7pm."),
                ("Alice", "We decided to go with the Italian place."),
                ("Bob", "lol"),
            ]
        ),
        DistillerConfig(),
    )
    cands = candidates_from_result(result)
    kinds = [c.kind for c in cands]
    assert kinds.count(MemoryKind.SUMMARY) == 1 and kinds.count(MemoryKind.TITLE) == 1
    assert MemoryKind.QA in kinds and MemoryKind.TASK in kinds and MemoryKind.DECISION in kinds
    summary = next(c for c in cands if c.kind == MemoryKind.SUMMARY)
    assert summary.source_message_ids and set(summary.source_message_ids) < set(result.source_message_ids)
    assert "t1-m0" not in summary.source_message_ids and "t1-m6" not in summary.source_message_ids
    qa = next(c for c in cands if c.kind == MemoryKind.QA)
    assert qa.text.startswith("Q: Bob: Where do you work now? A: Alice: I work at Alibaba")
    assert qa.source_message_ids == ["t1-m2", "t1-m3"] and qa.event_time == T0 + timedelta(minutes=3)
    task = next(c for c in cands if c.kind == MemoryKind.TASK)
    assert task.subject == "Bob" and "2023-05-12" in task.text
    assert len({c.fact_id for c in cands}) == len(cands)
    assert candidates_from_result(result) == cands


def test_newer_summary_of_the_same_topic_updates() -> None:
    old = _stored("Alice: I moved to Paris.", subject=None, kind=MemoryKind.SUMMARY, memory_id="mem-sum")
    old = old.model_copy(update={"topic_id": "t1"})
    result = distill_extractive(_job([("Alice", "I moved to Hangzhou last month.")]), DistillerConfig())
    summary = next(c for c in candidates_from_result(result) if c.kind == MemoryKind.SUMMARY)
    d = decide(summary, [(old, 0.6)], RULES, "ev")
    assert d.op == DecisionOp.UPDATE and d.target_memory_id == "mem-sum"


def test_a_summary_quoting_a_question_claims_the_question_not_its_answer() -> None:
    """A summary sentence that quotes the question of a Q&A pair shows nothing of the answer: it claims the
    question's message only, so the answer's own items are not hidden behind the summary."""
    result = distill_extractive(
        _job([("Mia", "The pottery class moves from Tuesday to Wednesday, sorry! Does that still work for you?"),
              ("Ravi", "Wednesday works, but only after six since my shift ends late.")]),
        DistillerConfig(),
    )
    qa = QAPair(question="Mia: Does that still work for you?", answer="Ravi: Wednesday works, but only after six",
                source_message_ids=["t1-m0", "t1-m1"])  # fmt: skip
    asked = result.model_copy(update={"facts": [], "tasks": [], "qa_pairs": [qa],
                                      "summary": "Mia: Does that still work for you?"})  # fmt: skip
    summary = next(c for c in candidates_from_result(asked) if c.kind == MemoryKind.SUMMARY)
    assert summary.source_message_ids == ["t1-m0"]
    answered = asked.model_copy(update={"summary": "Ravi: Wednesday works, but only after six."})
    summary = next(c for c in candidates_from_result(answered) if c.kind == MemoryKind.SUMMARY)
    assert summary.source_message_ids == ["t1-m1"]
