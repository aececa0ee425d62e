"""A question only about a time, with nothing said in that time, has no answer (retrieval/router/window_check)."""

from __future__ import annotations

from datetime import UTC, datetime

from retrieval.protocols import Doc
from retrieval.router.query import analyse
from retrieval.router.window_check import empty_window

NOW = datetime(2024, 3, 8, 12, 0, tzinfo=UTC)


def doc(text: str, day: int) -> Doc:
    return Doc(doc_id=f"d{day}{len(text)}", chat_id="c", kind="turn", text=text, speaker="bob",
               ts=datetime(2024, 3, day, 10, 0, tzinfo=UTC), source_message_ids=["m"])  # fmt: skip


def check(question: str, docs: list[Doc]) -> str | None:
    qa = analyse(question, ["Bob", "Alice"], NOW)
    return empty_window(qa.time, qa.keywords, docs)


def test_a_time_only_question_with_nothing_in_its_window_is_empty():
    old = [doc("The launch moved to Monday.", 1), doc("Lunch at noon?", 2)]
    assert check("What happened yesterday?", old) == "yesterday"
    assert check("昨天谁说了什么？", old) == "昨天"
    assert check("What did Bob say last week?", [doc("hi", 8)]) is not None  # a name is no content


def test_something_said_in_the_window_or_about_it_answers():
    assert check("What happened yesterday?", [doc("The launch moved to Monday.", 7)]) is None
    assert check("What happened yesterday?", [doc("Bob hiked yesterday (on 2024-03-07).", 8)]) is None
    assert check("昨天谁说了什么？", [doc("小王昨天(2024-03-07)搬家了。", 8)]) is None


def test_questions_with_content_or_without_a_window_are_left_to_the_abstention_check():
    old = [doc("The launch moved to Monday.", 1)]
    assert check("What did Bob say about the launch yesterday?", old) is None
    assert check("What happened with the launch?", old) is None
    assert check("What happened?", []) is None


def test_a_calendar_date_without_its_year_proves_nothing():
    old = [doc("The launch moved to Monday.", 1)]
    assert check("What happened on March 5?", old) is None  # maybe March 5 of another year
    assert check("3月5号发生了什么？", old) is None
    assert check("What happened on March 5, 2024?", old) == "March 5, 2024"
