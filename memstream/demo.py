"""``memstream demo``: the bundled bilingual sample chat, end to end, on the embedded default."""

from __future__ import annotations

import asyncio
import shutil
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memstream.settings import Settings

QUESTIONS = [
    ("team-alpha", "When is the Atlas launch?"),
    ("team-alpha", "小王现在住在哪里？"),
    ("team-alpha", "Who is writing the release notes and by when?"),
    ("team-alpha", "小白是什么猫？几岁？"),
    ("team-alpha", "团队聚餐是什么时候？"),
    ("team-alpha", "What is Alice's blood type?"),
    ("dm-alice", "When is my dentist appointment?"),
]


def demo_file() -> Path:
    return Path(str(resources.files("memstream") / "data" / "demo_chat.jsonl"))


async def _demo(settings: Settings, out: Console) -> None:
    from memstream.clients import build_clients
    from memstream.ops import ingest
    from retrieval.service import retrieve
    from schemas import RetrieveRequest

    clients = await build_clients(settings)
    try:
        report = await ingest(clients, demo_file())
        out.rule("[bold]memstream demo[/bold]")
        out.print(f"Ingested {report.read} messages from {len(report.chats)} chats "
                  f"({report.rejected} rejected) with embedder '{settings.embedder}'; "
                  f"stages processed {report.stats.processed}.\n")
        for chat_id in sorted(report.chats):
            await _show_chat(clients, chat_id, out)
        out.rule("[bold]Questions[/bold]")
        for chat_id, question in QUESTIONS:
            resp = await retrieve(clients.store, clients.embedder,
                                  RetrieveRequest(chat_id=chat_id, query=question, k=3, mode="routed"),
                                  llm=clients.llm, graph=clients.graph)
            out.print(f"\n[bold cyan]Q ({chat_id}):[/bold cyan] {question}")
            out.print(f"  [dim]type={resp.query_type} strategy={resp.strategy}[/dim]")
            if resp.no_relevant_memory:
                out.print(f"  [yellow]no relevant memory[/yellow] [dim]{resp.abstention_reason or ''}[/dim]")
                continue
            for item in resp.items:
                when = item.timestamp.strftime("%Y-%m-%d %H:%M %z")
                who = f"{item.speaker}: " if item.speaker else ""
                out.print(f"  [{when}] ({item.kind}) {who}{item.text}  "
                          f"[dim]evidence={','.join(item.source_message_ids)} score={item.score:.3f}[/dim]")
        out.print(f"\nData is in {settings.data_dir}/ — try `memstream --help`, "
                  f"`memstream query --chat team-alpha \"...\" --data-dir {settings.data_dir}` or `memstream serve`.")
    finally:
        await clients.close()


async def _show_chat(clients, chat_id: str, out: Console) -> None:
    topics = await clients.store.list_topics(chat_id)
    table = Table(title=f"Topics of {chat_id}", show_lines=False)
    for col in ("state", "started", "messages", "participants"):
        table.add_column(col)
    for t in sorted(topics, key=lambda t: t.started_at):
        table.add_row(t.state, f"{t.started_at:%m-%d %H:%M}", " ".join(t.message_ids), ", ".join(t.participants))
    out.print(table)
    mems = await clients.store.list_memories(chat_id, live_only=False)
    table = Table(title=f"Memories of {chat_id} ({len(mems)} records incl. superseded)")
    for col in ("valid from", "kind", "memory", "valid to", "sources"):
        table.add_column(col)
    for r in sorted(mems, key=lambda r: (r.valid_from, r.kind)):
        table.add_row(f"{r.valid_from:%m-%d %H:%M}", str(r.kind), r.text,
                      f"{r.valid_to:%m-%d %H:%M}" if r.valid_to else "", ",".join(r.source_message_ids))
    out.print(table)


MARKER = "MEMSTREAM_DEMO"


def run_demo(settings: Settings, out: Console) -> None:
    """The demo always starts from an empty memory, in a folder it owns (marked), never a user's data."""
    d = settings.data_dir
    if d.exists() and any(d.iterdir()):
        if not (d / MARKER).exists():
            raise SystemExit(f"{d} holds data that is not the demo's; pick another --data-dir")
        shutil.rmtree(d)
    d.mkdir(parents=True, exist_ok=True)
    (d / MARKER).write_text("created by `memstream demo`; safe to delete\n")
    asyncio.run(_demo(settings, out))
