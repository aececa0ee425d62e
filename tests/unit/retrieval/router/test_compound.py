"""Splitting a question that asks several things into parts, and merging the parts' answers (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from retrieval.router.compound import merge_items, parts
from schemas import RetrievedItem


def test_two_questions_in_one_message_are_two_parts():
    assert parts("Which bakery does Omar work at now? And what time does his shift start?") == [
        "Which bakery does Omar work at now", "And what time does his shift start"]


def test_a_comma_before_a_new_question_splits_after_a_question():
    assert parts("Who booked the cabin, and how many nights did they pay for?") == [
        "Who booked the cabin", "how many nights did they pay for"]


def test_a_framing_phrase_before_the_comma_is_not_a_question_of_its_own():
    assert parts("According to Priya, what is the best ramen place in town?") == []
    assert parts("After the move, which gym did Lena join?") == []


def test_a_description_before_a_dash_is_asked_too_it_finds_the_bridge():
    assert parts("The neighbour who fixed the fence — what did they borrow afterwards?") == [
        "The neighbour who fixed the fence", "what did they borrow afterwards"]


def test_chinese_clauses_split_at_commas_and_question_marks():
    assert parts("小周换到哪个部门了？他现在的领导是谁？") == ["小周换到哪个部门了", "他现在的领导是谁"]
    assert parts("上次借相机的那个同事，后来还回来了吗？") == ["上次借相机的那个同事", "后来还回来了吗"]


def test_one_question_is_not_split():
    assert parts("Where is the team dinner on Friday?") == []
    assert parts("周五聚餐在哪家店？") == []


def test_a_part_too_thin_to_search_alone_is_left_to_the_whole_question():
    assert parts("Who moved into the spare room, and since when?") == []


def test_each_part_keeps_the_people_the_question_names():
    assert parts("What did Omar cook on Sunday, and who washed the dishes?", ["Omar"]) == [
        "What did Omar cook on Sunday", "Omar who washed the dishes"]


def _item(i: str) -> RetrievedItem:
    return RetrievedItem(item_id=i, kind="turn", text=i, timestamp=datetime(2026, 1, 1, tzinfo=UTC), score=1.0,
                         source_message_ids=[i])


def test_merge_takes_each_list_best_first_in_turn_once_each_up_to_k():
    whole, first, second = [_item("a"), _item("b"), _item("c")], [_item("b"), _item("d")], [_item("e")]
    assert [x.item_id for x in merge_items([whole, first, second], 10)] == ["a", "b", "e", "d", "c"]
    assert [x.item_id for x in merge_items([whole, first, second], 3)] == ["a", "b", "e"]
    assert merge_items([], 5) == []
