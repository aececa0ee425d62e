"""Slow group chats: the chat's own pace (from its first gap), a name spoken to, and revision cues."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agents.config import SegmenterConfig
from agents.segment_signals import addressees, effective_threshold, features, slow_scale
from agents.segmenter import ChatPool, step
from schemas import ChatMessage

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
OFF = SegmenterConfig(dyadic_shift=False, slow_max=1.0, vocative=False, named_reply=0.0, threshold_revision=0.0)
NAMES = {"priya": "priya", "marco": "marco", "olive": "olive"}


def msg(i: int, sender: str, text: str, minutes: float, chat: str = "club") -> ChatMessage:
    return ChatMessage(chat_id=chat, message_id=f"{chat}-{i}", sender=sender, sender_name=sender.title(),
                       ts=T0 + timedelta(minutes=minutes), text=text)  # fmt: skip


def run(msgs: list[ChatMessage], cfg: SegmenterConfig) -> tuple[ChatPool, dict[str, str]]:
    pool = ChatPool(chat_id=msgs[0].chat_id)
    for m in msgs:
        pool, _ = step(pool, m, None, cfg)
    return pool, {m.message_id: pool.msg_topic[m.message_id] for m in msgs}


def test_slow_scale_stretches_only_slow_chats_and_trusts_the_first_gaps_less():
    cfg = SegmenterConfig(dyadic_shift=False)
    assert slow_scale([], cfg) == 1.0
    assert slow_scale([5.0] * 50, cfg) == slow_scale([30.0] * 50, cfg) == 1.0  # IRC, LoCoMo turns: unchanged
    one, four = slow_scale([420.0], cfg), slow_scale([420.0] * 4, cfg)
    assert 1.0 < one < four < 7.0  # 7 minutes a message is 7x a minute, approached as gaps accumulate
    assert abs(one - 7.0 ** (1 / 3)) < 1e-9  # the prior weighs two gaps
    assert slow_scale([3600.0] * 20, cfg) == cfg.slow_max
    assert slow_scale([420.0] * 4, OFF) == 1.0
    assert slow_scale([420.0] * 4, SegmenterConfig(dyadic_shift=False, pace_adaptive=True)) == 1.0  # the symmetric scale instead


def test_a_slow_chat_stretches_its_time_windows_but_a_quiet_topic_still_closes_after_the_idle_time():
    talk = ["the book club meets on thursday", "bringing wine for the book club", "thursday at seven works"]
    slow = [
        msg(i, p, t, 7 * i) for i, (p, t) in enumerate(zip(["priya", "marco", "olive"], talk, strict=True))
    ]
    slow = [m.model_copy(update={"reply_to": slow[0].message_id}) if i else m for i, m in enumerate(slow)]
    later = msg(9, "priya", "which book club novel this month", 14 + 25)  # 25 minutes of silence
    cfg = SegmenterConfig(dyadic_shift=False)
    pool, _ = run(slow, cfg)
    assert len(pool.topics) == 1 and features(later, None, pool, cfg).pace > 1.5
    for c in (OFF, cfg):  # 15 silent minutes close it, however slow the chat
        _, events = step(run(slow, c)[0], later, None, c)
        assert any(e.kind.value == "closed" and e.reason == "idle" for e in events)


def test_a_name_after_thanks_or_a_final_comma_addresses_that_person():
    def to(text: str, sender: str = "marco") -> tuple[str, ...]:
        return addressees(msg(0, sender, text, 0), NAMES, vocative=True)

    assert to("Thanks Priya. I'm bringing the wine as usual.") == ("priya",)
    assert to("Congrats Priya!! What's the role?", "olive") == ("priya",)
    assert to("see you on friday, Olive!") == ("olive",)
    assert to("thanks for the reminder") == () and to("Olive's place is fine") == ()
    assert addressees(msg(0, "marco", "Thanks Priya.", 0), NAMES) == ()  # off unless asked


def test_thanks_to_the_opener_continues_her_topic_in_a_slow_chat():
    first = msg(1, "priya", "Reminder: the book club meets at Olive's place this Thursday at 7pm.", 0)
    thanks = msg(2, "marco", "Thanks Priya. I'm bringing the wine as usual.", 7)
    _, on = run([first, thanks], SegmenterConfig(dyadic_shift=False))
    _, off = run([first, thanks], OFF)
    assert on[thanks.message_id] == on[first.message_id]
    assert off[thanks.message_id] != off[first.message_id]  # seven minutes of decay and no shared word


def test_a_revision_refers_back_to_the_conversation_a_plain_new_subject_does_not():
    base = [
        msg(1, "priya", "the book club meets at olive's place on thursday evening", 0),
        msg(2, "marco", "Thanks Priya. I'm bringing the wine as usual.", 7),
        msg(3, "priya", "great, the book club thursday evening it is", 14),
    ]
    revision = msg(4, "olive", "Small change: the book club meets at Marco's flat on thursday instead", 21)
    bare = msg(4, "olive", "the book club meets at Marco's flat on thursday instead", 21)
    unrelated = msg(4, "olive", "my sister hannah is visiting from dublin next week, any hotel tips?", 21)
    _, with_cue = run([*base, revision], SegmenterConfig(dyadic_shift=False))
    _, plain = run([*base, unrelated], SegmenterConfig(dyadic_shift=False))
    assert with_cue[revision.message_id] == with_cue[base[0].message_id]
    pool, _ = run(base, SegmenterConfig(dyadic_shift=False))
    bar = [
        effective_threshold(pool, features(m, None, pool, SegmenterConfig(dyadic_shift=False)), SegmenterConfig(dyadic_shift=False))
        for m in (revision, bare)
    ]
    assert (
        bar[0] <= bar[1] - 0.25
    )  # the cue lowers the bar (and the linker's new-conversation bump is dropped)
    assert plain[unrelated.message_id] != plain[base[0].message_id]  # a real change of subject still splits
    assert features(revision, None, ChatPool(chat_id="club"), SegmenterConfig(dyadic_shift=False)).revision
    assert not features(revision, None, ChatPool(chat_id="club"), OFF).revision


def test_a_two_person_chat_keeps_its_exchange_open_across_an_hour_a_group_chat_does_not():
    lines = [("ana", "can the plumber come on friday instead of thursday?", 0),
             ("ben", "friday works, he'll be there at nine", 50),  # answered 50 minutes later
             ("ana", "great, thanks", 52)]  # fmt: skip
    for chat_type, one_topic in (("private", True), ("group", False)):
        msgs = [msg(i, p, t, m, chat="flat").model_copy(update={"chat_type": chat_type})
                for i, (p, t, m) in enumerate(lines)]  # fmt: skip
        pool, topics = run(msgs, SegmenterConfig())
        assert (topics["flat-0"] == topics["flat-1"]) is one_topic, (chat_type, topics)
    # a private chat silent for longer than its idle time still closes its topic
    pool, _ = run(msgs[:1], SegmenterConfig())
    quiet = msgs[1].model_copy(update={"chat_type": "private", "ts": T0 + timedelta(hours=4)})
    _, events = step(pool.model_copy(update={"private": True}), quiet, None, SegmenterConfig())
    assert any(e.kind.value == "closed" and e.reason == "idle" for e in events)
