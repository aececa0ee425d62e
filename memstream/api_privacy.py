"""The data-subject routes: delete a chat or a user's messages (and everything derived from them) between
the background runner's batches, and export a chat. Each is on the access audit log before it answers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request

from memstream.api_deps import ChatPath, LanesDep
from memstream.auth import require_scope
from memstream.serving import Lanes
from schemas.base import Id

router = APIRouter()


async def deletion(request: Request, lanes: Lanes, chat_id: str, sender: str | None) -> dict:
    from memstream.ops import delete_report

    report = await lanes.exclusive(lambda c: delete_report(c, chat_id, sender))  # between batches
    if (url := lanes.settings.resolved_log_url).startswith("kafka"):
        from memstream.kafka_delete import tombstone_raw

        await tombstone_raw(url, chat_id, sender)
    await request.app.state.audit.flush()  # a deletion is on record before it is acknowledged
    return {"deleted": report.removed, **report.as_dict(), "job_id": report.job_id, "state": "done"}


@router.get("/v1/chats/{chat_id}/deletions", dependencies=[Depends(require_scope("delete"))])
async def deletion_jobs(chat_id: ChatPath, lanes: LanesDep) -> list[dict]:
    """The chat's deletion jobs, oldest first: ``pending`` from the moment one is ledgered until everything is
    removed (a process killed midway finishes it when it starts again), then ``done``."""
    from memstream.deletion import deletion_id

    async def jobs(c):
        return await c.log.deletion_jobs(chat_id) if hasattr(c.log, "deletion_jobs") else []

    out = []
    for _, sender, at, done in sorted(await lanes.reader().call(jobs), key=lambda j: j[2]):
        user = None if sender == "*" else sender
        out.append({"job_id": deletion_id(chat_id, user, at), "chat_id": chat_id, "user": user, "at": at,
                    "state": "pending" if done is None else "done", "done_at": done})  # fmt: skip
    return out


@router.delete("/v1/chats/{chat_id}", dependencies=[Depends(require_scope("delete"))])
async def delete_chat(chat_id: ChatPath, request: Request, lanes: LanesDep) -> dict:
    """Delete everything of a chat, now and physically (ledgered: replay never restores it)."""
    return await deletion(request, lanes, chat_id, None)


@router.delete("/v1/chats/{chat_id}/users/{sender}", dependencies=[Depends(require_scope("delete"))])
async def delete_user(chat_id: ChatPath, sender: Annotated[Id, Path()], request: Request,
                      lanes: LanesDep) -> dict:  # fmt: skip
    """Delete a user's messages in a chat and everything derived from them (summaries, titles, Q&A…
    that quote them), now and physically; topics keeping others' messages are distilled again."""
    return await deletion(request, lanes, chat_id, sender)


@router.get("/v1/chats/{chat_id}/export", dependencies=[Depends(require_scope("read", "export"))])
async def export(chat_id: ChatPath, request: Request, lanes: LanesDep) -> dict:
    """A chat's messages, memories (all versions) and topics (audited as an export)."""
    async def read(c):
        from memstream.clients import refuse_if_pending

        await refuse_if_pending(c.log, chat_id)
        return await c.store.export_chat(chat_id)

    out = await lanes.reader().call(read)
    await request.app.state.audit.flush()
    return out
