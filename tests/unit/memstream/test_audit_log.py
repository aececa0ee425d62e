"""The access audit log keeps every entry of a batch, whatever a path carried (a lone surrogate from a
percent-encoded chat id once failed the whole batch's insert, and the export request that flushed it: a 500)."""

from __future__ import annotations

from memstream.audit_log import AuditEntry, AuditLog, AuditQuery, AuditWriter


async def test_a_surrogate_chat_id_does_not_lose_the_batch(tmp_path):
    log = await AuditLog(tmp_path / "access-log.db").open()
    writer = AuditWriter(log)
    try:
        writer.record(AuditEntry(key_id="k1", action="read", chat_id="team", endpoint="GET /v1/chats/team/topics"))
        writer.record(AuditEntry(key_id="k1", action="export", chat_id="\ud800", endpoint="GET /v1/chats/\ud800/export"))
        await writer.flush()
        rows = await writer.query(AuditQuery())
        assert sorted(r.chat_id for r in rows) == ["?", "team"]  # replaced as in api_guard.safe_text
    finally:
        await log.close()
