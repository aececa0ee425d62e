"""Shared data and checks of the deletion tests: chats where one user says a canary detail that nobody
else repeats, and the checks that nothing of that user is left anywhere (reads and bytes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from retrieval.router.classifier import QUERY_TYPES
from retrieval.router.recipes import GraphConfig, RouterConfig
from retrieval.service import retrieve
from schemas import RetrieveRequest

# every answer with the graph's related layer (opt-in when served): its facts must not hold a deleted user either
WITH_RELATED = RouterConfig(graph=GraphConfig(types=list(QUERY_TYPES)))


def _msg(chat: str, i: int, sender: str, name: str, minutes: float, text: str, **kw) -> dict:
    ts = datetime(2024, 5, 6, 9, 0, tzinfo=UTC) + timedelta(minutes=minutes)
    return {"chat_id": chat, "message_id": f"{chat}-m{i}", "sender": sender, "sender_name": name,
            "ts": ts.isoformat(), "text": text, **kw}  # fmt: skip


@dataclass(frozen=True)
class Case:
    chat: str
    user: str
    names: tuple[str, ...]
    canaries: tuple[str, ...]  # strings only the deleted user ever said (checked in every byte)
    rows: list[dict] = field(hash=False)
    queries: tuple[str, ...]
    kept_query: str  # others' information that must still be found after the deletion
    kept_words: tuple[str, ...]

    @property
    def user_ids(self) -> set[str]:
        return {r["message_id"] for r in self.rows if r["sender"] == self.user}


ENGLISH = Case(
    chat="eng",
    user="mallory",
    names=("mallory", "Mallory"),
    canaries=("QUOKKA-7731", "quokka", "kumquat"),
    rows=[
        _msg("eng", 1, "mallory", "Mallory", 0, "Heads up team: my new locker combination is QUOKKA-7731 "
             "and I park in bay 42 near the lifts."),
        _msg("eng", 2, "bob", "Bob", 1, "Thanks, I will keep the locker details private.", reply_to="eng-m1"),
        _msg("eng", 3, "carol", "Carol", 2, "Reminder: the quarterly review meeting is on Friday at 3pm "
             "in room Orion."),
        _msg("eng", 4, "mallory", "Mallory", 3, "I will bring the printed slides for the review meeting on "
             "Friday.", reply_to="eng-m3"),
        _msg("eng", 5, "bob", "Bob", 4, "Great, I will book the projector for the Orion room by Thursday.",
             reply_to="eng-m3"),
        _msg("eng", 6, "carol", "Carol", 90, "Who wants to join the hiking trip to Mount Tai in May?"),
        _msg("eng", 7, "mallory", "Mallory", 91, "Count me in! My favourite hiking snack is zesty kumquat "
             "crackers.", reply_to="eng-m6"),
        _msg("eng", 8, "bob", "Bob", 92, "I am in too, I will bring the big tent and the stove.",
             reply_to="eng-m6"),
        _msg("eng", 9, "carol", "Carol", 93, "Great, we leave from the north gate at 7am on May 18."),
    ],
    queries=("What is Mallory's locker combination?", "What snack does Mallory like on hikes?",
             "Where does Mallory park?", "Who brings the slides to the review meeting?",
             "What did we say about the hiking trip?"),  # fmt: skip
    kept_query="Where is the quarterly review meeting?",
    kept_words=("Orion",),
)

CHINESE = Case(
    chat="zh",
    user="wang",
    names=("wang", "小王"),
    canaries=("紫藤七三九", "紫藤", "藤七", "翡翠湾"),
    rows=[
        _msg("zh", 1, "wang", "小王", 0, "我的门禁密码是紫藤七三九，别告诉别人。我住在翡翠湾小区。"),
        _msg("zh", 2, "li", "李雷", 1, "好的，我会保密。周五下午三点在二号会议室开季度总结会。", reply_to="zh-m1"),
        _msg("zh", 3, "zhao", "赵敏", 2, "我负责准备会议纪要，周四之前发给大家。", reply_to="zh-m2"),
        _msg("zh", 4, "wang", "小王", 3, "我会带投影仪过去，顺便订好奶茶。", reply_to="zh-m2"),
        _msg("zh", 5, "li", "李雷", 4, "那就周五二号会议室见，大家别迟到。", reply_to="zh-m3"),
        _msg("zh", 6, "zhao", "赵敏", 95, "下个月团建去千岛湖，谁报名？"),
        _msg("zh", 7, "wang", "小王", 96, "我报名！我最喜欢翡翠湾的桂花糕，可以带去。", reply_to="zh-m6"),
        _msg("zh", 8, "li", "李雷", 97, "我也去，我来租大巴。", reply_to="zh-m6"),
    ],
    queries=("小王的门禁密码是什么？", "小王住在哪里？", "谁带投影仪？", "团建去哪里？", "小王喜欢吃什么？"),
    kept_query="季度总结会在哪里开？",
    kept_words=("会议室",),
)

CASES = {"en": ENGLISH, "zh": CHINESE}


def contains_canary(text: str | None, case: Case) -> bool:
    return bool(text) and any(c.lower() in text.lower() for c in case.canaries)


def canary_files(data_dir: Path, case: Case) -> dict[str, list[str]]:
    """Every file under ``data_dir`` (databases, -wal, -shm, caches) whose raw bytes hold a canary."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in Path(data_dir).rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        hits = [c for c in case.canaries if c.lower().encode() in data]
        if hits:
            found[str(path.relative_to(data_dir))] = hits
    return found


def check_item(item, case: Case) -> None:
    assert item.speaker not in case.names, item
    assert not set(item.source_message_ids) & case.user_ids, item
    assert not contains_canary(item.text, case), item


async def check_retrieval(clients, case: Case, modes=("routed", "hybrid")) -> None:
    """Every query, in every mode: nothing the user said, by them or derived from them."""
    for mode in modes:
        for query in (*case.queries, case.kept_query):
            req = RetrieveRequest(chat_id=case.chat, query=query, k=10, mode=mode)
            resp = await retrieve(clients.store, clients.embedder, req, llm=clients.llm, graph=clients.graph,
                                  router=WITH_RELATED)  # fmt: skip
            for item in resp.items:
                check_item(item, case)
            assert not contains_canary(resp.context, case), (mode, query, resp.context)


async def check_stored(clients, case: Case) -> None:
    """Memories (every version), topics, the graph and the export hold nothing of the user."""
    store = clients.store
    for m in await store.list_memories(case.chat, live_only=False):
        assert m.speaker not in case.names and not set(m.source_message_ids) & case.user_ids, m
        assert not contains_canary(m.text, case), m
    assert not [m for m in await store.list_messages(case.chat) if m.sender == case.user]
    for t in await store.list_topics(case.chat):
        assert not set(t.message_ids) & case.user_ids and not set(t.participants) & set(case.names), t
    export = await store.export_chat(case.chat)
    assert not contains_canary(str(export), case)
    assert not case.user_ids & {m["message_id"] for m in export["messages"]}
    graph = clients.graph
    if graph is not None:
        for e in await graph.edges(case.chat, include_invalid=True):
            assert not set(e.source_message_ids) & case.user_ids and e.sender != case.user, e
            assert not contains_canary(f"{e.text} {e.fact} {e.subject_name} {e.object_name}", case), e
        for n in await graph.entities(case.chat):
            assert n.sender != case.user and not contains_canary(n.name, case), n


async def check_others_kept(clients, case: Case) -> None:
    """Others' information is still there: a live summary or title without the user (the topics they
    shared were distilled again), the kept fact found."""
    live = await clients.store.list_memories(case.chat)
    assert any(m.kind.value in ("summary", "title") for m in live), live
    req = RetrieveRequest(chat_id=case.chat, query=case.kept_query, k=10, mode="hybrid")
    resp = await retrieve(clients.store, clients.embedder, req)
    assert any(w in item.text for item in resp.items for w in case.kept_words), resp.items
