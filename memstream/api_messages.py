"""``POST /v1/messages``: append a batch to the durable log (ingest lane); the one background runner of the
processor lane (:class:`memstream.serving.Lanes`, under its lock) processes it."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request

from memstream.api_deps import LanesDep, Writer
from memstream.api_ingest import IngestAccepted, IngestBatch, append_batch, claimed_chats, judge
from memstream.auth import authorize

router = APIRouter()


@router.post("/v1/messages", response_model=IngestAccepted, status_code=202,
             responses={422: {"description": "no message of the batch was valid (each is dead-lettered)"},
                        429: {"description": "too many messages waiting to be processed; retry later"}})  # fmt: skip
async def post_messages(batch: IngestBatch, request: Request, who: Writer, lanes: LanesDep) -> IngestAccepted:
    """Append messages to the durable log; a background worker processes them (idempotent by chat id,
    message id and text). Each message gets its own result: ``accepted``, ``duplicate`` or
    ``dead_lettered`` with the reason (the others go on). ``wait`` (default true) answers once the batch
    is processed; ``"wait": false`` answers as soon as it is durable."""
    serve = lanes.settings.serve
    if len(batch.messages) > serve.max_batch:
        raise HTTPException(413, f"at most {serve.max_batch} messages per request")
    for chat_id in sorted(claimed_chats(batch.messages)):
        authorize(request, who, "write", chat_id, count=len(batch.messages))
    parsed = judge(batch.messages)
    policy = lanes.clients.settings.sensitive
    out = await lanes.append(lambda c: append_batch(c.log, batch, parsed, policy))  # 429 past max_backlog
    lanes.wake()
    if out.accepted == 0:
        raise HTTPException(422, [r.model_dump(exclude_none=True) for r in out.results[:10]])
    if batch.wait and lanes.embedded:
        out.processed = (await lanes.exclusive(lambda c: lanes.process_now())).processed
    return out
