"""The newest statement of an asked slot wins (retrieval/router/slot_recency.py), in English and Chinese."""

from datetime import UTC, datetime, timedelta

from retrieval.protocols import Doc
from retrieval.router.slot_query import parse
from retrieval.router.slot_recency import (
    Statement,
    asks_current,
    newest_statement,
    query_subject,
    revises,
    same_subject,
    slot_statements,
)

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


def test_a_trailing_lowercase_word_is_not_part_of_a_name():
    # "Valencia lately" once read as the phrase "Valencia la", and every "… lately" shared the value "la"
    docs = [doc("a", "Nina can't get enough of Arsenal lately.", 0, "Nina"),
            doc("b", "Nina is obsessed with Valencia lately.", 3, "Tom")]
    assert resolve("What team does Nina like most now?", docs, ["Nina", "Tom"], "favorite_team") == ("b", ["a"])


def test_a_liked_thing_in_lower_case_is_the_value():
    docs = [doc("a", "Rumour is Omar loves espresso.", 0, "Tom"), doc("b", "Heard Omar is a big mango lassi fan.", 2, "Tom"),
            doc("c", "Omar said mango lassi beats everything.", 1, "Amy")]  # fmt: skip
    assert resolve("What drink does Omar like most now?", docs, ["Omar", "Tom", "Amy"], "favorite_drink") == ("b", ["a"])


def test_a_place_left_behind_is_not_a_value_of_the_new_statement():
    docs = [doc("a", "Home is Oslo for Raj, ping him if you visit.", 0, "Raj"),
            doc("b", "Raj doesn't live in Oslo anymore, moved to Bergen in May.", 4, "Tom")]
    assert resolve("Which city does Raj live in now?", docs, ["Raj", "Tom"], "lives_in") == ("b", ["a"])
    venue = [doc("a", "Venue update for the retreat: Hotel Alma.", 0),
             doc("b", "Not Hotel Alma anymore: the retreat is at Casa Verde.", 3)]
    assert resolve("Where is the retreat now?", venue, ["Amy"], "where") == ("b", ["a"])


def test_the_speakers_own_line_without_a_subject_is_history_but_never_the_newest():
    docs = [doc("a", "Still at Siemens, busy as ever.", 0, "Lena"), doc("b", "Lena works at Bosch now.", 3, "Tom"),
            doc("c", "At Siemens again for a workshop, Tom says hi.", 5, "Lena")]  # names Tom: not about Lena's job
    assert resolve("Where does Lena work now?", docs, ["Lena", "Tom"], "works_at") == ("b", ["a"])
    docs[2] = doc("c", "At the Siemens office again today.", 5, "Lena")  # newer, but weak: not the head
    assert resolve("Where does Lena work now?", docs, ["Lena", "Tom"], "works_at") == ("b", ["a"])


def test_a_summary_dated_after_the_newest_statement_is_history_unless_it_quotes_it():
    head = doc("h", "周婷最近迷上了拿铁。", 5, "小美")
    old = doc("o", "周婷最爱奶茶。", 1, "小美")
    other = doc("s", "小美: 听说周婷是奶茶的铁粉。", 8, kind="summary")
    quoting = doc("q", "小美: 周婷最近迷上了拿铁。 老周: 收到。", 9, kind="summary")
    found = resolve("周婷现在最喜欢的饮料是什么？", [head, old, other, quoting], ["小美", "老周", "周婷"], "favorite_饮料")
    assert found == ("h", ["o", "s"])


def test_a_live_slot_fact_is_a_statement_whatever_its_wording():
    sq = parse("Where does Priya work now?", ["Priya", "Tom"])
    fact = doc("f", "Priya switched over: Atlassian now, Dropbox is behind her.", 4, "Priya", kind="fact")
    docs = [doc("a", "Priya is at Stripe these days.", 0, "Tom"), fact]
    found = slot_statements(sq, "works_at", sq and "Where does Priya work now?", docs, subjects=[],
                            participants=["Priya", "Tom"], facts=[(fact, "Atlassian")])  # fmt: skip
    head, older = newest_statement(found)
    assert head.doc.doc_id == "f" and [s.doc.doc_id for s in older] == ["a"]
    newer = doc("n", "Priya is with Canva since Monday.", 6, "Tom")
    head, older = newest_statement(slot_statements(sq, "works_at", "Where does Priya work now?", [*docs, newer],
                                                   subjects=[], participants=["Priya", "Tom"],
                                                   facts=[(fact, "Atlassian")]))  # fmt: skip
    assert head.doc.doc_id == "n" and sorted(s.doc.doc_id for s in older) == ["a", "f"]


def test_the_target_of_a_change_is_the_value_not_the_day_it_left():
    docs = [doc("a", "Book club meets every Tuesday at 7pm.", 0, "Lena"),
            doc("b", "Book club moved from 7pm to 8:30pm, same Tuesday.", 2, "Tom"),
            doc("c", "Back to 7pm for book club, the 8:30 slot clashed with football.", 5, "Lena")]  # fmt: skip
    assert resolve("What time is book club now?", docs, ["Lena", "Tom"], "when") == ("c", ["b"])
    zh = [doc("a", "读书会每周四晚上开。", 0, "老周"), doc("b", "读书会从周四挪到周五了。", 2, "小林"),
          doc("c", "读书会还是改回周四吧，周五大家都要加班。", 5, "老周")]  # fmt: skip
    assert resolve("读书会现在是周几？", zh, ["老周", "小林"], "when") == ("c", ["b"])


def test_my_go_to_is_a_liking():
    docs = [doc("a", "Sara's favourite coffee place is Blue Door.", 0, "Tom"),
            doc("b", "Blue Door got so crowded, Kiln is my go-to now.", 4, "Sara")]
    assert resolve("What is Sara's favourite coffee place now?", docs, ["Sara", "Tom"], "favorite_coffee") == ("b", ["a"])


def test_a_month_is_no_employer_and_an_offer_from_a_company_is_no_home():
    docs = [doc("a", "Priya works at Stripe.", 0, "Tom"),
            doc("b", "Priya and others are planning the office move for September 26.", 3, "Priya")]
    assert resolve("Where does Priya work now?", docs, ["Priya", "Tom"], "works_at") == ("a", [])
    homes = [doc("a", "Priya lives in Boston now.", 0, "Tom"), doc("b", "Priya got an offer from Twilio and took it.", 3)]
    assert resolve("Where does Priya live now?", homes, ["Priya", "Tom"], "lives_in") == ("a", [])


def test_taking_a_task_on_in_the_first_person_names_the_speaker():
    docs = [doc("a", "周报我来写吧。", 0, "小钱"), doc("b", "周报以后交给小孙写。", 3, "小钱"),
            doc("s", "小钱: 周报我来写吧。 老周: 好的。", 1, None, kind="summary")]  # fmt: skip
    assert resolve("周报现在谁写？", docs, ["小钱", "小孙", "老周"], "owner") == ("b", ["a", "s"])
    en = [doc("a", "I'll take the grant report.", 0, "Kai"), doc("b", "Grant report is with Lea now.", 4, "Kai")]
    assert resolve("Who owns the grant report now?", en, ["Kai", "Lea"], "owner") == ("b", ["a"])


def test_a_present_tense_slot_question_asks_for_the_current_value():
    assert asks_current("When is the grant report due?") and asks_current("年会在哪办？")
    assert asks_current("Where does Wendy work now?", event=False)
    assert not asks_current("How often does John work out?", event=False)  # a person's slot needs "now"
    assert not asks_current("When was the grant report due?") and not asks_current("Where did Wendy work in 2023?")
    assert not asks_current("以前年会在哪办？") and not asks_current("What did Tom say about the launch?")


def test_the_speaker_telling_of_someone_else_does_not_state_their_own_slot():
    docs = [doc("a", "我最爱喝豆浆。", 0, "田野"), doc("b", "马丽最近特别迷乌龙茶。", 3, "田野")]
    assert resolve("田野最爱的饮料是什么？", docs, ["田野", "马丽"], "favorite_饮料") == ("a", [])
    jobs = [doc("a", "Mike works at Canva.", 0, "Tom"), doc("b", "Home is Denver for Mike, say hi.", 3, "Tom")]
    assert resolve("Where is Mike employed?", jobs, ["Mike", "Tom"], "works_at") == ("a", [])


def test_a_relative_of_the_asked_person_is_not_the_asked_person():
    docs = [doc("a", "我住在南京。", 0, "小美"), doc("b", "小美妹妹上个月搬到深圳了。", 3, "小美", kind="fact"),
            doc("c", "我妹妹住在广州。", 4, "小美")]  # fmt: skip
    assert resolve("小美现在住哪？", docs, ["小美", "阿杰"], "lives_in") == ("a", [])
    en = [doc("a", "I live in Lyon.", 0, "Mia"), doc("b", "My sister Ana lives in Valencia.", 3, "Mia"),
          doc("c", "Mia's brother moved to Porto.", 4, "Bo")]  # fmt: skip
    assert resolve("Where does Mia live now?", en, ["Mia", "Bo"], "lives_in") == ("a", [])


def test_a_second_thing_the_question_names_keeps_its_own_times():
    q = "When is the picnic after the parade now?"
    docs = [doc("a", "Parade kicks off at 10:00 by the bridge.", 0),
            doc("b", "Picnic is at 13:00 in the park.", 1),
            doc("c", "Picnic moved to 14:00, the grass is still wet.", 2)]  # fmt: skip
    head, older = resolve(q, docs, ["Amy"], "when", ["picnic", "parade"])
    assert head == "c" and older == ["a", "b"]  # read together, the parade's time looks like an older picnic time
    by_id = {d.doc_id: d for d in docs}
    kept = [i for i in older if same_subject(by_id[i], by_id[head], ["picnic", "parade"])]
    assert kept == ["b"]
    assert same_subject(by_id["a"], by_id["c"], ["picnic"])  # one subject asked: nothing to tell apart
    zh = [doc("x", "游行上午十点开始", 0), doc("y", "野餐改到下午两点", 2)]
    assert not same_subject(zh[0], zh[1], ["野餐", "游行"])


def test_a_later_line_revises_a_time_only_when_it_names_it_and_says_it_is_off():
    en = Statement(doc("h", "the piano tuner comes thursday afternoon", 0), frozenset())
    assert revises(en, "not thursday, she moved it, it's saturday 11am now") == "replaces"
    assert revises(en, "thursday is out, saturday at 11 instead") == "replaces"
    assert revises(en, "thursday I'm out till 6pm anyway") == "unsure"  # names it and another time, says no change
    assert revises(en, "ok thursday it is") is None and revises(en, "is thursday still ok?") is None
    assert revises(en, "afternoon tea at 4pm?") is None  # a part of the day is no named time
    zh = Statement(doc("z", "调音师周四下午来", 0), frozenset())
    assert revises(zh, "不是周四了，她改到周六上午十一点") == "replaces"
    assert revises(zh, "周四我六点前都不在家") == "unsure"
    assert revises(zh, "周四没问题") is None


def test_the_kind_of_place_a_question_asks_which_one_of_is_no_place_stated():
    # "去诊所拿药" names no clinic of "去哪家诊所拿药？"; "在仁和诊所" does
    docs = [doc("a", "奶奶明天上午要去诊所拿药", 0, speaker="小梅"), doc("b", "奶奶说就在仁和诊所拿药", 1, speaker="小梅")]
    q = "奶奶去哪家诊所拿药？"
    sq = parse(q, ["小梅"])
    found = slot_statements(sq, "where", q, docs, subjects=["拿药"], participants=["小梅"])
    assert [s.doc.doc_id for s in found] == ["b"]


def test_the_kind_of_employer_asked_for_is_no_employer_stated():
    # "单位安排我去培训" names no employer of "在哪个单位上班？"; "去海关报到上班" does
    docs = [doc("a", "阿杰下个月去海关上班了", 0, speaker="小梅"), doc("b", "单位安排阿杰去杭州培训一周", 4, speaker="小梅")]
    q = "阿杰现在在哪个单位上班？"
    sq = parse(q, ["小梅", "阿杰"])
    found = slot_statements(sq, "works_at", q, docs, subjects=[], participants=["小梅", "阿杰"])
    assert [s.doc.doc_id for s in found] == ["a"]
    # "在哪工作" asks where, not which kind of thing: a line saying "工作" still states the job
    q = "阿杰现在在哪工作？"
    found = slot_statements(parse(q, ["小梅", "阿杰"]), "works_at", q, [doc("c", "阿杰在税务局工作", 0, "小梅")],
                            subjects=[], participants=["小梅", "阿杰"])
    assert [s.doc.doc_id for s in found] == ["c"]
