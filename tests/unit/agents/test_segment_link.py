"""How many people the linker's window holds, read from its columns' codes, equals the count over the
messages (the linker stays silent below three)."""

from __future__ import annotations

import random

from agents.reply_features import LinkMsg
from agents.reply_window import WindowCols
from agents.segment_link import speakers


def _msg(i: int, sender: str, to: tuple[str, ...] = ()) -> LinkMsg:
    return LinkMsg(message_id=f"m{i}", sender=sender, ts=1000.0 + i, addressees=to)


def test_speakers_equal_the_count_over_the_messages() -> None:
    rng = random.Random(5)
    people = ["ann", "bob", "cy", "dee", "eve"]
    for trial in range(200):
        window = [_msg(i, rng.choice(people[:3]), (rng.choice(people),)) for i in range(rng.randint(0, 8))]
        lm = _msg(99, rng.choice(people))
        cols = WindowCols.build(window)
        assert speakers(lm, window, cols) == len({lm.sender, *(m.sender for m in window)}), trial


def test_speakers_of_someone_only_addressed_before() -> None:
    window = [_msg(0, "ann", ("dee",)), _msg(1, "bob")]
    cols = WindowCols.build(window)  # "dee" has a code, but wrote nothing
    assert speakers(_msg(2, "dee"), window, cols) == 3
    assert speakers(_msg(2, "ann"), window, cols) == 2
    assert speakers(_msg(2, "ann"), window[1:], cols) == 2  # columns of another window: counted from the messages
