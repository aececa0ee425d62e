"""Profile memories (agents/profile.py): lines by class, UPDATE with history, edits, both languages."""

from __future__ import annotations

from datetime import UTC, datetime

from agents.profile import PREFIX, class_of, fact_lines, parse_lines, profile_decisions
from agents.profile_lexicon import asked_classes, classes_of
from language.text import clear_text_caches, tokenize
from schemas import CandidateFact, DecisionOp, MemoryKind


def _fact(i: int, text: str, who: str, day: int, subject: str | None = None, **kw) -> CandidateFact:
    return CandidateFact(fact_id=f"f{i}", chat_id="c", topic_id="t", text=text, speaker=who,
                         subject=subject if subject is not None else who,
                         event_time=datetime(2024, 3, day, tzinfo=UTC), source_message_ids=[f"m{i}"], **kw)  # fmt: skip


def test_classes_of_instances_and_sets_in_both_languages():
    assert "reading" in classes_of(set(tokenize("Ann finished reading a novel by Le Guin")))
    assert "pets" in classes_of(set(tokenize("Ann adopted a puppy from the shelter")))
    assert "travel" in classes_of(set(tokenize("小王上个月去了成都旅游")))
    assert "music" in classes_of(set(tokenize("她在学小提琴")))
    assert asked_classes("what books has ann read") == ["reading"]
    assert classes_of(set(tokenize("The weather was nice and the meeting ran late"))) == []
    hobbies = asked_classes("What are Ann's hobbies?")
    assert {"sports", "arts", "outdoors"} <= set(hobbies)
    assert "travel" in asked_classes("小王去过哪些城市")


def test_lines_per_person_and_class_one_per_message():
    facts = [
        _fact(1, "Ann read a novel about dragons.", "Ann", 1),
        _fact(2, "Ann read Dune twice.", "Ann", 2),
        _fact(3, "Bo read the news.", "Bo", 2),
        _fact(4, "Ann does not read comics.", "Ann", 3, negated=True),
        _fact(5, "The weather was nice.", "Ann", 3, subject="weather"),
    ]
    lines = fact_lines(facts, ["Ann", "Bo"])
    assert [ln.message_id for ln in lines[("Ann", "reading")]] == ["m1", "m2"]
    assert lines[("Ann", "reading")][0].text == "read a novel about dragons."  # the subject's name dropped
    assert ("Bo", "reading") in lines
    assert all(ln.message_id not in ("m4", "m5") for v in lines.values() for ln in v)


def test_update_keeps_history_and_lines_trace_to_messages():
    at = datetime(2024, 3, 2, tzinfo=UTC)
    first = profile_decisions(
        "c", [_fact(1, "Ann read a novel about dragons.", "Ann", 1)], ["Ann"], {}, "r1", at
    )
    (add,) = [d for d in first if d.record.attribute == PREFIX + "reading"]
    assert add.op == DecisionOp.ADD and add.record.kind == MemoryKind.PROFILE and add.record.subject == "Ann"
    current = {("Ann", "reading"): [add.record]}
    second = profile_decisions("c", [_fact(2, "Ann read Dune twice.", "Ann", 5)], ["Ann"], current, "r2", at)
    (upd,) = [d for d in second if d.record and class_of(d.record.attribute) == "reading"]
    assert upd.op == DecisionOp.UPDATE and upd.target_memory_id == add.record.memory_id
    assert upd.record.memory_id != add.record.memory_id and upd.record.version == 2
    lines = parse_lines(upd.record)
    assert [ln.message_id for ln in lines] == ["m1", "m2"] == upd.record.source_message_ids
    assert lines[1].text == "read Dune twice." and lines[1].at.day == 5
    again = profile_decisions("c", [_fact(2, "Ann read Dune twice.", "Ann", 5)], ["Ann"],
                              {("Ann", "reading"): [upd.record]}, "r2", at)  # fmt: skip
    assert again == []  # the same topic again changes nothing


def test_edited_message_replaces_or_removes_its_line():
    at = datetime(2024, 3, 2, tzinfo=UTC)
    (add,) = [d for d in profile_decisions("c", [_fact(1, "Ann read a novel.", "Ann", 1)], ["Ann"], {}, "r1", at)
              if class_of(d.record.attribute) == "reading"]  # fmt: skip
    current = {("Ann", "reading"): [add.record]}
    edited = profile_decisions("c", [_fact(1, "Ann read a short story.", "Ann", 1)], ["Ann"], current, "r2", at,
                               replaced=["m1"])  # fmt: skip
    (upd,) = [d for d in edited if d.target_memory_id == add.record.memory_id]
    assert "short story" in upd.record.text and "novel" not in upd.record.text
    retracted = profile_decisions("c", [], ["Ann"], current, "r3", at, replaced=["m1"])
    assert [d.op for d in retracted] == [DecisionOp.DELETE] and retracted[0].record is None


def test_chinese_profile_lines():
    at = datetime(2024, 3, 9, tzinfo=UTC)
    facts = [_fact(1, "小王去了杭州旅游。", "小王", 3), _fact(2, "小王家的狗狗叫豆豆。", "小王", 4)]
    kinds = {
        class_of(d.record.attribute): d.record for d in profile_decisions("c", facts, ["小王"], {}, "r", at)
    }
    assert kinds["travel"].source_message_ids == ["m1"] and "杭州" in kinds["travel"].text
    assert kinds["pets"].source_message_ids == ["m2"]


def test_two_live_versions_merge_into_the_newest():
    at = datetime(2024, 3, 2, tzinfo=UTC)
    (a,) = [
        d.record
        for d in profile_decisions("c", [_fact(1, "Ann read Emma.", "Ann", 1)], ["Ann"], {}, "r1", at)
    ]
    (b,) = [
        d.record
        for d in profile_decisions("c", [_fact(2, "Ann read Dune.", "Ann", 2)], ["Ann"], {}, "r2", at)
    ]
    out = profile_decisions("c", [], ["Ann"], {("Ann", "reading"): [a, b]}, "r3", at)
    deleted = [d for d in out if d.op == DecisionOp.DELETE]
    (upd,) = [d for d in out if d.op == DecisionOp.UPDATE]
    assert [d.target_memory_id for d in deleted] == [a.memory_id] and upd.target_memory_id == b.memory_id
    assert upd.record.source_message_ids == ["m1", "m2"]


def test_a_written_profile_reads_back_as_parsing_it_would():
    """profile_decisions hands parse_lines the lines of each version it writes; they must be what parsing the
    stored text gives (days in the record's zone), so a reader sees the same lines either way."""
    from datetime import timedelta, timezone

    from agents import profile
    from schemas import MemoryRecord

    east = timezone(timedelta(hours=8))
    facts = [_fact(i, f"Ann read book number {i} late at night.", "Ann", 1 + i % 9) for i in range(12)]
    facts = [f.model_copy(update={"event_time": f.event_time.astimezone(east) + timedelta(hours=i)})
             for i, f in enumerate(facts)]  # fmt: skip
    for d in profile_decisions("c", facts, ["Ann"], {}, "r1", datetime(2024, 3, 9, 23, tzinfo=east)):
        handed = parse_lines(d.record)
        stored = MemoryRecord.model_validate_json(d.record.model_dump_json())  # as the store gives it back
        clear_text_caches()
        assert parse_lines(stored) == handed == list(profile._parse(d.record.text, tuple(d.record.source_message_ids),
                                                                   d.record.valid_from))  # fmt: skip
        assert [ln.message_id for ln in handed] == d.record.source_message_ids


def test_classes_of_english_tokens_need_no_jieba():
    """Tokens with no CJK in them meet only the cues' non-CJK tokens, so their classes are read without jieba:
    the same classes as against every cue token, and a set question in a fresh process leaves jieba unloaded
    (it cost ~0.16 s of a `memstream query`)."""
    import subprocess
    import sys

    from agents.profile_lexicon import cue_tokens

    for text in ["Ann finished reading a novel and adopted a puppy", "What activities has Melanie done?",
                 "camping hiking painting guitar sushi Paris", "nothing of a class here"]:  # fmt: skip
        tokens = set(tokenize(text))
        assert classes_of(tokens) == [c for c, cues in cue_tokens().items() if tokens & cues]
    script = (
        "import sys\nfrom datetime import UTC, datetime\nfrom agents.profile import fact_lines\n"
        "from agents.profile_lexicon import asked_classes\nfrom schemas import CandidateFact\n"
        "f = CandidateFact(fact_id='f', chat_id='c', topic_id='t', speaker='Ann', subject='Ann',"
        " text='Ann adopted a puppy and goes hiking every weekend in the hills near the old town with her friends',"
        " event_time=datetime(2024, 3, 1, tzinfo=UTC), source_message_ids=['m'])\n"
        "print(sorted(c for _, c in fact_lines([f], ['Ann'])), asked_classes('How many times has Melanie gone"
        " camping?'), 'rjieba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("['outdoors'] False") and "'pets'" in out, out
