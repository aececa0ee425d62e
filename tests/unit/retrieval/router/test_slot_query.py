"""Slot questions (retrieval/router/slot_query.py): parse, the current value, superseded values."""

from datetime import UTC, datetime, timedelta

from retrieval.router.slot_query import current_values, parse, states_superseded, superseded_values
from schemas import MemoryKind, MemoryRecord

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def fact(mid: str, subject: str, attribute: str, value: str, days: int, live: bool = True) -> MemoryRecord:
    return MemoryRecord(memory_id=mid, chat_id="c", kind=MemoryKind.FACT, text=f"{subject} {attribute} {value}",
                        subject=subject, attribute=attribute, value=value, source_message_ids=[mid], source_event_id="e",
                        valid_from=T0 + timedelta(days=days),
                        valid_to=None if live else T0 + timedelta(days=days + 1))


def test_questions_name_their_slot_and_subject():
    assert parse("Where does Wendy work now?", ["Wendy"]).attributes[0] == "works_at"
    assert parse("Where does Wendy work now?", ["Wendy"]).person == "Wendy"
    assert parse("小王现在住在哪里？", ["小王"]).attributes[0] == "lives_in"
    assert parse("Which food is Emma's favourite these days?", ["Emma"]).attributes == ("favorite_food",)
    assert parse("杨帆现在最喜欢什么球队？", ["杨帆"]).attributes == ("favorite_球队",)
    assert "when" in parse("机房搬迁现在定在哪天？").attributes
    assert parse("发布说明现在归谁？").attributes == ("owner",)


def test_relatives_and_people_outside_the_chat_are_subjects_too():
    # the subjects distillation gives: a relative of a member, a person talked about (not a member)
    assert parse("张三的老婆在哪上班？", ["张三", "李四"]).person == "张三的老婆"
    assert parse("Where does Bob's sister work now?", ["Bob"]).person == "Bob's sister"
    assert parse("Where does Ana work now?", ["sam", "bot"]).person == "Ana"
    assert parse("Where does Bob live?", ["Bob"]).person == "Bob"  # a member: as before
    assert parse("When is the Atlas launch?", ["Bob"]).person is None  # "Atlas" is no person slot's subject
    assert parse("Where does the Book Club meet?", ["Bob"]).person is None


def test_questions_about_the_past_are_not_slot_questions():
    assert parse("Where did Wendy live before?", ["Wendy"]) is None
    assert parse("小王以前住在哪里？", ["小王"]) is None
    assert parse("How are you?") is None


def test_the_newest_live_value_of_the_asked_subject_wins():
    records = [fact("a", "Wendy", "works_at", "Figma", 1), fact("b", "Wendy", "works_at", "Stripe", 5),
               fact("c", "Bob", "works_at", "Dropbox", 9), fact("d", "Wendy", "lives_in", "Oslo", 9)]
    sq = parse("Where does Wendy work now?", ["Wendy", "Bob"])
    assert [r.memory_id for r in current_values(sq, "Where does Wendy work now?", records)] == ["b"]


def test_event_slots_match_the_event_named_in_the_question():
    records = [fact("a", "office move", "when", "April 14", 1), fact("b", "launch", "when", "May 2", 3)]
    q = "When is the office move now?"
    assert [r.memory_id for r in current_values(parse(q), q, records)] == ["a"]


def test_items_stating_an_earlier_value_are_recognised():
    q = "Where does Wendy work now?"
    sq = parse(q, ["Wendy"])
    now = [fact("b", "Wendy", "works_at", "Stripe", 5)]
    old = superseded_values(sq, q, now, [fact("a", "Wendy", "works_at", "Figma", 1, live=False), *now])
    assert states_superseded("Lunch at the Figma canteen is good", old).memory_id == "b"
    assert states_superseded("Left Figma, joined Stripe", old) is None  # states the current one too
    assert states_superseded("Nice weather", old) is None


def test_a_summary_speaker_label_does_not_state_the_current_value():
    q = "报销现在谁负责？"
    sq = parse(q, ["小王", "小李"])
    now = [fact("b", "报销", "owner", "小李", 5)]
    old = superseded_values(sq, q, now, [fact("a", "报销", "owner", "小王", 1, live=False), *now])
    assert states_superseded("小李: 报销的事小王负责。", old).memory_id == "b"  # 小李 only labels the line
    assert states_superseded("小王: 报销交给小李了。", old) is None  # names the current owner


def test_a_clock_time_is_no_speaker_label():
    q = "When is standup now?"
    sq = parse(q, ["Amy"])
    now = [fact("b", "standup", "when", "10:00", 5)]
    old = superseded_values(sq, q, now, [fact("a", "standup", "when", "9:30", 1, live=False), *now])
    assert states_superseded("Standup moved from 9:30 to 10:00 from Monday.", old) is None  # states the change
    assert states_superseded("Standup is at 9:30 as usual.", old).memory_id == "b"


def test_the_time_of_another_thing_the_question_names_is_no_earlier_value():
    # "When is dinner after the match?": the match's kick-off is not an old time of dinner
    q = "When is dinner after the match now?"
    sq = parse(q, ["Tove"])
    now = [fact("b", "dinner", "when", "20:30", 5)]
    old = superseded_values(sq, q, now, [fact("a", "match", "when", "18:00", 1), fact("c", "dinner", "when", "20:00", 2),
                                         *now])  # fmt: skip
    assert set(old) == {"20:00"}
    assert states_superseded("kick-off is 18:00 sharp", old) is None
    assert states_superseded("dinner booked for 20:00", old).memory_id == "b"
