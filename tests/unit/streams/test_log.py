import sqlite3

import pytest

from streams.log import FileLog, Produce


async def test_append_is_idempotent_by_record_id(tmp_path):
    log = await FileLog(tmp_path / "log.db").open()
    items = [Produce("t", "k", f"id{i}", f'{{"i": {i}}}') for i in range(5)]
    assert await log.append(items) == 5
    assert await log.append(items[2:] + [Produce("t", "k", "id9", "{}")]) == 1
    recs = await log.read("t", 0, 100)
    assert [r.record_id for r in recs] == ["id0", "id1", "id2", "id3", "id4", "id9"]
    assert [r.offset for r in recs] == list(range(6))
    await log.close()


async def test_commit_is_atomic_and_survives_reopen(tmp_path):
    path = tmp_path / "log.db"
    log = await FileLog(path).open()
    await log.append([Produce("in", "k", f"r{i}", "{}") for i in range(3)])
    await log.commit("g", {"in": 2}, [Produce("out", "k", "o1", "{}")], state={"chat-a": '{"s": 1}'})
    await log.close()
    log = await FileLog(path).open()
    assert await log.committed("g", "in") == 2
    assert await log.load_state("g") == {"chat-a": '{"s": 1}'}
    assert await log.end_offset("out") == 1
    assert await log.committed("other", "in") == 0
    await log.close()


async def test_reset_derived_keeps_source_topics_and_ledger(tmp_path):
    log = await FileLog(tmp_path / "log.db").open()
    await log.append([Produce("raw", "k", "a", "{}"), Produce("derived", "k", "b", "{}")])
    await log.commit("g", {"raw": 1}, [], state={"chat": "x"})
    await log.record_deletion("chat", "*", "2024-01-01T00:00:00+00:00")
    await log.reset_derived(["derived"])
    assert await log.end_offset("raw") == 1
    assert await log.end_offset("derived") == 0
    assert await log.committed("g", "raw") == 0
    assert await log.load_state("g") == {}
    assert await log.deletions() == {("chat", "*")}
    await log.close()


async def test_a_deletions_redistil_plan_grows_survives_reopen_and_ends(tmp_path):
    path = tmp_path / "log.db"
    log = await FileLog(path).open()
    assert await log.plan_redistil("chat", "u", ["t1", "t2"]) == {"t1", "t2"}
    await log.close()
    log = await FileLog(path).open()  # a killed run's plan, read by the next
    assert await log.plan_redistil("chat", "u", ["t3"]) == {"t1", "t2", "t3"}
    assert await log.plan_redistil("chat", "v", []) == set()
    await log.end_redistil("chat", "u")
    assert await log.plan_redistil("chat", "u", []) == set()
    await log.close()


async def test_state_parts_are_written_only_when_given_and_dropped_with_none(tmp_path):
    log = await FileLog(tmp_path / "log.db").open()
    await log.commit("g", {}, [], state={"a": "1", "b": "1"})
    await log.commit("g", {}, [], state={"b": "2"})  # a batch that touched only chat b
    assert await log.load_state("g") == {"a": "1", "b": "2"}
    await log.commit("g", {}, [], state={"a": None})
    assert await log.load_state("g") == {"b": "2"}
    assert await log.load_state("other") == {}
    await log.close()


async def test_a_whole_state_checkpoint_from_an_older_version_is_read_as_one_part(tmp_path):
    path = tmp_path / "log.db"
    db = sqlite3.connect(path)  # the layout before state parts
    db.execute("CREATE TABLE consumer_state (grp TEXT PRIMARY KEY, state TEXT NOT NULL)")
    db.execute("INSERT INTO consumer_state VALUES ('segmenter', '{\"chat\": {}}')")
    db.commit()
    db.close()
    log = await FileLog(path).open()
    assert await log.load_state("segmenter") == {"": '{"chat": {}}'}
    await log.close()
    log = await FileLog(path).open()  # migrated once, not duplicated on the next open
    assert await log.load_state("segmenter") == {"": '{"chat": {}}'}
    await log.close()


async def test_a_consumer_commit_is_not_synced_but_appends_are_and_the_connection_stays_full(tmp_path):
    log = await FileLog(tmp_path / "log.db").open()
    seen: list[str] = []
    log.db.set_trace_callback(seen.append)
    await log.append([Produce("raw", "k", "m1", "{}")])
    assert not any("synchronous" in s for s in seen)  # a producer's append: synced like every txn
    seen.clear()
    await log.commit("g", {"raw": 1}, [Produce("out", "k", "o1", "{}")])
    assert seen[0] == "PRAGMA synchronous=NORMAL" and seen[1] == "BEGIN IMMEDIATE"
    assert seen[-2:] == ["COMMIT", "PRAGMA synchronous=FULL"]
    with pytest.raises(sqlite3.Error):  # a failed commit rolls back and still restores FULL
        await log.commit("g", {"raw": 1}, [Produce("out", "k", "o2", "{}")], {"p": object()})  # type: ignore[dict-item]
    assert log.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert await log.end_offset("out") == 1 and await log.committed("g", "raw") == 1
    log.db.set_trace_callback(None)
    await log.close()


async def test_a_commit_that_cannot_begin_leaves_the_connection_synced(tmp_path):
    """Locked by another process past the busy timeout: the error comes back and later appends are FULL."""
    log = await FileLog(tmp_path / "log.db").open()
    log.db.execute("PRAGMA busy_timeout=50")  # instead of 30 s
    other = sqlite3.connect(tmp_path / "log.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        await log.commit("g", {"raw": 1}, [])
    other.execute("ROLLBACK")
    other.close()
    assert log.db.execute("PRAGMA synchronous").fetchone()[0] == 2 and not log.db.in_transaction
    await log.commit("g", {"raw": 1}, [], synced=True)  # an erasure's rewrite: a synced commit
    assert await log.committed("g", "raw") == 1
    await log.close()
