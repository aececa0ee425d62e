"""Profile records through the embedded pipeline (no embedder): built at consolidation, updated as topics
close (history kept), read by the router for a set question, and gone with a deleted user's messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.clients import build_clients
from memstream.ops import delete, ingest
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import MemoryKind, RetrieveRequest
from tests.helpers import chat_row, write_jsonl

T0 = datetime(2024, 4, 1, 9, 0, tzinfo=UTC)


def _msg(chat: str, i: int, who: str, name: str, day: float, text: str) -> dict:
    return chat_row(chat, i, who, name, T0, day, text)


ROWS = [
    _msg("en", 1, "ann", "Ann", 0, "I just finished reading the novel Piranesi, what a book!"),
    _msg("en", 2, "bo", "Bo", 0.01, "Nice! I have been reading a biography of Ada Lovelace."),
    _msg("en", 3, "ann", "Ann", 9, "This weekend I went hiking on the coastal trail near Big Sur."),
    _msg("en", 4, "bo", "Bo", 9.01, "Sounds great, I went camping by the lake last month."),
    _msg("en", 5, "ann", "Ann", 20, "Started another book yesterday, a fantasy novel by Ursula Le Guin."),
    _msg("en", 6, "bo", "Bo", 20.01, "Le Guin is wonderful, I read her poetry in college."),
    _msg("zh", 1, "wang", "wang", 0, "我上个月去成都旅游了，吃了很多火锅。"),
    _msg("zh", 2, "li", "li", 0.01, "我五一去了西安旅游，看了兵马俑。"),
    _msg("zh", 3, "wang", "wang", 10, "周末我又去杭州旅游了，西湖很美。"),
    _msg("zh", 4, "li", "li", 10.01, "我最近在学小提琴，每天练一小时。"),
]
NAMES = {"wang": "小王", "li": "小李"}


async def test_profiles_are_built_updated_read_and_deleted(tmp_path):
    rows = [r | {"sender_name": NAMES.get(r["sender"], r["sender_name"])} for r in ROWS]
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=None)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", rows))
        store = clients.store
        every = await store.list_memories("en", live_only=False)
        reading = [m for m in every if m.kind == MemoryKind.PROFILE and m.attribute == "profile:reading"
                   and m.subject == "Ann"]  # fmt: skip
        live = [m for m in reading if m.live]
        assert len(live) == 1 and len(reading) >= 2  # updated as the topics closed; the old version kept
        assert live[0].source_message_ids == ["en-m1", "en-m5"]
        assert all(m.live or m.superseded_by for m in reading)
        lines = live[0].text.split("\n")
        assert "Piranesi" in lines[0] and "Le Guin" in lines[1]
        resp = await retrieve(store, None, RetrieveRequest(chat_id="en", query="What books has Ann read?", k=5,
                                                           mode="routed"))  # fmt: skip
        first = resp.items[0]
        assert first.kind == "profile" and set(first.source_message_ids) == {"en-m1", "en-m5"}
        zh = [m for m in await store.list_memories("zh") if m.kind == MemoryKind.PROFILE]
        travel = {m.subject: m for m in zh if m.attribute == "profile:travel"}
        assert travel["小王"].source_message_ids == ["zh-m1", "zh-m3"] and "杭州" in travel["小王"].text
        assert any(m.subject == "小李" and m.attribute == "profile:music" for m in zh)

        await delete(clients, chat_id="en", user="ann")
        left = await store.list_memories("en", live_only=False)
        ann_ids = {r["message_id"] for r in ROWS if r["sender"] == "ann"}
        assert not [m for m in left if m.subject == "Ann" or set(m.source_message_ids) & ann_ids]
        assert any(m.kind == MemoryKind.PROFILE and m.subject == "Bo" and m.live for m in left)
    finally:
        await clients.close()


async def test_an_edit_replaces_its_own_profile_line_only(tmp_path):
    """An edited message after its topic closed: its line changes, the person's other lines stay (an edit
    once crashed the consolidation of the re-distilled topic, and one that kept the same line dropped the
    whole profile)."""
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=None)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", ROWS[:6]))
        edit = ROWS[4] | {"text": "Started another book yesterday, a novel by Ursula Le Guin: The Dispossessed.",
                          "metadata": {"edited_at": (T0 + timedelta(days=21)).isoformat()}}  # fmt: skip
        stats = (await ingest(clients, write_jsonl(tmp_path / "edit.jsonl", [edit]))).stats
        assert stats.dead_letters == 0
        live = [m for m in await clients.store.list_memories("en") if m.kind == MemoryKind.PROFILE
                and m.attribute == "profile:reading" and m.subject == "Ann"]  # fmt: skip
        assert len(live) == 1 and live[0].source_message_ids == ["en-m1", "en-m5"]
        assert "Piranesi" in live[0].text and "Dispossessed" in live[0].text
        again = ROWS[0] | {"metadata": {"edited_at": (T0 + timedelta(days=22)).isoformat()},
                           "text": ROWS[0]["text"] + " "}  # the same line: the profile stays  # fmt: skip
        await ingest(clients, write_jsonl(tmp_path / "again.jsonl", [again]))
        live = [m for m in await clients.store.list_memories("en") if m.kind == MemoryKind.PROFILE
                and m.attribute == "profile:reading" and m.subject == "Ann"]  # fmt: skip
        assert len(live) == 1 and "Piranesi" in live[0].text and "Dispossessed" in live[0].text
    finally:
        await clients.close()
