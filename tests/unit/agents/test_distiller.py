"""Extractive distiller on hand-built English and Chinese chats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agents.config import DistillerConfig
from agents.distiller import distill_extractive
from schemas import ChatMessage, DistillJob, DistillResult

CFG = DistillerConfig()
MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
CST = timezone(timedelta(hours=8))


def _job(rows: list[tuple], start: datetime, *, chat_type: str = "group", topic: str = "t1") -> DistillJob:
    msgs = []
    for i, row in enumerate(rows):
        sender, text, *extra = row
        opts = extra[0] if extra else {}
        msgs.append(
            ChatMessage(
                chat_id="chat-1",
                message_id=f"m{i}",
                sender=sender.lower(),
                sender_name=sender,
                ts=start + timedelta(minutes=i),
                text=text,
                chat_type=chat_type,
                **opts,
            )
        )
    return DistillJob(job_id=f"job-{topic}", chat_id="chat-1", topic_id=topic, messages=msgs, at=msgs[-1].ts)


def _fact(result: DistillResult, needle: str):
    found = [f for f in result.facts if needle in f.text]
    assert found, f"no fact containing {needle!r} in {[f.text for f in result.facts]}"
    return found[0]


@pytest.fixture(scope="module")
def english() -> DistillResult:
    rows = [
        ("Alice", "Hey Bob! Good to see you!"),
        ("Bob", "Hi Alice, how are you?"),
        ("Alice", "I moved to Hangzhou last month. My cat is named Luna."),
        ("Bob", "Nice! Where do you work now?"),
        ("Alice", "I work at Alibaba, on the cloud team."),
        ("Bob", "We went hiking in Moganshan last Friday, it was great."),
        ("Alice", "lol"),
        ("Bob", "I will book the restaurant for next Friday at 7pm."),
        ("Alice", "We decided to go with the Italian place."),
        ("Alice", "ok"),
    ]
    return distill_extractive(_job(rows, MONDAY, chat_type="private"), CFG)


def test_first_person_is_resolved_to_the_speaker(english: DistillResult) -> None:
    moved = _fact(english, "moved to Hangzhou")
    assert moved.text.startswith("Alice moved to Hangzhou")
    assert (moved.speaker, moved.subject, moved.attribute, moved.value) == (
        "Alice",
        "Alice",
        "lives_in",
        "Hangzhou",
    )
    assert moved.source_message_ids == ["m2"]
    assert moved.event_time == MONDAY + timedelta(minutes=2)
    assert "(in April 2023)" in moved.text  # "last month" resolved against the message time


def test_my_cat_becomes_the_speakers_cat(english: DistillResult) -> None:
    cat = _fact(english, "cat")
    assert cat.text == "Alice's cat is named Luna."
    assert (cat.subject, cat.attribute, cat.value) == ("Alice", "pet_name:cat", "Luna")


def test_last_friday_is_an_absolute_date(english: DistillResult) -> None:
    hike = _fact(english, "hiking")
    assert "last Friday (on 2023-05-05)" in hike.text
    assert hike.text.startswith("Bob and others went hiking")
    assert "Moganshan" in hike.entities


def test_answer_facts_cite_the_question(english: DistillResult) -> None:
    work = _fact(english, "Alibaba")
    assert work.text.startswith("Alice works at Alibaba")
    assert work.attribute == "works_at" and work.value == "Alibaba"
    assert work.source_message_ids == ["m4", "m3"]
    qa = [q for q in english.qa_pairs if "Where do you work" in q.question]
    assert qa and qa[0].source_message_ids == ["m3", "m4"] and "Alibaba" in qa[0].answer
    assert not any("how are you" in q.question for q in english.qa_pairs)  # small talk is not a Q&A pair


def test_tasks_and_decisions_have_owner_and_due(english: DistillResult) -> None:
    booking = next(t for t in english.tasks if "book the restaurant" in t.text)
    assert booking.owner == "Bob" and not booking.is_decision
    assert booking.due == datetime(2023, 5, 19, 19, 0, tzinfo=UTC)
    assert booking.text.startswith("Bob will book the restaurant")
    decision = next(t for t in english.tasks if t.is_decision)
    assert "Italian place" in decision.text and decision.source_message_ids == ["m8"]


def test_greetings_fillers_and_questions_are_not_facts(english: DistillResult) -> None:
    texts = " | ".join(f.text for f in english.facts)
    for noise in ("Good to see you", "lol", "how are you", "Where do you work"):
        assert noise not in texts
    assert all(f.source_message_ids for f in english.facts)
    assert all(f.text[0].isupper() for f in english.facts)


def test_result_shape(english: DistillResult) -> None:
    assert english.participants == ["Alice", "Bob"]
    assert english.source_message_ids == [f"m{i}" for i in range(10)]
    assert english.started_at == MONDAY and english.ended_at == MONDAY + timedelta(minutes=9)
    assert english.method == "extractive"
    assert english.title and english.summary
    assert len([s for s in english.summary.split(". ") if s]) <= CFG.summary_sentences + 1
    assert english.summary.startswith(("Alice: ", "Bob: "))
    assert ("Alice", "lives_in", "Hangzhou") in {
        (r.subject, r.predicate, r.object) for r in english.relations
    }
    assert "Hangzhou" in english.entities and "Alice" not in english.entities


def test_deterministic_ids(english: DistillResult) -> None:
    rows = [("Alice", "I moved to Hangzhou last month. My cat is named Luna.")]
    a = distill_extractive(_job(rows, MONDAY), CFG)
    b = distill_extractive(_job(rows, MONDAY), CFG)
    assert a == b
    assert len({f.fact_id for f in a.facts}) == len(a.facts) == 2


def test_negation_and_retraction() -> None:
    rows = [
        ("Carol", "I don't live in Paris anymore."),
        ("Carol", "Actually no, I no longer work at Google."),
    ]
    result = distill_extractive(_job(rows, MONDAY), CFG)
    paris, google = _fact(result, "Paris"), _fact(result, "Google")
    assert paris.negated and paris.attribute == "lives_in" and paris.value == "Paris"
    assert google.negated and google.attribute == "works_at"
    assert paris.text == "Carol doesn't live in Paris anymore."


@pytest.fixture(scope="module")
def chinese() -> DistillResult:
    start = datetime(2024, 5, 13, 10, 0, tzinfo=CST)  # a Monday
    rows = [
        ("小王", "大家好"),
        ("小李", "早上好！"),
        ("小王", "我上周五搬到杭州了"),
        ("小李", "你在哪里工作？"),
        ("小王", "在阿里巴巴上班"),
        ("小李", "我的猫叫咪咪，昨天刚满两岁"),
        ("老张", "下周五之前要把方案提交给客户"),
        ("小王", "我来写方案，明天下午3点前发给大家"),
        ("老张", "好的，那就这么定了，用新的报价"),
        ("小李", "我已经不喜欢喝咖啡了"),
        ("小王", "哈哈"),
        ("老张", "@小李 麻烦你下周一订会议室", {"mentions": ["小李"]}),
    ]
    return distill_extractive(_job(rows, start), CFG)


def test_chinese_first_person_and_dates(chinese: DistillResult) -> None:
    moved = _fact(chinese, "杭州")
    assert moved.text == "小王上周五(2024-05-10)搬到杭州了"
    assert (moved.subject, moved.attribute, moved.value) == ("小王", "lives_in", "杭州")
    cat = _fact(chinese, "咪咪")
    assert cat.text.startswith("小李的猫叫咪咪，昨天(2024-05-12)")
    assert (cat.subject, cat.attribute, cat.value) == ("小李", "pet_name:猫", "咪咪")


def test_chinese_dropped_subject_answer(chinese: DistillResult) -> None:
    work = _fact(chinese, "阿里巴巴")
    assert work.text == "小王在阿里巴巴上班"
    assert work.source_message_ids == ["m4", "m3"]
    assert chinese.qa_pairs[0].source_message_ids == ["m3", "m4"]


def test_chinese_negation(chinese: DistillResult) -> None:
    coffee = _fact(chinese, "咖啡")
    assert coffee.negated and coffee.attribute == "likes" and coffee.subject == "小李"


def test_chinese_tasks(chinese: DistillResult) -> None:
    by_owner = {t.owner: t for t in chinese.tasks}
    mine = by_owner["小王"]
    assert mine.text.startswith("小王来写方案，明天(2024-05-14)")
    assert mine.due == datetime(2024, 5, 14, 15, 0, tzinfo=CST)
    assert by_owner["小李"].due == datetime(2024, 5, 20, tzinfo=CST)
    assert by_owner[None].due == datetime(2024, 5, 24, tzinfo=CST) or any(
        t.is_decision for t in chinese.tasks if t.owner is None
    )
    assert any(t.is_decision and "报价" in t.text for t in chinese.tasks)
    assert all(t.source_message_ids for t in chinese.tasks)


def test_chinese_title_summary_entities(chinese: DistillResult) -> None:
    assert "杭州" in chinese.title or "方案" in chinese.title
    assert "上周五" not in chinese.entities and "大家" not in chinese.entities
    assert {"杭州", "阿里巴巴"} <= set(chinese.entities)
    assert chinese.summary.startswith(("小王: ", "小李: ", "老张: "))


def test_empty_and_all_filler_topics() -> None:
    result = distill_extractive(_job([("Alice", "hi"), ("Bob", "hello!"), ("Alice", "👍")], MONDAY), CFG)
    assert result.facts == [] and result.tasks == [] and result.qa_pairs == []
    assert result.summary == "" and result.title == ""


def test_fact_cap_keeps_the_most_informative() -> None:
    rows = [("Dan", f"I visited Museum{i} in Rome yesterday with my sister.") for i in range(12)]
    rows.append(("Dan", "I moved to Berlin last week."))
    result = distill_extractive(_job(rows, MONDAY), CFG.model_copy(update={"max_facts_per_topic": 3}))
    assert len(result.facts) == 3
    assert any(f.attribute == "lives_in" for f in result.facts)
    assert [f.event_time for f in result.facts] == sorted(f.event_time for f in result.facts)


def test_short_answer_to_a_slot_question_becomes_a_fact() -> None:
    rows = [("Alice", "Where do you live now?"), ("Bob", "Hangzhou!"), ("小李", "你住哪？"), ("小王", "杭州")]
    result = distill_extractive(_job(rows, MONDAY), CFG)
    bob = _fact(result, "Bob")
    assert (bob.text, bob.subject, bob.attribute, bob.value) == (
        "Bob lives in Hangzhou",
        "Bob",
        "lives_in",
        "Hangzhou",
    )
    assert bob.source_message_ids == ["m1", "m0"]
    wang = _fact(result, "小王")
    assert (wang.text, wang.attribute) == ("小王住在杭州", "lives_in")


def test_modal_inversion_and_attribution() -> None:
    rows = [("Nate", "What can I say, I love turtles."), ("Nate", "The Louvre opens next Friday.")]
    result = distill_extractive(_job(rows, MONDAY, chat_type="private"), CFG)
    assert _fact(result, "turtles").text == "What can Nate say, Nate loves turtles."
    assert _fact(result, "Louvre").text == "Nate said the Louvre opens next Friday (on 2023-05-19)."


@pytest.mark.parametrize(
    ("rows", "who"),
    [
        ([("Rina", "the bake sale needs someone on the cake stall"), ("Omar", "Lotte said yes! she'll run the cake "
          "stall on saturday")], "Lotte"),  # fmt: skip
        ([("阿兰", "搬家那天谁来帮忙？"), ("小周", "问了大壮。他周六上午来帮忙搬家")], "大壮"),
        ([("Rina", "who runs the cake stall?"), ("Omar", "Lotte said yes! she\u2019ll run the cake stall on "
          "saturday")], "Lotte"),  # fmt: skip
    ],
)
def test_a_summary_sentence_opening_with_a_pronoun_keeps_who_it_is(rows, who):
    summary = distill_extractive(_job(rows, MONDAY), CFG).summary
    assert who in summary, summary
    assert summary.count("run the cake stall") <= 1 and summary.count("周六上午") <= 1  # said once


def test_news_about_a_named_member_is_a_fact_however_plain():
    rows = [("Ben", "morning all"), ("Ola", "Ben looks after the allotment keys"), ("Ola", "nice weather")]
    result = distill_extractive(_job(rows, MONDAY), CFG)
    assert _fact(result, "allotment keys").subject == "Ben"
    assert not [f for f in result.facts if "weather" in f.text]  # a plain line about no one stays out


@pytest.mark.parametrize("rows", [
    [("Ola", "my cousin Fen got the lab job"), ("Rui", "is she still living in Porto?"),
     ("Ola", "nah, moved to Braga in march")],
    [("小周", "我表姐换工作了"), ("小陈", "她还在苏州吗？"), ("小周", "没有，搬到无锡了")],
])  # fmt: skip
def test_an_answer_to_a_question_about_someone_else_is_not_the_speakers_own(rows):
    """"is she still living in Porto?" - "nah, moved to Braga": no home of the one answering."""
    result = distill_extractive(_job(rows, MONDAY), CFG)
    answerer = rows[-1][0]
    assert not [f for f in result.facts if f.attribute == "lives_in" and f.subject == answerer]
    kept = [f.text for f in result.facts] + [f"{q.question} {q.answer}" for q in result.qa_pairs]
    assert any("Braga" in t or "无锡" in t for t in kept)  # what was said is kept
    asked_me = [rows[0], (rows[1][0], "are you still living in Porto?"), (answerer, "nah, moved to Braga in march")]
    own = distill_extractive(_job(asked_me, MONDAY), CFG)
    assert [f.value for f in own.facts if f.attribute == "lives_in" and f.subject == answerer] == ["Braga"]
