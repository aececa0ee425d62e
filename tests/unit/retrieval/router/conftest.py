"""Small hand-built chats in a real SQLiteStore (BM25 only: no embedder, deterministic)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from backends.sqlite.store import SQLiteStore
from schemas import ChatMessage, DecisionOp, MemoryDecision, MemoryKind, MemoryRecord, TopicSummary

T0 = datetime(2024, 1, 5, 9, 0, tzinfo=UTC)


class Chat:
    """Builds one chat: messages (``say``), memory records (``remember`` / ``supersede``), topics."""

    def __init__(self, store: SQLiteStore, chat_id: str = "c1") -> None:
        self.store, self.chat_id, self.n = store, chat_id, 0

    async def say(
        self, sender: str, text: str, *, days: float, reply_to: str | None = None, name: str = ""
    ) -> str:
        self.n += 1
        mid = f"m{self.n}"
        msg = ChatMessage(chat_id=self.chat_id, message_id=mid, sender=sender, sender_name=name or sender.capitalize(),
                          ts=T0 + timedelta(days=days), text=text, reply_to=reply_to)  # fmt: skip
        await self.store.upsert_messages([msg], None)
        return mid

    def record(
        self, mid: str, text: str, speaker: str, days: float, sources: list[str], **kw
    ) -> MemoryRecord:
        return MemoryRecord(memory_id=mid, chat_id=self.chat_id, kind=MemoryKind.FACT, text=text, speaker=speaker,
                            subject=kw.get("subject", speaker.lower()), attribute=kw.get("attribute"),
                            value=kw.get("value"),
                            valid_from=T0 + timedelta(days=days), source_message_ids=sources,
                            source_event_id=f"ev-{mid}", version=kw.get("version", 1))  # fmt: skip

    async def remember(self, rec: MemoryRecord) -> None:
        await self.store.apply_decision(
            MemoryDecision(decision_id=f"d-{rec.memory_id}", op=DecisionOp.ADD, chat_id=self.chat_id, record=rec,
                           reason="test", source_event_id=rec.source_event_id, at=rec.valid_from), None)  # fmt: skip

    async def supersede(self, old_id: str, rec: MemoryRecord) -> None:
        await self.store.apply_decision(
            MemoryDecision(decision_id=f"d-{rec.memory_id}", op=DecisionOp.UPDATE, chat_id=self.chat_id,
                           target_memory_id=old_id, record=rec, reason="test", source_event_id=rec.source_event_id,
                           at=rec.valid_from), None)  # fmt: skip

    async def topic(self, topic_id: str, message_ids: list[str], participants: list[str], state: str) -> None:
        msgs = await self.store.get_messages(self.chat_id, message_ids)
        await self.store.upsert_topic(TopicSummary(chat_id=self.chat_id, topic_id=topic_id, state=state,
                                                   message_ids=message_ids, participants=participants,
                                                   started_at=msgs[0].ts, last_active_at=msgs[-1].ts))  # fmt: skip


@pytest.fixture
async def store(tmp_path):
    s = SQLiteStore(tmp_path / "router.db")
    await s.bootstrap()
    yield s
    await s.close()


@pytest.fixture
def chat(store):
    return Chat(store)
