"""The reply linker's column-wise features equal, bit for bit, the per-candidate loop they replaced (kept here
as the reference: ``ref_matrix``), on handmade windows that exercise every cue; and the window's columns kept
step to step (``WindowCols.appended``) equal the ones built from the window."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from agents.reply_features import (
    FEATURES,
    PAIR_FEATURES,
    PLAIN_FEATURES,
    SELF_FEATURES,
    TOPIC_FEATURES,
    LinkMsg,
    Threads,
    candidate_matrix,
    self_features,
)
from agents.reply_pairs import PairFacts
from agents.reply_window import WindowCols

_EMPTY: frozenset[str] = frozenset()


def lm(i: int, sender: str, *, to: tuple[str, ...] = (), words: str = "", parent: int | None = None, **kw: Any) -> LinkMsg:
    """Message ``m{i}`` at 25 s a message; ``parent`` its parent's number (its own: a conversation start)."""
    extra: dict[str, Any] = {}
    if parent is not None:
        extra["parent"] = f"m{parent}"
        extra["parent_sender"] = kw.pop("parent_sender", None)
    return LinkMsg(message_id=f"m{i}", sender=sender, ts=1000.0 + 25 * i + (i % 3) * 0.1, addressees=to,
                   keywords=frozenset(words.split()), **extra, **kw)  # fmt: skip


def window() -> list[LinkMsg]:
    return [
        lm(0, "ann", words="grub boot windows", question=True, greeting=True, parent=0, length=0.4),
        lm(1, "bob", to=("ann",), words="grub install", parent=0, parent_sender="ann", mentions=("ann",)),
        lm(2, "cat", words="wifi driver broadcom", question=True, parent=2),
        lm(3, "ann", to=("bob",), words="thanks grub", thanks=True, parent=1, parent_sender="bob"),
        lm(4, "dan", to=("cat", "bob"), words="broadcom firmware wifi", parent=2, parent_sender="cat"),
        lm(5, "eve", words="!factoid", command=True, parent=5),
        lm(6, "bob", to=("cat",), words="driver wifi grub", parent=99, parent_sender="zed", mentions=("dan",)),
        lm(7, "cat", to=("dan",), words="firmware works", thanks=True, parent=4, parent_sender="dan"),
        lm(8, "ann", words="windows boot again", parent=3, parent_sender="ann", length=1.0),
        lm(9, "fay", to=("ann",), words="boot grub windows driver", mentions=("bob", "ann")),
    ]


THREADS = Threads({"m0": "t1", "m1": "t1", "m3": "t1", "m8": "t1", "m2": "t2", "m4": "t2", "m7": "t2", "m6": "t2"},
                  sender_topic="t1", addressee_topics=frozenset({"t2"}))  # fmt: skip
MESSAGES = [
    lm(10, "ann", words="grub boot"),  # unaddressed, the sender spoke before
    lm(10, "bob", to=("cat",), words="wifi broadcom driver"),  # addresses someone
    lm(10, "cat", to=("bob", "dan"), words="wifi", thanks=True, mentions=("eve",)),  # thanks two people
    lm(10, "gus", words="hello anyone", greeting=True, question=True),  # a newcomer
    lm(10, "dan", to=("nobody",), words=""),  # addresses someone outside the window, no content words
]


def cosines(n: int) -> np.ndarray:
    cos = np.random.default_rng(n).uniform(-0.2, 0.9, size=n)
    cos[1::4] = np.nan  # missing vectors
    return cos


@pytest.mark.parametrize("k", range(len(MESSAGES)))
@pytest.mark.parametrize("vectors", [True, False])
@pytest.mark.parametrize("threads", [THREADS, Threads({}), None])
def test_columns_equal_the_per_candidate_features(k, vectors, threads):
    msg, win = MESSAGES[k], window()
    for end in (1, 2, 5, len(win)):  # windows of every size, incl. one message
        sub = win[:end]
        cos = cosines(end) if vectors else None
        x = candidate_matrix(msg, sub, cos, threads)
        ref = ref_matrix(msg, sub, cos, threads)
        assert x.shape == ref.shape == (end + 1, len(FEATURES))
        bad = [FEATURES[c] for c in np.flatnonzero((x != ref).any(0))]
        assert not bad, bad
    assert x[:, : len(PAIR_FEATURES)].any() and (threads is not THREADS or x[:, -len(TOPIC_FEATURES) :].any())


def test_columns_kept_step_to_step_equal_the_ones_built_from_the_window():
    msgs, keep = window(), 4
    cols, win = WindowCols.build([]), []
    for m in msgs:
        win = [*win, m][-keep:]
        cols = cols.appended(m, win)
        built = WindowCols.build(win)
        assert cols.window is win and cols.ids == built.ids == [w.message_id for w in win]
        for name in ("ts", "answers", "static"):
            assert np.array_equal(getattr(cols, name), getattr(built, name)), name
        codes = {v: k for k, v in cols.codes.items()}
        assert [codes[c] for c in cols.sender] == [w.sender for w in win]
        assert np.array_equal(cols.parent_at - cols.base >= 0, built.parent_at - built.base >= 0)
        inside = cols.parent_at - cols.base >= 0
        assert np.array_equal((cols.parent_at - cols.base)[inside], (built.parent_at - built.base)[inside])
        for msg in MESSAGES:
            cos = cosines(len(win))
            kept = candidate_matrix(msg, win, cos, THREADS, cols=cols)
            assert np.array_equal(kept, candidate_matrix(msg, win, cos, THREADS))
            assert np.array_equal(kept, ref_matrix(msg, win, cos, THREADS))


# --- the reference: the per-candidate code these columns replaced (unchanged but for names) ---------------


@dataclass(frozen=True, slots=True)
class _Context:
    """Per-message facts about the window, computed once for all candidates."""

    latest_by_sender: dict[str, int]  # sender -> index in the window of their latest message
    latest_to: dict[str, int]  # sender -> index of the latest message addressing them
    last_addressee: dict[str, str]  # sender -> whom their latest addressed message addressed
    talked: frozenset[tuple[str, str]]  # (a, b): a addressed b in the window
    count_after: list[int]  # messages by the same sender after each window message
    overlaps: list[float]  # keyword overlap of the message with each window message
    best_keywords: float
    best_cosine: float
    latest_involving: int
    last_other: int  # index of the latest message not by the message's sender
    first_by_sender: dict[str, int]
    my_latest: LinkMsg | None  # the sender's latest message in the window
    replied_by: dict[str, frozenset[str]]  # message id -> senders who answered it in the window
    linked: frozenset[tuple[str, str]]  # (a, b): a answered b in the window
    rare: list[float]  # per window message: shared content words, each weighted 1 / its count in the window


def _context(msg: LinkMsg, window: list[LinkMsg], cos: list[float | None] | None) -> _Context:
    latest_by_sender: dict[str, int] = {}
    latest_to: dict[str, int] = {}
    last_addressee: dict[str, str] = {}
    talked: set[tuple[str, str]] = set()
    involving = -1
    for i, m in enumerate(window):
        latest_by_sender[m.sender] = i
        for a in m.addressees:
            latest_to[a] = i
            talked.add((m.sender, a))
        if m.addressees:
            last_addressee[m.sender] = m.addressees[0]
        if m.sender == msg.sender or msg.sender in m.addressees:
            involving = i
    last_other = max((i for i, m in enumerate(window) if m.sender != msg.sender), default=-1)
    first_by_sender: dict[str, int] = {}
    for i, m in enumerate(window):
        first_by_sender.setdefault(m.sender, i)
    seen: dict[str, int] = {}
    count_after = [0] * len(window)
    for i in range(len(window) - 1, -1, -1):
        s = window[i].sender
        count_after[i] = seen.get(s, 0)
        seen[s] = count_after[i] + 1
    replied: dict[str, set[str]] = {}
    linked: set[tuple[str, str]] = set()
    for m in window:
        if m.parent is not None and m.parent != m.message_id:
            replied.setdefault(m.parent, set()).add(m.sender)
            if m.parent_sender is not None:
                linked.add((m.sender, m.parent_sender))
    mine = latest_by_sender.get(msg.sender)
    shared = [m.keywords & msg.keywords for m in window]  # content words in common, once per candidate
    overlaps = [
        len(sh) / len(m.keywords | msg.keywords) if sh else 0.0 for sh, m in zip(shared, window, strict=True)
    ]
    df: dict[str, int] = {}
    for sh in shared:
        for kw in sh:
            df[kw] = df.get(kw, 0) + 1
    rare = [sum(1.0 / df[kw] for kw in sh) for sh in shared]
    best_kw = max(overlaps, default=0.0)
    best_cos = _best(cos) if cos is not None else 0.0
    return _Context(
        latest_by_sender,
        latest_to,
        last_addressee,
        frozenset(talked),
        count_after,
        overlaps,
        best_kw,
        best_cos,
        involving,
        last_other,
        first_by_sender,
        None if mine is None else window[mine],
        {k: frozenset(v) for k, v in replied.items()},
        frozenset(linked),
        rare,
    )


def ref_self_features(msg: LinkMsg, window: list[LinkMsg], ctx: _Context) -> np.ndarray:
    return self_features(msg, window, PairFacts(msg.sender in ctx.latest_by_sender, msg.sender in ctx.latest_to))


def ref_matrix(
    msg: LinkMsg, window: list[LinkMsg], cosines: np.ndarray | None, threads: Threads | None = None, topics: bool = True
) -> np.ndarray:
    """One row per candidate: ``window[0..n-1]`` then the message itself (the self-link, last row); the
    :data:`TOPIC_FEATURES` columns stay zero without ``threads`` or with ``topics=False`` (weights that ignore them)."""
    cos = None if cosines is None else [None if v != v else v for v in cosines.tolist()]  # NaN: no vector
    ctx = _context(msg, window, cos)
    x = np.zeros((len(window) + 1, len(FEATURES)), dtype=np.float64)
    if window:
        x[:-1, : len(PAIR_FEATURES)] = ref_pair_rows(msg, window, ctx, cos or [None] * len(window), threads)
    x[-1] = ref_self_features(msg, window, ctx)
    plain = len(PAIR_FEATURES) + len(SELF_FEATURES)
    if not msg.addressees:
        x[:-1, plain : plain + len(PLAIN_FEATURES)] = x[:-1, : len(PAIR_FEATURES)]
    if window and threads is not None and topics:
        x[:-1, plain + len(PLAIN_FEATURES) :] = ref_topic_features(msg, window, cos, threads)
    return x


def _best(cos: list[float | None]) -> float:
    """The largest cosine of ``cos`` (None: no vector), 0.0 when none is finite: ``np.nanmax`` without the
    per-call cost of numpy on a few dozen values (called per message and per topic)."""
    known = [v for v in cos if v is not None]
    return max(known) if any(math.isfinite(v) for v in known) else 0.0


def ref_topic_features(msg: LinkMsg, window: list[LinkMsg], cos: list[float | None] | None, threads: Threads) -> np.ndarray:
    """:data:`TOPIC_FEATURES` of every window message (zeros for one whose topic is unknown); ``cos[i]`` the
    message's cosine to ``window[i]`` (None: a vector is missing; ``cos`` None: no vectors at all)."""
    n = len(window)
    x = np.zeros((n, len(TOPIC_FEATURES)), dtype=np.float64)
    topic = [threads.topic_of.get(m.message_id) for m in window]
    members: dict[str, list[int]] = {}
    for i, t in enumerate(topic):
        if t is not None:
            members.setdefault(t, []).append(i)
    facts: dict[str, tuple[float, float, bool, bool]] = {}
    for t, ix in members.items():
        words = set().union(*(window[i].keywords for i in ix))
        shared = len(words & msg.keywords) / max(len(msg.keywords), 2) if msg.keywords else 0.0
        best = _best([cos[i] for i in ix]) if cos is not None else 0.0
        senders = {window[i].sender for i in ix}
        facts[t] = (shared, best, msg.sender in senders, any(a in senders for a in msg.addressees))
    top = max((f[1] for f in facts.values()), default=0.0)
    for i, t in enumerate(topic):
        if t is None:
            continue
        ix = members[t]
        later = len(ix) - 1 - ix.index(i)
        shared, best, has_sender, has_addressee = facts[t]
        x[i] = (
            float(later == 0),
            math.log1p(later),
            math.log1p(len(ix)),
            shared,
            best,
            best - top if cos is not None else 0.0,
            float(has_sender),
            float(has_addressee),
            math.log1p(n - 1 - ix[-1]),
            float(cos is None),
        )
    return x


def ref_pair_rows(msg: Any, window: list[Any], ctx: Any, cosines: list[float | None], threads: Any = None) -> list[list[float]]:
    """The features of ``msg`` answering each ``window[i]`` (``LinkMsg``s; ``window`` = the earlier messages,
    oldest first; ``ctx`` their ``_Context``; ``cosines[i]`` None when either vector is missing; ``threads``
    the segmenter's ``Threads`` or None), one flat list per candidate. The types are
    :mod:`agents.reply_features`', which imports this module."""
    n = len(window)
    sender = msg.sender
    m_addr = frozenset(msg.addressees)
    has_m_addr = bool(msg.addressees)
    no_m_addr = float(not msg.addressees)
    thanks = msg.thanks
    mentions = msg.mentions
    ts = msg.ts
    latest_by_sender, latest_to, last_addressee = ctx.latest_by_sender, ctx.latest_to, ctx.last_addressee
    talked, linked, replied = ctx.talked, ctx.linked, ctx.replied_by
    overlaps, rare, count_after = ctx.overlaps, ctx.rare, ctx.count_after
    latest_sender = latest_by_sender.get(sender, -1)
    latest_to_sender = latest_to.get(sender)
    last_addr_of_sender = last_addressee.get(sender)
    mine = ctx.my_latest
    mine_id = None if mine is None else mine.message_id
    mine_parent = None if mine is None else mine.parent
    best_kw, best_cos = ctx.best_keywords, ctx.best_cosine
    involving, last_other, first_by_sender = ctx.latest_involving, ctx.last_other, ctx.first_by_sender
    topic_of = threads.topic_of if threads is not None else None
    sender_topic = threads.sender_topic if threads is not None else None
    addressee_topics = threads.addressee_topics if threads is not None else _EMPTY
    rows = []
    for i, c in enumerate(window):
        cosine = cosines[i]
        dist = n - 1 - i
        cs = c.sender
        addr = cs in m_addr
        to_me = sender in c.addressees
        same = cs == sender
        latest_c = latest_by_sender.get(cs, -1)
        overlap = overlaps[i]
        topic = topic_of.get(c.message_id) if topic_of is not None else None
        answered_me = not same and c.parent_sender == sender
        replied_by = replied.get(c.message_id, _EMPTY)
        question = c.question
        rows.append([
            float(dist == 0),  # prev
            math.log1p(dist),  # log_dist
            math.log1p(max(0.0, ts - c.ts) / 60.0),  # log_gap_min
            float(addr),  # addresses_cand_sender
            float(addr and latest_c == i),  # addresses_cand_sender_latest
            float(to_me),  # cand_addresses_sender
            float(to_me and latest_to_sender == i),  # cand_addresses_sender_latest
            float(same),  # same_sender
            float(same and last_other < i),  # same_sender_no_other
            float(latest_c == i),  # cand_sender_latest
            float(has_m_addr and not addr),  # addressee_mismatch
            float(bool(m_addr.intersection(c.addressees)) and not addr and not to_me),  # same_addressee
            float(question),  # cand_question
            float(not c.addressees),  # cand_no_addressee
            no_m_addr,  # msg_no_addressee
            overlap,  # keyword_overlap
            float(overlap > 0),  # keyword_any
            0.0 if cosine is None else cosine,  # cosine
            float(cosine is None),  # no_vector
            float(latest_sender > i),  # sender_spoke_since
            float(latest_c > i),  # cand_sender_spoke_since
            float(first_by_sender.get(cs) == i),  # cand_sender_new
            float(thanks),  # msg_thanks
            float(thanks and to_me),  # msg_thanks_x_cand_addresses
            float(not same and ((cs, sender) in talked or (sender, cs) in talked)),
            float(last_addressee.get(cs) == sender),  # cand_sender_last_addressed_sender
            float(last_addr_of_sender == cs != sender),  # sender_last_addressed_cand_sender
            float(involving == i),  # latest_involving_sender
            float(cs in mentions and not addr),  # mentions_cand_sender
            float(sender in c.mentions and not to_me),  # cand_mentions_sender
            float(overlap > 0 and overlap >= best_kw),  # keyword_best
            0.0 if cosine is None else cosine - best_cos,  # cosine_gap
            float(addr and question),  # addressed_x_cand_question
            float(addr and overlap > 0),  # addressed_x_keyword
            math.log1p(count_after[i]),  # cand_sender_rank
            float(dist == 1),
            float(dist == 2),
            float(3 <= dist <= 5),
            float(6 <= dist <= 10),
            float(latest_c >= n - 5),  # cand_sender_recent
            c.length,  # cand_long
            float(c.greeting),  # cand_greeting
            float(topic is not None and topic == sender_topic),  # same_thread_as_sender
            float(topic is not None and topic in addressee_topics),  # same_thread_as_addressee
            float(answered_me),  # cand_answered_sender
            float(not same and mine is not None and c.parent == mine_id),  # cand_answers_my_latest
            float(mine is not None and mine_parent == c.message_id),  # my_latest_answered_cand
            float(not same and ((sender, cs) in linked or (cs, sender) in linked)),
            float(bool(replied_by)),  # cand_has_reply
            float(sender in replied_by),  # cand_replied_by_sender
            float(c.parent == c.message_id),  # cand_root
            float(answered_me and latest_c == i),  # cand_latest_answered_sender
            float(c.thanks),  # cand_thanks
            float(question and not replied_by),  # cand_open_question
            float(c.command),  # cand_command
            min(rare[i], 3.0),  # rare_overlap
        ])
    return rows
