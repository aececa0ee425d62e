"""The segmentation versions ledger (SQLite): entries update in place, the action history only grows."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.segmentation import SegmentationVersion
from streams.segmentation_ledger import SQLiteVersionLedger, VersionLedger, open_ledger

AT = datetime(2024, 3, 1, tzinfo=UTC)


async def test_versions_are_kept_per_chat_and_survive_reopening(tmp_path):
    ledger = await open_ledger(tmp_path)
    assert isinstance(ledger, VersionLedger)
    v2 = SegmentationVersion(chat_id="a", version=2, new_topic_ids=["t-x"], created_at=AT)
    await ledger.save(SegmentationVersion(chat_id="a", version=1, kind="stream", created_at=AT), "recorded")
    await ledger.save(v2, "applied")
    await ledger.save(SegmentationVersion(chat_id="b", version=2, created_at=AT), "applied")
    await ledger.save(
        v2.model_copy(update={"status": "rolled_back", "rolled_back_at": AT}), "rolled_back", "why"
    )
    await ledger.close()

    again = await SQLiteVersionLedger(tmp_path / "segmentation.db").open()
    try:
        entries = await again.versions("a")
        assert [(e.version, e.status) for e in entries] == [(1, "active"), (2, "rolled_back")]
        assert entries[1].new_topic_ids == ["t-x"] and entries[1].rolled_back_at == AT
        assert [(v, a, d) for v, a, _, d in await again.actions("a")] == [
            (1, "recorded", ""),
            (2, "applied", ""),
            (2, "rolled_back", "why"),
        ]
        assert [e.chat_id for e in await again.versions("b")] == ["b"] and await again.versions("c") == []
    finally:
        await again.close()
