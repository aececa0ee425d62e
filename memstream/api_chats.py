"""Routes that read one chat's stored state on a reader lane: its topics, segmentation versions, a message's
reply chain and its memories."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import BaseModel

from memstream.api_deps import ChatPath, LanesDep, Reader
from memstream.clients import Clients
from memstream.resegment import list_versions
from schemas import ChatMessage, MemoryRecord, TopicSummary
from schemas.base import Id
from schemas.segmentation import SegmentationVersion
from streams.segmentation_ledger import open_ledger

router = APIRouter()


class ReplyChain(BaseModel):
    chat_id: str
    message_id: str
    chain: list[ChatMessage]


@router.get("/v1/chats/{chat_id}/topics", response_model=list[TopicSummary])
async def topics(chat_id: ChatPath, who: Reader, lanes: LanesDep, state: Annotated[
                     str | None, Query(pattern="^(active|closed|merged|superseded|rolled_back)$")] = None):  # fmt: skip
    """Working memory (state=active) and episodic memory (state=closed) of a chat. Topics replaced by a
    re-segmentation (superseded) or made by a rolled-back one are listed only when asked for by state."""
    items = await lanes.reader().call(lambda c: c.store.list_topics(chat_id))
    hidden = ("superseded", "rolled_back")
    return [t for t in items if t.state == state or (state is None and t.state not in hidden)]


@router.get("/v1/chats/{chat_id}/segmentation", response_model=list[SegmentationVersion])
async def segmentation(chat_id: ChatPath, who: Reader, lanes: LanesDep) -> list[SegmentationVersion]:
    """The chat's segmentation versions (1 = streaming; re-segmentations, rolled back or not)."""

    async def versions(c: Clients) -> list[SegmentationVersion]:
        ledger = await open_ledger(c.settings.data_dir)
        try:
            return await list_versions(c, ledger, chat_id)
        finally:
            await ledger.close()

    return await lanes.reader().call(versions)


@router.get("/v1/chats/{chat_id}/messages/{message_id}/reply-chain", response_model=ReplyChain)
async def reply_chain(chat_id: ChatPath, message_id: Annotated[Id, Path()], who: Reader, lanes: LanesDep,
                      depth: Annotated[int, Query(ge=1, le=50)] = 10) -> ReplyChain:  # fmt: skip
    """Immediate memory: the message and the chain of messages it replies to (oldest first)."""

    async def walk(c: Clients) -> list[ChatMessage]:
        chain: list[ChatMessage] = []
        current: str | None = message_id
        while current and len(chain) < depth:
            found = await c.store.get_messages(chat_id, [current])
            if not found:
                break
            chain.append(found[0])
            current = found[0].parent_id  # explicit reply, else the segmenter's inferred one
        return chain

    chain = await lanes.reader().call(walk)
    if not chain:
        raise HTTPException(404, f"message {message_id[:100]!r} not found in chat {chat_id[:100]!r}")
    return ReplyChain(chat_id=chat_id, message_id=message_id, chain=list(reversed(chain)))


@router.get("/v1/chats/{chat_id}/memories", response_model=list[MemoryRecord])
async def memories(chat_id: ChatPath, who: Reader, lanes: LanesDep, include_superseded: bool = False):
    return await lanes.reader().call(lambda c: c.store.list_memories(chat_id, live_only=not include_superseded))
