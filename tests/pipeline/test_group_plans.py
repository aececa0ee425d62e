"""A group chat planning a meeting the way people do: the place changes with "we'll meet at Marco's instead",
the day with "Thursday moved to Friday 8pm", the book with "I'd rather do X instead of Y", a visit is called
off with "her flight was moved to December" — none of them naming the event again."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import pytest

from language.extract.event_slots import all_slots
from language.time.dates import annotate_dates, find_dates
from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import RetrieveRequest
from tests.helpers import chat_row, write_jsonl

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)  # a Monday
MIN = 1 / 1440


class _Chat:
    """A chat ingested into a fresh embedded store: its live facts, and routed questions ``days`` after T0."""

    def __init__(self, clients, embedder, chat: str) -> None:
        self.clients, self.embedder, self.chat = clients, embedder, chat

    async def facts(self):
        return [m for m in await self.clients.store.list_memories(self.chat) if m.kind == "fact"]

    async def slots(self) -> dict[tuple[str, str], str | None]:
        return {(m.attribute, m.subject): m.value for m in await self.facts() if m.attribute}

    async def ask(self, query: str, *, k: int = 4, days: float = 3, asker: str | None = None):
        req = RetrieveRequest(chat_id=self.chat, query=query, k=k, mode="routed", asker=asker,
                              now=T0 + timedelta(days=days))  # fmt: skip
        return await retrieve(self.clients.store, self.embedder, req)


@contextlib.asynccontextmanager
async def _ingested(tmp_path, minilm, rows: list[dict]):
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="minilm"), embedder=minilm)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", rows))
        yield _Chat(clients, minilm, rows[0]["chat_id"])
    finally:
        await clients.close()


def _rows(chat: str, said: list[tuple[str, int, str]]) -> list[dict]:
    """(name, minutes after T0, text) -> input records of ``chat``."""
    return [chat_row(chat, i, name.lower(), name, T0, minutes * MIN, text)
            for i, (name, minutes, text) in enumerate(said, 1)]  # fmt: skip
NAMES = frozenset({"Priya", "Marco", "Olive", "Hannah"})


@pytest.mark.parametrize(
    ("sentence", "days"),
    [
        # said on Wednesday 2026-03-04: a plan moved is ahead, on both sides of the move
        ("Thursday moved to Friday 8pm btw.", ["2026-03-05", "2026-03-06"]),
        ("The meeting got moved to Monday.", ["2026-03-09"]),
        ("Friday's dinner is postponed until Sunday.", ["2026-03-06", "2026-03-08"]),
        ("Friday 8pm at Marco's, got it.", ["2026-03-06"]),  # an acknowledgement narrates nothing
        ("I went to the gym on Friday.", ["2026-02-27"]),  # narration stays in the past
        ("We moved to Berlin on Friday.", ["2026-02-27"]),  # a home moved, not a plan
    ],
)
def test_days_of_a_moved_plan_are_ahead(sentence, days):
    wednesday = datetime(2026, 3, 4, 6, 0, tzinfo=UTC)
    assert [str(m.day) for m in find_dates(sentence, wednesday)] == days


@pytest.mark.parametrize(
    ("sentence", "slots"),
    [
        ("Correction: Hannah's visit got cancelled, her flight was moved to December.", []),
        ("The meeting was moved to Room B.", []),
        ("The party moved to Friday night", []),
        ("We are moving to Lisbon in May.", [("lives_in", "Lisbon")]),
        ("I moved to Berlin last year.", [("lives_in", "Berlin")]),
    ],
)
def test_something_moved_is_no_home(sentence, slots):
    found = [(f.attribute, f.value) for f in all_slots(sentence, "Olive", NAMES) if f.attribute == "lives_in"]
    assert found == slots


@pytest.mark.parametrize(
    ("sentence", "speaker", "slot"),
    [
        ("Sure, my place works. It's 14 Elm Street, third floor.", "Marco",
         ("address", "Marco", "14 Elm Street, third floor")),
        ("Olive lives at 3 Oak Road.", "Marco", ("address", "Olive", "3 Oak Road")),
        ("我家地址是朝阳区建国路88号3号楼1201", "王强", ("address", "王强", "朝阳区建国路88号3号楼1201")),
        ("The office is at 221B Baker Street", "Marco", None),  # an office is nobody's home
        ("Actually I started eating fish again, so pescatarian now.", "Sam", ("diet", "Sam", "pescatarian")),
        ("我现在吃素了", "李娜", ("diet", "李娜", "吃素")),
        # a change of owner with a time of something else in it: "这周" is no new time of the review
        ("评审材料改成小刘准备吧，我这周要请假。", "李娜", ("owner", "评审材料", "小刘")),
    ],
)
def test_addresses_diets_and_owners(sentence, speaker, slot):
    found = [(f.attribute, f.subject, f.value) for f in all_slots(sentence, speaker, NAMES | {speaker})]
    assert found == ([slot] if slot else [])


def test_a_wh_question_is_no_task():
    from language.extract.tasks import find_task
    from schemas import ChatMessage

    def task(text: str):
        m = ChatMessage(chat_id="c", message_id="m", sender="z", sender_name="张伟", ts=T0, text=text)
        return find_task(text, text, m, "张伟", "王强", [], frozenset({"张伟", "王强"}))

    assert task("深圳那边负责什么？") is None
    assert task("王强负责周报的整理。") is not None


def test_a_change_naming_no_event_takes_the_event_being_planned():
    said = [(f.attribute, f.subject, f.value) for f in all_slots(
        "Small change: my kitchen is being redone, so we'll meet at Marco's flat instead.", "Olive", NAMES,
        event="club")]  # fmt: skip
    assert said == [("where", "club", "Marco's")]
    assert all_slots("Small change: my kitchen is being redone, so we'll meet at Marco's flat instead.", "Olive",
                     NAMES) == []  # fmt: skip
    moved = all_slots("Thursday moved to Friday 8pm btw, my landlord is fixing the heating.", "Marco", NAMES,
                      event="club")  # fmt: skip
    assert [(f.attribute, f.subject, f.value) for f in moved] == [("when", "club", "Friday 8pm")]


ROWS = _rows("bc", [
    ("Priya", 7, "Morning all! Reminder: the book club meets at Olive's place this Thursday at 7pm."),
    ("Marco", 14, "Thanks Priya. I'm bringing the wine as usual."),
    ("Olive", 21, "Small change: my kitchen is being redone, so we'll meet at Marco's flat instead."),
    ("Marco", 28, "Sure, my place works. It's 14 Elm Street, third floor."),
    ("Marco", 665, "I pick The Remains of the Day for next month."),
    ("Marco", 2179, "Actually, change of plan for next month: I'd rather do Klara and the Sun instead of The "
     "Remains of the Day."),
    ("Olive", 2186, "Also my sister Hannah is visiting from Dublin next week."),
    ("Marco", 4200, "Thursday moved to Friday 8pm btw, my landlord is fixing the heating on Thursday."),
    ("Priya", 4207, "Friday 8pm at Marco's, got it."),
    ("Olive", 4214, "Correction: Hannah's visit got cancelled, her flight was moved to December."),
])


async def test_a_group_s_plans_stay_current(tmp_path, minilm):
    async with _ingested(tmp_path, minilm, ROWS) as chat:
        facts = await chat.facts()
        current = {(m.attribute, m.subject): m.value for m in facts if m.attribute in ("when", "where")}
        assert current == {("where", "club"): "Marco's", ("when", "club"): "Friday"}
        live = [m.text for m in facts]
        assert not any("Remains of the Day for next month" in t and "instead" not in t for t in live)
        assert not any("Hannah is visiting" in t for t in live)  # called off
        assert not any("lives in" in t for t in live)  # "her flight was moved to December" moves no one
        assert any("Friday (on 2026-03-06) 8pm at Marco's" in t for t in live)  # "got it" is no past tense
        address = await chat.ask("What is Marco's address?")
        assert "14 Elm Street" in address.items[0].text  # "It's 14 Elm Street, third floor" right after "my place"
        where = await chat.ask("Where is the book club meeting this week?")
        assert "Marco's" in where.items[0].text and "current place of club: Marco's" in (where.items[0].note or "")
        book = await chat.ask("What book are we reading next month?")
        texts = [it.text for it in book.items]
        klara = next(i for i, t in enumerate(texts) if "Klara" in t)
        pick = next(i for i, t in enumerate(texts) if t == "I pick The Remains of the Day for next month.")
        assert klara < pick and "previously" in (book.items[klara].note or "")
        assert "superseded" in (book.items[pick].note or "")
        old = [it for it in book.items if it.kind == "summary" and "Remains" in it.text and "Klara" not in it.text]
        assert old == []  # the summary that only said the old pick is invalidated with it


PRIVATE = _rows("sam", [
    ("Sam", 5, "Hey bot, I'm going to keep notes here. My dentist appointment is on April 14 at 9am."),
    ("Sam", 10, "My daughter Ella starts swimming lessons next Tuesday, 5pm at the Riverside pool."),
    ("Sam", 15, "I'm vegetarian btw, so no meat suggestions please."),
    ("Sam", 2015, "The dentist rescheduled me to April 21, same time."),
    ("Sam", 3515, "Ella's swimming got moved to Wednesdays, the pool was double booked."),
    ("Sam", 6515, "Actually I started eating fish again, so pescatarian now."),
    ("Sam", 8515, "Never mind the dentist, I cancelled it. Will rebook in summer."),
    ("Sam", 9115, "My sister Jo moved from Leeds to Bristol last month."),
])


async def test_a_private_chat_s_notes_stay_current(tmp_path, minilm):
    async with _ingested(tmp_path, minilm, PRIVATE) as chat:
        facts, slots = await chat.facts(), await chat.slots()
        assert slots[("diet", "Sam")] == "pescatarian"  # "so pescatarian now" replaces "I'm vegetarian"
        assert slots[("lives_in", "Jo")] == "Bristol"  # moved from Leeds to Bristol
        assert slots[("when", "swimming")] == "Wednesdays"
        assert not any(m.attribute == "when" and "dentist" in m.text for m in facts)  # called off
        assert not any(m.subject in ("me", "pool", "sister") for m in facts)  # no pronoun, place or kin as event
        got = await chat.ask("When is my dentist appointment?", k=3, days=8, asker="sam")
        dated = [it for it in got.items if "April 14" in it.text or "April 21" in it.text]
        assert dated and all("retracted" in (it.note or "") for it in dated)


ZH = _rows("xm", [
    ("张伟", 7, "大家好，下周二下午三点开项目评审会，在三楼大会议室。"),
    ("李娜", 14, "收到。评审材料我来准备。"),
    ("张伟", 320, "评审会改到周三上午十点了，会议室不变。"),
    ("李娜", 1220, "评审材料改成小刘准备吧，我这周要请假。"),
    ("张伟", 4420, "评审会又推迟了，改到下周一下午两点。"),
])


async def test_a_zh_meeting_moved_twice_keeps_its_room(tmp_path, minilm):
    async with _ingested(tmp_path, minilm, ZH) as chat:
        facts, slots = await chat.facts(), await chat.slots()
        assert slots[("when", "评审会")] == "下周一下午两点" and slots[("where", "评审会")] == "三楼大会议室"
        assert not any(m.attribute == "when" and m.subject.startswith("评审") and "这周" in (m.value or "")
                       for m in facts)  # fmt: skip
        got = await chat.ask("评审会在哪里开？", k=3, days=4)
        assert "三楼大会议室" in got.items[0].text  # "改到下周一下午两点" moves the time, not the room


def test_annotations_of_a_moved_plan():
    wednesday = datetime(2026, 3, 4, 6, 0, tzinfo=UTC)
    text = "Thursday moved to Friday 8pm btw."
    assert annotate_dates(text, find_dates(text, wednesday)) == (
        "Thursday (on 2026-03-05) moved to Friday (on 2026-03-06) 8pm btw."
    )
