"""The newest statement of an asked slot wins (retrieval/router/slot_recency.py), in English and Chinese."""

from datetime import UTC, datetime, timedelta

from retrieval.protocols import Doc
from retrieval.router.slot_query import parse
from retrieval.router.slot_recency import asks_current, newest_statement, query_subject, slot_statements

T0 = datetime(2024, 5, 6, 9, tzinfo=UTC)  # a Monday


def doc(i: str, text: str, day: int, speaker: str = "Amy", kind: str = "turn") -> Doc:
    return Doc(doc_id=i, chat_id="c", kind=kind, text=text, speaker=speaker, ts=T0 + timedelta(days=day),
               source_message_ids=[i])


def resolve(query: str, docs: list[Doc], participants: list[str], attr: str, subjects: list[str] = ()):
    sq = parse(query, participants)
    kind = attr.removeprefix("favorite_") if attr.startswith("favorite_") else None
    found = slot_statements(sq, attr, query, docs, subjects=list(subjects) or [query_subject(query)],
                            participants=participants, kind_word=kind)
    head, older = newest_statement(found)
    return head.doc.doc_id if head else None, sorted(s.doc.doc_id for s in older)


def test_current_questions_and_their_subject():
    assert asks_current("Who runs the standup notes now?")
    assert asks_current("年会现在定在哪天？")
    assert not asks_current("Who ran the standup notes in March?")
    assert query_subject("Who is running the standup notes now?") == "standup notes"
    assert query_subject("年会现在定在哪天？") == "年会"
    assert query_subject("现在谁在负责周报？") == "周报"


def test_a_date_said_in_passing_is_the_newest_when():
    docs = [doc("a", "The hackathon is on May 20.", 0),
            doc("b", "Reminder: laptops ready before the hackathon on June 3, please.", 4),
            doc("c", "Anyone bringing snacks to the hackathon?", 6),  # a question: no value
            doc("d", "I loved the last hackathon.", 7)]  # no date: not a statement of when
    assert resolve("When is the hackathon now?", docs, ["Amy"], "when") == ("b", ["a"])


def test_zh_when_restated_with_the_same_date_is_not_superseded():
    docs = [doc("a", "年会定在12月20日。", 0, "老周"), doc("b", "年会还是12月20日，别忘了。", 3, "小林"),
            doc("c", "大家注意，年会改到12月27日了。", 5, "老周")]
    head, older = resolve("年会现在定在哪天？", docs, ["老周", "小林"], "when")
    assert head == "c" and older == ["a", "b"]
    docs[2] = doc("c", "年会的场地订好了，就在12月20日那天。", 5, "老周")
    assert resolve("年会现在定在哪天？", docs, ["老周", "小林"], "when") == ("c", [])


def test_owner_names_that_are_negated_or_speaker_labels_are_not_values():
    docs = [doc("a", "Marcus will take the standup notes.", 0),
            doc("b", "The standup notes are not Marcus's job anymore, Leila has them.", 3, speaker="Tom"),
            doc("c", "Tom: thanks for the standup notes!", 4, kind="summary")]
    head, older = resolve("Who does the standup notes now?", docs, ["Amy", "Tom"], "owner")
    assert head == "b" and older == ["a"]
    zh = [doc("a", "周报交给阿杰写。", 0, "老周"), doc("b", "周报不归阿杰了，小林接手。", 2, "老周")]
    assert resolve("现在谁在负责周报？", zh, ["老周"], "owner") == ("b", ["a"])


def test_person_slots_read_the_person_and_the_domain():
    docs = [doc("a", "I moved to Porto last year.", 0, "Amy"),
            doc("b", "Amy's new flat in Braga has a balcony.", 5, "Tom"),
            doc("c", "Tom moved to Faro.", 6, "Tom"),  # about someone else
            doc("d", "I love the weather today.", 7, "Amy")]  # no living cue
    assert resolve("Where does Amy live now?", docs, ["Amy", "Tom"], "lives_in") == ("b", ["a"])
    zh = [doc("a", "我在字节上班。", 0, "小林"), doc("b", "小林入职阿里了，听说挺忙。", 4, "老周"),
          doc("c", "小林今天请假了。", 6, "老周")]
    assert resolve("小林现在在哪工作？", zh, ["小林", "老周"], "works_at") == ("b", ["a"])


def test_a_liking_that_names_another_kind_is_not_the_asked_favourite():
    docs = [doc("a", "My favourite drink is oolong.", 0), doc("b", "Totally hooked on yuzu soda lately.", 5),
            doc("c", "Best team ever: Arsenal, I love them.", 6)]
    assert resolve("What is Amy's favourite drink now?", docs, ["Amy"], "favorite_drink") == ("b", ["a"])
    zh = [doc("a", "我最喜欢的饮料是豆浆。", 0, "小林"), doc("b", "最近迷上了椰子水。", 3, "小林"),
          doc("c", "我最喜欢的球队是国安。", 4, "小林")]
    assert resolve("小林现在最喜欢的饮料是什么？", zh, ["小林"], "favorite_饮料") == ("b", ["a"])


def test_a_clock_time_taken_back_in_its_own_clause_is_not_the_value():
    docs = [doc("a", "The farewell party opens at 6pm.", 0), doc("b", "Farewell party: not 6pm, it's 7:30pm now.", 2)]
    head, older = resolve("When is the farewell party now?", docs, ["Amy"], "when")
    assert head == "b" and older == ["a"]
    zh = [doc("a", "欢送会晚上六点开始。", 0, "老周"), doc("b", "欢送会不是晚上六点了，改成晚上七点半。", 2, "老周")]
    assert resolve("欢送会现在是几点？", zh, ["老周"], "when") == ("b", ["a"])


def test_a_plain_statement_of_home_needs_no_pronoun_a_vague_one_does():
    zh = [doc("a", "我住在青岛。", 0, "小林"), doc("b", "换城市了，现在住在烟台。", 4, "小林"),
          doc("c", "周末去爬山。", 6, "小林")]
    assert resolve("小林现在住在哪个城市？", zh, ["小林"], "lives_in") == ("b", ["a"])
    en = [doc("a", "I live in Leeds.", 0), doc("b", "Home is Bristol now.", 3), doc("c", "The lunch is at Nando's.", 5)]
    assert resolve("Where does Amy live now?", en, ["Amy"], "lives_in") == ("b", ["a"])
