"""The bot's context for one triggering message, in the order a chat bot needs it, under one token budget:

1. ``reply_chain`` — the triggering message and the messages it replies to (immediate memory);
2. ``active_topic`` — the latest messages of the active topic the trigger belongs to (working memory);
3. ``asker_recent`` — the asker's own recent messages not shown above;
4. long-term memory — routed retrieval (``direct``, ``derived``, ``related`` layers) with what is left.

Each short-term layer gets at most its share of the budget (what it leaves unused flows on); the long-term
layers always keep at least ``memory_min_share``. Selection and rendering are pure; ``build_bot_context``
only reads the store and calls the router.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

from language.time.bounds import shift
from schemas import ChatMessage, RetrieveRequest, RetrieveResponse, TopicSummary, TraceStep
from schemas.retrieval import ContextLayer

DESCRIPTIONS = {
    "reply_chain": "the message that triggered the bot and what it replies to (oldest first)",
    "active_topic": "the latest messages of the conversation the trigger belongs to",
    "asker_recent": "the asker's own recent messages",
}


class ContextConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    reply_depth: int = 8
    topic_messages: int = 12
    asker_messages: int = 5
    asker_window_days: float = 7.0
    shares: dict[str, float] = Field(
        default_factory=lambda: {"reply_chain": 0.2, "active_topic": 0.25, "asker_recent": 0.1}
    )
    memory_min_share: float = 0.4


def message_line(m: ChatMessage) -> str:
    reply = f" (reply to {m.reply_to})" if m.reply_to else ""
    return f"[{m.ts:%Y-%m-%d %H:%M}] {m.display_name}{reply}: {m.text}"


def reply_chain(by_id: dict[str, ChatMessage], trigger_id: str, depth: int) -> list[ChatMessage]:
    """The trigger and its ancestors through ``reply_to`` (or the inferred reply), oldest first (cycles and
    gaps stop the walk)."""
    chain: list[ChatMessage] = []
    current: str | None = trigger_id
    while current and current in by_id and len(chain) < depth and by_id[current] not in chain:
        chain.append(by_id[current])
        current = by_id[current].parent_id
    return list(reversed(chain))


def active_topic(
    topics: list[TopicSummary], trigger_id: str | None, asker: str | None, asker_name: str | None = None
) -> TopicSummary | None:
    """The active topic holding the trigger; else the asker's most recently active one (topics list their
    participants by display name: the asker's sender id or name). Pure."""
    active = [t for t in topics if t.state == "active"]
    if trigger_id:
        holding = [t for t in active if trigger_id in t.message_ids]
        if holding:
            return max(holding, key=lambda t: t.last_active_at)
    who = {w for w in (asker, asker_name) if w}
    mine = [t for t in active if who & set(t.participants)]
    return max(mine, key=lambda t: t.last_active_at) if mine else None


def fit(messages: list[ChatMessage], budget: int, count: Callable[[str], int], *, newest: bool = True):
    """The messages (newest kept first when ``newest``) whose lines fit ``budget``; shown oldest first."""
    order = list(reversed(messages)) if newest else list(messages)
    kept, used = [], 0
    for m in order:
        cost = count(message_line(m)) + 1
        if used + cost > budget:
            break
        kept.append(m)
        used += cost
    kept.sort(key=lambda m: (m.ts, m.message_id))
    return kept, used


def layer(name: str, messages: list[ChatMessage], tokens: int) -> ContextLayer:
    return ContextLayer(name=name, description=DESCRIPTIONS[name], item_ids=[m.message_id for m in messages],
                        text="\n".join(message_line(m) for m in messages), tokens=tokens)  # fmt: skip


async def short_term(store, req: RetrieveRequest, cfg: ContextConfig, count) -> list[ContextLayer]:
    """Reply chain, active topic and the asker's recent messages, each within its share of the budget."""
    budget, layers, shown = req.token_budget, [], set()
    carry = 0
    trigger = (
        (await store.get_messages(req.chat_id, [req.trigger_message_id]))[:1]
        if req.trigger_message_id
        else []
    )
    if trigger:
        current = trigger[0]
        msgs = {current.message_id: current}
        while current.parent_id and current.parent_id not in msgs and len(msgs) < cfg.reply_depth:
            found = await store.get_messages(req.chat_id, [current.parent_id])
            if not found:
                break
            current = msgs.setdefault(found[0].message_id, found[0])
        chain = reply_chain(msgs, trigger[0].message_id, cfg.reply_depth)
        kept, used = fit(chain, int(budget * cfg.shares["reply_chain"]), count)
        carry = int(budget * cfg.shares["reply_chain"]) - used
        if kept:
            layers.append(layer("reply_chain", kept, used))
            shown.update(m.message_id for m in kept)
    name = trigger[0].display_name if trigger and trigger[0].sender == req.asker else None
    topic = active_topic(await store.list_topics(req.chat_id), req.trigger_message_id, req.asker, name)
    if topic is not None:
        wanted = [i for i in topic.message_ids[-cfg.topic_messages :] if i not in shown]
        share = int(budget * cfg.shares["active_topic"]) + carry
        kept, used = fit(await store.get_messages(req.chat_id, wanted), share, count)
        carry = share - used
        if kept:
            layers.append(layer("active_topic", kept, used))
            shown.update(m.message_id for m in kept)
    if req.asker:
        until = trigger[0].ts if trigger else req.now
        since = shift(until, -timedelta(days=cfg.asker_window_days)) if until else None  # saturates near year 1
        recent = [m for m in await store.list_messages(req.chat_id, since=since, until=until)
                  if m.sender == req.asker and m.message_id not in shown][-cfg.asker_messages :]  # fmt: skip
        kept, used = fit(recent, int(budget * cfg.shares["asker_recent"]) + carry, count)
        if kept:
            layers.append(layer("asker_recent", kept, used))
    return layers


async def build_bot_context(store, embedder, req: RetrieveRequest, *, retrieve, cfg: ContextConfig | None = None,
                            count: Callable[[str], int]) -> RetrieveResponse:  # fmt: skip
    """``retrieve(req) -> RetrieveResponse`` is the long-term retrieval (routed or uniform) to run with the
    budget the short-term layers leave."""
    cfg = cfg or ContextConfig()
    layers = await short_term(store, req, cfg, count)
    used = sum(x.tokens for x in layers)
    memory_budget = max(int(req.token_budget * cfg.memory_min_share), req.token_budget - used)
    memory = await retrieve(req.model_copy(update={"token_budget": max(50, memory_budget)}))
    memory_layers = memory.layers or [ContextLayer(name="direct", description="memories that match the question",
                                                   item_ids=[it.item_id for it in memory.items],
                                                   text=memory.context, tokens=memory.context_tokens)]  # fmt: skip
    all_layers = layers + [x for x in memory_layers if x.text]
    text = "\n\n".join(f"## {x.name}\n{x.text}" for x in all_layers) or memory.context
    trace = [TraceStep(step="short_term", detail={x.name: x.tokens for x in layers}), *memory.trace]
    return memory.model_copy(update={"context": text, "context_tokens": count(text), "layers": all_layers,
                                     "trace": trace})  # fmt: skip
