"""Stale items below their current version, annotated, under any strategy (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retrieval.protocols import Doc
from retrieval.router.candidates import Cand
from retrieval.router.currency import apply_currency, build_succession, doc_from_record, heads_to_fetch
from retrieval.router.strategies import Ranking
from schemas import MemoryKind, MemoryRecord

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def rec(mid, text, sources, *, attribute="lives_in", value=None, to=None, by=None, days=0):
    return MemoryRecord(memory_id=mid, chat_id="c", kind=MemoryKind.FACT, text=text, subject="Bob",
                        attribute=attribute, value=value, valid_from=T0 + timedelta(days=days),
                        valid_to=to, superseded_by=by, source_message_ids=list(sources), source_event_id="e")  # fmt: skip


def turn(mid, text, days=0):
    return Cand(doc=Doc(doc_id=f"turn:c:{mid}", chat_id="c", kind="turn", text=text, speaker="Bob",
                        ts=T0 + timedelta(days=days), source_message_ids=[mid]))  # fmt: skip


OLD = rec("f1", "Bob lives in Berlin", ["m1"], value="Berlin", to=T0 + timedelta(days=9), by="f2")
NEW = rec("f2", "Bob moved to Lisbon", ["m9"], value="Lisbon", days=9)
GONE = rec("f3", "Carol's favourite drink is green tea", ["m4"], attribute="favorite_drink", value="green tea",
           to=T0 + timedelta(days=5))  # retracted  # fmt: skip


def test_the_current_version_is_fetched_and_put_above_the_stale_turn():
    succ = build_succession([OLD, GONE, NEW.model_copy(update={"valid_to": None})])
    stale = turn("m1", "I live in Berlin.")
    ranking = Ranking("factual", [(stale, 2.0), (turn("m3", "Berlin is cold"), 1.0)])
    assert heads_to_fetch(succ, [stale], {}) == ["f2"]
    fetched = {"f2": Cand(doc=doc_from_record(NEW))}
    out = apply_currency(ranking, succ, fetched, k=5)
    assert [c.doc_id for c, _ in out.scored][:2] == ["f2", "turn:c:m1"]
    assert out.notes["turn:c:m1"].startswith("superseded (until 2024-03-10) by: Bob moved to Lisbon")
    assert out.notes["f2"] == "previously: Bob lives in Berlin (until 2024-03-10)"
    assert "turn:c:m3" not in out.notes  # another message that names the old place is not stale


def test_a_retraction_is_noted_and_an_edited_turn_is_not_stale():
    succ = build_succession([GONE])
    ranking = Ranking("factual", [(turn("m4", "My favourite drink is green tea."), 1.0)])
    out = apply_currency(ranking, succ, {}, k=5)
    assert out.notes["turn:c:m4"].startswith("retracted")
    edited = Ranking("factual", [(turn("m4", "My favourite drink is coffee."), 1.0)])
    assert apply_currency(edited, succ, {}, k=5).notes == {}


def test_more_detail_is_no_change_of_value():
    detail = rec("f5", "Bob lives in Berlin", ["m1"], attribute=None, to=T0, by="f6")
    assert build_succession([detail]).successor == {}


def test_a_retracted_statement_stays_in_view_below_the_best_live_item():
    succ = build_succession([GONE])
    ranking = Ranking("factual", [(turn("m4", "My favourite drink is green tea."), 2.0),
                                  (turn("m7", "Quit green tea, it's water for me"), 1.0)])  # fmt: skip
    out = apply_currency(ranking, succ, {}, k=5)
    assert [c.doc_id for c, _ in out.scored] == ["turn:c:m7", "turn:c:m4"]
    assert out.notes["turn:c:m4"].startswith("retracted")


def test_a_fact_replaced_by_a_change_makes_its_turn_stale_but_more_detail_does_not():
    guitar = rec("g1", "Bob is learning the guitar", ["m1"], attribute=None, to=T0 + timedelta(days=9), by="g2")
    said = turn("m1", "I'm learning the guitar these days.")
    ranking = Ranking("knowledge_update", [(said, 2.0)])
    succ = build_succession([guitar])
    assert succ.successor == {} and heads_to_fetch(succ, [said], {}) == ["g2"]
    changed = rec("g2", "Bob quit the guitar, he plays the piano now", ["m9"], attribute=None, days=9)
    out = apply_currency(ranking, succ, {"g2": Cand(doc=doc_from_record(changed))}, k=5)
    assert [c.doc_id for c, _ in out.scored] == ["g2", "turn:c:m1"]
    assert out.notes["turn:c:m1"].startswith("superseded (until 2024-03-10) by: Bob quit the guitar")
    detail = rec("g2", "Bob is learning the guitar with a teacher in Porto", ["m9"], attribute=None, days=9)
    out = apply_currency(ranking, succ, {"g2": Cand(doc=doc_from_record(detail))}, k=5)
    assert [c.doc_id for c, _ in out.scored] == ["turn:c:m1"] and out.notes == {}


def test_a_current_version_is_kept_beside_another_fact_of_its_message():
    """A message of two sentences gives two facts; the one that states the new value (the current version of
    a stale fact) is never dropped as covered by its neighbour, which holds the same source message."""
    from retrieval.router.respond import uncovered

    old = rec("h1", "Bob signed for a flat in Utrecht", ["m1"], value="Utrecht", to=T0 + timedelta(days=4), by="h3")
    aside = rec("h2", "Bob said the flat deal fell apart", ["m5"], attribute=None, days=4)
    new = rec("h3", "Bob said it is Leiden now, not Utrecht", ["m5"], attribute=None, days=4)
    succ = build_succession([old, aside, new])
    ranking = Ranking("knowledge_update", [(Cand(doc=doc_from_record(aside)), 3.0), (turn("m1", "Signed in Utrecht!"), 2.0)])
    current = apply_currency(ranking, succ, {"h3": Cand(doc=doc_from_record(new))}, k=5)
    kept = [current.scored[i][0].doc_id for i in uncovered(current, 5)]
    assert "h3" in kept and "h2" in kept  # both facts of m5
    plain = Ranking("factual", [(Cand(doc=doc_from_record(aside)), 3.0), (Cand(doc=doc_from_record(new)), 2.0)])
    assert [plain.scored[i][0].doc_id for i in uncovered(plain, 5)] == ["h2"]  # a mere neighbour stays covered


def test_an_asking_turn_gives_its_place_to_the_pair_that_answers_it():
    """"Is the dinner still at Lupa?" shown alone reads as the answer; its Q&A pair, which ranked lower, carries
    what was said back ("no, we moved it to Ferro"), and the bare question then drops out as covered."""
    from retrieval.router.respond import answered_questions, uncovered

    asked = turn("m2", "is the dinner still at Lupa?", days=1)
    pair = Cand(doc=Doc(doc_id="qa:c:1", chat_id="c", kind="qa", ts=T0 + timedelta(days=1),
                        text="Q: Bob: is the dinner still at Lupa? A: Ann: no, we moved it to Ferro",
                        source_message_ids=["m2", "m3"]))  # fmt: skip
    other = turn("m7", "Lupa does great pasta")
    ranking = Ranking("knowledge_update", [(asked, 3.0), (other, 2.5), (pair, 2.0)])
    out = answered_questions(ranking)
    assert [c.doc_id for c, _ in out.scored] == ["qa:c:1", "turn:c:m2", "turn:c:m7"]
    assert [out.scored[i][0].doc_id for i in uncovered(out, 5)] == ["qa:c:1", "turn:c:m7"]
    # the answering turn of a pair, or a pair already above its question, is left where it is
    answer = turn("m3", "no, we moved it to Ferro", days=1)
    kept = Ranking("knowledge_update", [(answer, 3.0), (pair, 2.0)])
    assert answered_questions(kept).scored == kept.scored
    above = Ranking("knowledge_update", [(pair, 3.0), (asked, 2.0)])
    assert answered_questions(above).scored == above.scored


def test_a_change_of_another_attribute_leaves_the_statement_current_for_the_question():
    """A new time of a match (its version states no place) says nothing of where it is played: asked where,
    the old line stays as it was; asked when, it is superseded."""
    match = rec("p1", "Bob said the derby is at Riverside Park on Saturday at 3pm", ["m1"], attribute="when",
                value="Saturday at 3pm", to=T0 + timedelta(days=2), by="p2")  # fmt: skip
    moved = rec("p2", "Bob said the derby kicks off at 5pm instead", ["m6"], attribute="when", value="5pm", days=2)
    succ = build_succession([match])
    said = turn("m1", "derby is at Riverside Park on Saturday at 3pm")
    ranking = Ranking("factual", [(said, 2.0)])
    fetched = {"p2": Cand(doc=doc_from_record(moved))}
    where = apply_currency(ranking, succ, fetched, k=5, question="Where is the derby played?")
    assert [c.doc_id for c, _ in where.scored] == ["turn:c:m1"] and where.notes == {}
    when = apply_currency(ranking, succ, fetched, k=5, question="What time does the derby start?")
    assert [c.doc_id for c, _ in when.scored] == ["p2", "turn:c:m1"]
    assert when.notes["turn:c:m1"].startswith("superseded")
    zh = rec("z1", "德比周六下午三点在滨江公园踢", ["n1"], attribute="when", value="周六下午三点",
             to=T0 + timedelta(days=2), by="z2")  # fmt: skip
    zh_moved = rec("z2", "德比改到五点开球", ["n6"], attribute="when", value="五点", days=2)
    zh_rank = Ranking("factual", [(turn("n1", "德比周六下午三点在滨江公园踢"), 2.0)])
    out = apply_currency(zh_rank, build_succession([zh]), {"z2": Cand(doc=doc_from_record(zh_moved))}, k=5,
                         question="德比在哪里踢？")  # fmt: skip
    assert out.notes == {}
    out = apply_currency(zh_rank, build_succession([zh]), {"z2": Cand(doc=doc_from_record(zh_moved))}, k=5,
                         question="德比几点开球？")  # fmt: skip
    assert [c.doc_id for c, _ in out.scored][0] == "z2"


def test_a_new_place_no_reader_names_still_replaces_the_old_one():
    """Places are read only where named: a version naming none but giving no time either may be a new place
    ("the school pitch"), and it replaces the old one as any change does."""
    match = rec("q1", "Bob said the derby is at Riverside Park", ["m1"], attribute="where", value="Riverside Park",
                to=T0 + timedelta(days=2), by="q2")  # fmt: skip
    moved = rec("q2", "Bob said the derby moved to the school pitch instead", ["m6"], attribute="where",
                value="the school pitch", days=2)  # fmt: skip
    ranking = Ranking("factual", [(turn("m1", "derby is at Riverside Park"), 2.0)])
    out = apply_currency(ranking, build_succession([match]), {"q2": Cand(doc=doc_from_record(moved))}, k=5,
                         question="Where is the derby played?")  # fmt: skip
    assert [c.doc_id for c, _ in out.scored] == ["q2", "turn:c:m1"]
    assert out.notes["turn:c:m1"].startswith("superseded")
