"""The routed response's items and the per-request analysis memo."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retrieval.protocols import Doc
from retrieval.render import drop_covered
from retrieval.router.candidates import Cand
from retrieval.router.query import analyse
from retrieval.router.recipes import RouterConfig
from retrieval.router.respond import source_messages, to_items
from retrieval.router.state import Run
from retrieval.router.strategies import Ranking
from schemas import RetrievedItem, RetrieveRequest

T = datetime(2024, 3, 1, tzinfo=UTC)
T0 = datetime(2024, 1, 5, 9, 0, tzinfo=UTC)  # the conftest chat's start


def cand(i: int, sources: list[str]) -> Cand:
    doc = Doc(doc_id=f"d{i}", chat_id="c", kind="fact", text=f"memory {i}", ts=T + timedelta(days=i),
              source_message_ids=sources)  # fmt: skip
    return Cand(doc=doc, scores={"bm25": 1.0 / (i + 1)}, fused=1.0 / (i + 1))


def test_items_are_the_first_k_not_covered_by_a_better_one():
    sources = [["m1"], ["m1"], ["m2", "m3"], ["m2"], [], ["m4"], ["m1", "m5"], ["m6"], [], ["m3"], ["m7"]]
    ranking = Ranking(strategy="s", scored=[(cand(i, s), 1.0 - 0.01 * i) for i, s in enumerate(sources)],
                      notes={"d5": "a note"})  # fmt: skip
    every = [RetrievedItem(item_id=c.doc_id, kind="fact", text=c.doc.text, timestamp=c.doc.ts, score=round(s, 6),
                           source_message_ids=list(c.doc.source_message_ids), layer="direct",
                           note=ranking.notes.get(c.doc_id), scores={**c.scores, "fused": round(c.fused, 6)})
             for c, s in ranking.scored]  # fmt: skip
    for k in (1, 3, 5, 20):
        got = to_items(ranking, k, "direct")
        assert got == drop_covered(every)[:k]
    assert [it.item_id for it in to_items(ranking, 5, "direct")] == ["d0", "d2", "d4", "d5", "d6"]
    assert to_items(ranking, 5, "direct")[3].note == "a note"


def test_the_question_is_analysed_once_per_distinct_participants():
    now = T + timedelta(days=30)
    query = "What did Anna and Boris cook last week?"
    run = Run(req=RetrieveRequest(chat_id="c", query=query, k=10, now=now), cfg=RouterConfig(), now=now)
    first = run.analyse(["Anna", "Boris"], T)
    assert run.analyse(["Anna", "Boris"], T) is first
    assert first == analyse(query, ["Anna", "Boris"], now, T)
    other = run.analyse([], None)
    assert other == analyse(query, [], now) and other.names == [] and sorted(first.names) == ["Anna", "Boris"]


async def test_a_record_is_dated_by_its_sources_for_supersession(store, chat):
    # a topic summary is stamped when its topic closed, after a correction of the line it retells
    said = await chat.say("bo", "me, I'll bring the kit at 9", days=0.0)
    fixed = await chat.say("ines", "9 is tight, bring it by 8:30 bo", days=0.01)
    done = await chat.say("bo", "8:30 then", days=0.02)
    summary = Doc(doc_id="s1", chat_id="c1", kind="summary", text="Bo: me, I'll bring the kit at 9.",
                  ts=T0 + timedelta(days=0.02), source_message_ids=[said])  # fmt: skip
    fact = Doc(doc_id="f1", chat_id="c1", kind="fact", text="Ines said bring it by 8:30", ts=T0 + timedelta(days=1),
               source_message_ids=[fixed])  # fmt: skip
    turn = Doc(doc_id="t1", chat_id="c1", kind="turn", text="8:30 then", ts=T0 + timedelta(days=0.02),
               source_message_ids=[done, "gone"])  # fmt: skip
    text, said_at = await source_messages(store, "c1", [Cand(doc=d, scores={}) for d in (summary, fact, turn)])
    assert said_at == {"s1": T0, "f1": T0 + timedelta(days=0.01), "t1": T0 + timedelta(days=0.02)}
    assert text == {"f1": "9 is tight, bring it by 8:30 bo"}  # a memory record's one message
    assert await source_messages(None, "c1", [Cand(doc=summary, scores={})]) == ({}, {})


async def test_a_newer_line_stating_only_another_things_time_replaces_no_slot_answer(store, chat):
    # "When does the quiz start?": a later line gives the time of the dinner after it, and nothing of the quiz
    from retrieval.router.respond import other_attribute
    from retrieval.router.supersede import Item

    q = await chat.say("mo", "quiz starts at 7", days=0.0)
    dinner = await chat.say("mo", "the dinner after the quiz is at 9", days=1.0)
    both = await chat.say("mo", "quiz moved to 7:30 and dinner to 9:30", days=2.0)
    recs = [chat.record("f1", "Quiz starts at 7", "Mo", 0.0, [q], subject="quiz", attribute="when"),
            chat.record("f2", "Dinner after the quiz is at 9", "Mo", 1.0, [dinner], subject="dinner", attribute="when"),
            chat.record("f3", "Quiz moved to 7:30", "Mo", 2.0, [both], subject="quiz", attribute="when"),
            chat.record("f4", "Dinner moved to 9:30", "Mo", 2.0, [both], subject="dinner", attribute="when")]  # fmt: skip
    for r in recs:
        await chat.remember(r)
    now = T0 + timedelta(days=3)
    run = Run(req=RetrieveRequest(chat_id="c1", query="When does the quiz start?", k=10, now=now), cfg=RouterConfig(),
              now=now, slot_answers=["f1"])  # fmt: skip

    def item(i: str, mid: str, days: float) -> Item:
        doc = Doc(doc_id=i, chat_id="c1", kind="turn", text=i, ts=T0 + timedelta(days=days), source_message_ids=[mid])
        return Item.of(doc, {}, 0.0)

    blocked = await other_attribute(store, run, [item("t1", q, 0), item("t2", dinner, 1), item("t3", both, 2)])
    assert blocked == {("f1", "t2")}  # the line that also moves the quiz may still replace it
