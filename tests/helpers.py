"""Test data builders shared by the suites."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path


def make_messages(n_chats: int, per_chat: int, *, start: datetime | None = None) -> list[dict]:
    """Synthetic but varied chat traffic: interleaved topics, replies, gaps that close topics."""
    start = start or datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    subjects = ["the deploy pipeline", "lunch plans", "the Hangzhou trip", "the cat Mochi", "release notes",
                "the budget review", "a broken laptop", "the football match"]
    people = ["alice", "bob", "carol", "dave"]
    rows = []
    for c in range(n_chats):
        t = start
        for i in range(per_chat):
            t += timedelta(seconds=40 + (i % 7) * 20 + (1800 if i % 50 == 49 else 0))
            subj = subjects[(i // 6 + c) % len(subjects)]
            rows.append({
                "chat_id": f"chat-{c}", "message_id": f"c{c}-m{i}", "sender": people[(i + c) % 4],
                "ts": t.isoformat(), "text": f"About {subj}: note {i} from chat {c}, value {i * 7 % 13}.",
                **({"reply_to": f"c{c}-m{i - 1}"} if i % 3 == 1 else {}),
            })
    return rows


def chat_row(chat: str, i: int, who: str, name: str, t0: datetime, day: float, text: str) -> dict:
    """One input record of chat ``chat``: message ``{chat}-m{i}`` by ``who`` (shown as ``name``), ``day`` days
    after ``t0``."""
    return {"chat_id": chat, "message_id": f"{chat}-m{i}", "sender": who, "sender_name": name,
            "ts": (t0 + timedelta(days=day)).isoformat(), "text": text}  # fmt: skip


def write_jsonl(path: Path, rows: list[dict], bad_lines: list[str] = ()) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    for j, bad in enumerate(bad_lines):
        lines.insert(min(len(lines), 3 + j * 5), bad)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def ask_new_chat(tmp_path: Path, chat: str, lines, question: str, embedder: str, k: int = 5, t0=None):
    """Ingest ``lines`` ((sender, display name, day, text), ...) as chat ``chat`` into a fresh data dir with
    ``embedder`` (the real model), then ask ``question`` as served; the response."""
    from backends.embed.embedder import build_embedder
    from memstream.clients import build_clients, retrieve_as_served
    from memstream.ops import ingest
    from memstream.settings import Settings
    from schemas import RetrieveRequest

    t0 = t0 or datetime(2026, 1, 10, 9, 0, tzinfo=UTC)
    rows = [chat_row(chat, i, who, name, t0, day, text) for i, (who, name, day, text) in enumerate(lines)]
    clients = await build_clients(Settings(data_dir=tmp_path / chat, embedder=embedder),
                                  embedder=build_embedder(embedder, None))  # fmt: skip
    try:
        await ingest(clients, write_jsonl(tmp_path / f"{chat}.jsonl", rows))
        return await retrieve_as_served(clients, RetrieveRequest(chat_id=chat, query=question, k=k))
    finally:
        await clients.close()


# the first and last instants a datetime can hold, in zones either side of UTC: date grounding must not raise
EXTREME_INSTANTS = [
    datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=8))),
    datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-5))),
    datetime.max.replace(tzinfo=UTC),
    datetime(1, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=8))),
    datetime(1, 1, 1, 0, 0, tzinfo=timezone(timedelta(hours=-5))),
    datetime.min.replace(tzinfo=UTC),
]
