"""Erasure in the streams layer: tombstones (codec, log rewrite, the runner skipping them), the log's
erasure of a user's records, secure_delete + WAL truncation, and working memory forgetting messages."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from memstream.clients import build_clients
from memstream.settings import Settings
from schemas import ChatMessage, DeadLetter
from streams.codec import DecodeError, Tombstone, decode, encode, is_tombstone, tombstone_value
from streams.log import FileLog, Produce, message_id_hash
from streams.log_erase import erase_in_log, needles_of, raw_messages
from streams.runner import EmbeddedRunner
from streams.topics import DEAD_LETTERS, DISTILL_JOBS, MEMORY_DECISIONS, RAW_MESSAGES, TOPIC_SEGMENTS
from streams.working_memory import InProcessWorkingMemory

T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def chat_msg(i: int, sender: str, text: str, chat: str = "c") -> ChatMessage:
    return ChatMessage(chat_id=chat, message_id=f"m{i}", sender=sender, ts=T0 + timedelta(minutes=i), text=text)


def raw(m: ChatMessage) -> Produce:
    return Produce(RAW_MESSAGES.name, m.chat_id, m.key, encode(m))


def test_tombstones_decode_on_every_topic_and_carry_no_content():
    value = tombstone_value("c", "del-1")
    assert is_tombstone(value) and is_tombstone("") and is_tombstone(None) and not is_tombstone("{}")
    for spec in (RAW_MESSAGES, TOPIC_SEGMENTS, DISTILL_JOBS):
        assert decode(spec, value) == Tombstone(chat_id="c", deletion_id="del-1")
        assert decode(spec, "") == Tombstone()  # a Kafka null value
    with pytest.raises(DecodeError):
        decode(RAW_MESSAGES, '{"tombstone": false}')


async def test_the_segmenter_skips_a_tombstoned_raw_record_without_dead_letter(tmp_path):
    clients = await build_clients(Settings(data_dir=tmp_path / "d", embedder="none"), embedder=None)
    try:
        runner = EmbeddedRunner(clients, clients.settings.pipeline)
        await runner.produce([raw(chat_msg(0, "bob", "hello there")),
                              Produce(RAW_MESSAGES.name, "c", "c\x1fm1", tombstone_value("c", "d1"))])  # fmt: skip
        stats = await runner.run_until_idle()
        assert stats.dead_letters == 0 and await runner.dead_letters() == []
        assert [m.message_id for m in await clients.store.list_messages("c")] == ["m0"]
    finally:
        await clients.close()


async def test_erasing_a_user_in_the_log_keeps_offsets_and_ids(tmp_path):
    log = await FileLog(tmp_path / "log.db").open()
    try:
        msgs = [chat_msg(0, "bob", "hi all"), chat_msg(1, "eve", "my secret is quokka-7731"),
                chat_msg(2, "bob", "noted"), chat_msg(0, "eve", "other chat quokka", chat="d")]  # fmt: skip
        await log.append([raw(m) for m in msgs])
        derived = [
            Produce(DISTILL_JOBS.name, "c", "j1", json.dumps({"messages": [{"message_id": "m1"}]})),
            Produce(DISTILL_JOBS.name, "c", "j2", json.dumps({"messages": [{"message_id": "m10"}]})),
            Produce(MEMORY_DECISIONS.name, "c", "d1", json.dumps({"record": {"topic_id": "t9"}})),
        ]
        rejected = json.dumps({"chat_id": "c", "sender": "eve", "text": "quokka-7731", "ts": "bad"})
        dl = DeadLetter(dead_letter_id="dl1", stage="ingest", topic=RAW_MESSAGES.name, error="bad ts",
                        payload=rejected, at=T0)  # fmt: skip
        await log.append([*derived, Produce(DEAD_LETTERS.name, "-", "dl1", encode(dl))])
        await log.commit("distiller", {DISTILL_JOBS.name: 2}, [])  # j1, j2 consumed ...
        unread = Produce(DISTILL_JOBS.name, "c", "j3", json.dumps({"messages": [{"message_id": "m1"}]}))
        await log.append([unread])  # ... j3 not yet: a stage would not expect a tombstone there
        assert [m.message_id for m in await raw_messages(log, "c", "eve")] == ["m1"]

        n = await erase_in_log(log, "c", "eve", {"m1"}, ["my secret is quokka-7731"], "del-1", derived_ids={"t9"})
        assert n == 4  # eve's raw record, the job naming m1, the decision of topic t9, her rejected line
        rows = await log.keyed(RAW_MESSAGES.name, "c")
        assert [r.offset for r in rows] == [0, 1, 2] and [is_tombstone(r.value) for r in rows] == [0, 1, 0]
        assert rows[1].record_id == "c\x1fm1"  # a redelivered original is still known
        jobs = await log.read(DISTILL_JOBS.name, 0, 10)
        assert [is_tombstone(r.value) for r in jobs] == [True, False, False]  # "m10" is not "m1"; j3 unread
        assert is_tombstone((await log.read(MEMORY_DECISIONS.name, 0, 1))[0].value)
        dead = DeadLetter.model_validate_json((await log.read(DEAD_LETTERS.name, 0, 1))[0].value)
        assert dead.payload == "" and "del-1" in dead.error
        assert not is_tombstone((await log.keyed(RAW_MESSAGES.name, "d"))[0].value)  # other chat untouched

        await log.record_deleted_ids("c", "eve", ["m1"])
        ids = log.db.execute("SELECT id_hash FROM deletion_ledger_ids").fetchall()
        assert ids == [(message_id_hash("c", "m1"),)]
        assert await log.erase_freed()
        assert (tmp_path / "log.db-wal").stat().st_size == 0
        assert (tmp_path / "log.db").read_bytes().count(b"quokka") == 1  # only the other chat's message
    finally:
        await log.close()


def test_needles_match_quoted_ids_and_escaped_texts():
    needles = needles_of(["m1"], ['say "hi" to the team', "ok"])
    assert '"m1"' in needles and '\\"m1\\"' in needles
    assert 'say \\"hi\\" to the team' in needles and "ok" not in needles  # short texts match too much


async def test_in_process_working_memory_forgets_messages():
    wm = InProcessWorkingMemory()
    await wm.put_pool("c", "POOL m1", None, version=7)
    await wm.put_topic_window("c", "t1", ["m0", "m1"], None)
    await wm.put_topic_window("c", "t2", ["m1"], None)
    await wm.put_journal("c", "j1", 'decided on "m1"', None)
    await wm.put_journal("c", "j2", "other", None)
    changed = await wm.forget_messages("c", {"m1"}, lambda s: s.replace(" m1", ""), ['"m1"'])
    assert changed == 4
    assert await wm.get_pool("c") == "POOL" and not await wm.put_pool("c", "x", None, version=6)
    assert await wm.topic_windows("c") == {"t1": ["m0"]}
    assert await wm.get_journal("c", "j1") is None and await wm.get_journal("c", "j2") == "other"


def test_a_speaker_is_deleted_by_display_name_or_through_the_results_senders():
    """The ledger names sender ids; memory names speakers by display name. A result's ``senders`` maps one
    to the other, so "Tomek Nowak" (id ``tomek``) deleted is found while "Tomasz" (another id) is not."""
    from agents.distill.summary import senders_of
    from streams.stages.io import is_deleted

    msgs = [chat_msg(0, "tomek", "hi"), chat_msg(1, "tomasz", "hey")]
    msgs = [msgs[0].model_copy(update={"sender_name": "Tomek Nowak"}), msgs[1]]
    senders = senders_of(msgs)
    assert senders == {"Tomek Nowak": ["tomek"], "tomasz": ["tomasz"]}
    ledger = {("c", "tomek")}
    assert is_deleted(ledger, "c", "Tomek Nowak", senders)
    assert not is_deleted(ledger, "c", "Tomek Nowak")  # without the map a display name is not an id
    assert not is_deleted(ledger, "c", "tomasz", senders) and not is_deleted(ledger, "other", "Tomek Nowak", senders)
    assert is_deleted({("c", "TOMEK")}, "c", "tomek") and is_deleted({("c", "*")}, "c", None)
