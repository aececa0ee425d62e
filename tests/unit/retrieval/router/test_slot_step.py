"""The "latest statement" label on a time (retrieval.router.slot_step): withheld when a later record of the
head's own exchange names another time (pure; sentences written for this test)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retrieval.protocols import Doc
from retrieval.router.candidates import Cand
from retrieval.router.slot_recency import Statement, stated_times
from retrieval.router.slot_step import _newer_time_said

T0 = datetime(2027, 5, 3, 18, 0, tzinfo=UTC)


def _doc(i: str, kind: str, text: str, minutes: float, sources: list[str], topic: str = "t1") -> Doc:
    return Doc(doc_id=i, chat_id="c", kind=kind, text=text, ts=T0 + timedelta(minutes=minutes),
               topic_id=topic, source_message_ids=sources)  # fmt: skip


def _head() -> Statement:
    doc = _doc("f1", "fact", "Ida booked the ferry for june 14 at 9am", 0, ["m1"])
    return Statement(doc=doc, values=frozenset(stated_times(doc)))


def test_a_record_of_the_heads_exchange_naming_another_time_withholds_the_label():
    rebooked = _doc("s1", "summary", "Ida: got the ferry tickets, june 14 at 9am. Ida: ugh, rebooked it, june 13 at "
                    "6pm.", 20, ["m1", "m3"])  # fmt: skip
    assert _newer_time_said(_head(), [(Cand(doc=rebooked), 1.0)], set(), "When does the ferry sail?")


def test_the_same_record_restating_the_time_keeps_it():
    again = _doc("s1", "summary", "Ida: got the ferry tickets, june 14 at 9am. Max: great, see you at the pier.",
                 20, ["m1", "m2"])  # fmt: skip
    assert not _newer_time_said(_head(), [(Cand(doc=again), 1.0)], set(), "When does the ferry sail?")


def test_a_later_line_of_another_exchange_needs_the_questions_words():
    other = _doc("t9", "turn", "dentist moved to june 20 at 4pm", 60, ["m9"], topic="t2")
    assert not _newer_time_said(_head(), [(Cand(doc=other), 1.0)], set(), "When does the ferry sail?")


def test_the_old_time_said_before_the_head_in_its_exchange_is_no_newer_time():
    head_doc = _doc("f2", "fact", "the ferry sails june 13 at 6pm instead", 10, ["m3"])
    head = Statement(doc=head_doc, values=frozenset(stated_times(head_doc)))
    record = _doc("s2", "summary", "Ida: got the ferry tickets, june 14 at 9am. Ida: ugh, rebooked it, the ferry "
                  "sails june 13 at 6pm instead.", 20, ["m1", "m3"])  # fmt: skip
    assert not _newer_time_said(head, [(Cand(doc=record), 1.0)], set(), "When does the ferry sail?")
