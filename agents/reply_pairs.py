"""The reply linker's pair features (:data:`agents.reply_features.PAIR_FEATURES`, in that order), computed a
column at a time over the whole window: the linker's hot path (every message scores every window message).

One pass over the window collects what each candidate says (its sender as a small integer code, its time,
who it addressed, its parent); each feature is then one numpy expression over those arrays, and the senders'
facts (who talked to whom, who was named) are read once per sender, not once per candidate. Every value is
the one a per-candidate loop would give, bit for bit: booleans are exact, ``log1p`` of an integer comes from
a table of :func:`math.log1p` values, and the time gap is still :func:`math.log1p` of the same float.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from agents.reply_window import WindowCols

__all__ = ["PairFacts", "among", "best_cosine", "later_than", "log1p_ints", "pair_columns", "topic_codes"]

N_PAIR = 56  # len(PAIR_FEATURES)
# the reductions ndarray.sum / .any / .max call, without their Python wrappers (~1 us a call on small arrays)
_add, _or, _max = np.add.reduce, np.logical_or.reduce, np.maximum.reduce


@dataclass(frozen=True, slots=True)
class PairFacts:
    """What the self-link row needs to know about the window (read while the pair columns are built)."""

    sender_known: bool  # the message's sender wrote a window message
    sender_addressed: bool  # a window message addressed the message's sender


@cache
def log1p_ints(n: int) -> np.ndarray:
    """``math.log1p(k)`` for ``k`` in ``0..n-1`` (read-only): the same floats as the scalar calls."""
    table = np.asarray([math.log1p(k) for k in range(n)], dtype=np.float64)
    table.setflags(write=False)
    return table


@cache
def _dist_rows(n: int) -> np.ndarray:
    """The rows of :data:`_DIST_ROWS` for a window of ``n`` (they depend on the distance alone)."""
    dist = np.arange(n - 1, -1, -1)
    rows = np.asarray(
        [dist == 0, log1p_ints(n + 1)[dist], dist == 1, dist == 2, (dist >= 3) & (dist <= 5), (dist >= 6) & (dist <= 10)],
        dtype=np.float64,
    )
    rows.setflags(write=False)
    return rows


@cache
def later_than(n: int) -> np.ndarray:
    """``[i, j]``: j comes after i."""
    idx = np.arange(n)
    out = idx > idx[:, None]
    out.setflags(write=False)
    return out


_DIST_ROWS = [0, 1, 35, 36, 37, 38]  # prev, log_dist, dist_1, dist_2, dist_3_5, dist_6_10
_STATIC_ROWS = [12, 13, 40, 41, 50, 52, 54]  # the window columns' STATIC, in that order


def topic_codes(ids: list[str], topic_of: dict[str, str]) -> tuple[np.ndarray, dict[str, int]]:
    """Each message's topic as a code (-1 unknown), and the codes."""
    codes: dict[str, int] = {}
    t = [-1 if tid is None else codes.setdefault(tid, len(codes)) for tid in map(topic_of.get, ids)]
    return np.asarray(t, dtype=np.intp), codes


def pair_columns(
    msg: Any,
    cols: WindowCols,
    shared: list[frozenset[str]],
    cosines: np.ndarray | None,
    threads: Any = None,
    topics: tuple[np.ndarray, dict[str, int]] | None = None,
) -> tuple[np.ndarray, PairFacts]:
    """The pair features of ``msg`` answering each message of the window ``cols`` describes, one row per
    feature (``(N_PAIR, len(cols))``); ``shared[i]`` the content words ``msg`` shares with the i-th,
    ``cosines[i]`` their cosine (NaN when either vector is missing; ``cosines`` None: no vectors);
    ``threads`` the segmenter's ``Threads`` or None, ``topics`` its :func:`topic_codes` for the window."""
    n = len(cols)
    codes = cols.codes
    me = codes.get(msg.sender, -2)  # -1 pads the code arrays: nobody
    m_codes = [codes[a] for a in msg.addressees if a in codes]
    s = cols.sender
    idx = np.arange(n)
    logs = log1p_ints(n + 1)
    same_sender = s[:, None] == s  # [i, j]: window messages i and j have one sender
    latest_c = n - 1 - same_sender[:, ::-1].argmax(1)  # each candidate's sender's latest message
    count_after = _add(same_sender & later_than(n), 1)
    same = s == me
    not_same = ~same
    addr = among(s, m_codes)
    ad = cols.addressed
    has_addr = ad[:, 0] >= 0
    to_me = _or(ad == me, 1)
    last_other = _last(not_same)
    latest_to_sender = _last(to_me)
    is_latest = latest_c == idx
    question = cols.static[0] > 0
    overlap, rare = _overlaps(msg.keywords, cols.keywords, shared)
    kw_any = overlap > 0
    best_kw = float(_max(overlap))
    if cosines is None:
        no_vec = np.ones(n, dtype=bool)
        cosine = gap = np.zeros(n)
    else:
        cos = np.asarray(cosines, dtype=np.float64)
        no_vec = np.isnan(cos)
        cosine = np.where(no_vec, 0.0, cos)
        gap = np.where(no_vec, 0.0, cos - best_cosine(cos))
    mine = _last(same)  # the sender's latest message, -1 none
    parent = cols.parent_at - cols.base  # index in the window (negative: none, or outside)
    answers = cols.answers & (parent >= 0)
    has_reply = np.zeros(n, dtype=bool)
    has_reply[parent[answers]] = True
    replied_by_sender = np.zeros(n, dtype=bool)
    replied_by_sender[parent[answers & same]] = True
    ps = cols.parent_sender
    answered_me = not_same & (ps == me)
    linked = cols.answers & (ps >= 0)
    linked_codes = {*ps[linked & same].tolist(), *s[linked & (ps == me)].tolist()}
    talked_codes = {*s[to_me].tolist(), *ad[same].ravel().tolist()}
    addressed_last = same_sender & has_addr  # [i, j]: j is by i's sender and addresses someone
    last_addressed = n - 1 - addressed_last[:, ::-1].argmax(1)  # meaningful where addressed_last[i].any()
    my_addressed = _last(same & has_addr)
    d = msg.ts - cols.ts
    ts_gap = np.where(d > 0.0, d, 0.0) / 60.0  # max(0.0, d) as Python has it (0.0 for NaN and -0.0)
    x = np.zeros((N_PAIR, n), dtype=np.float64)
    static = cols.static
    x[_DIST_ROWS] = _dist_rows(n)
    x[_STATIC_ROWS] = static  # cand_question, cand_no_addressee, cand_long, cand_greeting, cand_root, ...
    x[2] = list(map(math.log1p, ts_gap.tolist()))  # log_gap_min
    x[3] = addr  # addresses_cand_sender
    x[4] = addr & is_latest  # addresses_cand_sender_latest
    x[5] = to_me  # cand_addresses_sender
    x[6] = to_me & (idx == latest_to_sender)  # cand_addresses_sender_latest
    x[7] = same  # same_sender
    x[8] = same & (last_other < idx)  # same_sender_no_other
    x[9] = is_latest  # cand_sender_latest
    if msg.addressees:
        x[10] = ~addr  # addressee_mismatch
        x[11] = _or(among(ad, m_codes), 1) & ~addr & ~to_me  # same_addressee
    x[14] = not msg.addressees  # msg_no_addressee
    x[15] = overlap  # keyword_overlap
    x[16] = kw_any  # keyword_any
    x[17] = cosine  # cosine
    x[18] = no_vec  # no_vector
    x[19] = mine > idx  # sender_spoke_since
    x[20] = latest_c > idx  # cand_sender_spoke_since
    x[21] = same_sender.argmax(1) == idx  # cand_sender_new
    x[22] = msg.thanks  # msg_thanks
    if msg.thanks:
        x[23] = to_me  # msg_thanks_x_cand_addresses
    x[24] = not_same & among(s, talked_codes)  # pair_talked
    x[25] = _or(addressed_last, 1) & (ad[last_addressed, 0] == me)  # cand_sender_last_addressed_sender
    if my_addressed >= 0:  # sender_last_addressed_cand_sender
        x[26] = not_same & (s == ad[my_addressed, 0])
    x[27] = idx == _last(same | to_me)  # latest_involving_sender
    x[28] = among(s, [codes[a] for a in msg.mentions if a in codes]) & ~addr  # mentions_cand_sender
    x[29] = _or(cols.mentioned == me, 1) & ~to_me  # cand_mentions_sender
    x[30] = kw_any & (overlap >= best_kw)  # keyword_best
    x[31] = gap  # cosine_gap
    x[32] = addr & question  # addressed_x_cand_question
    x[33] = addr & kw_any  # addressed_x_keyword
    x[34] = logs[count_after]  # cand_sender_rank
    x[39] = latest_c >= n - 5  # cand_sender_recent
    if threads is not None:
        t, tcodes = topics if topics is not None else topic_codes(cols.ids, threads.topic_of)
        if threads.sender_topic in tcodes:
            x[42] = t == tcodes[threads.sender_topic]  # same_thread_as_sender
        x[43] = among(t, [tcodes[a] for a in threads.addressee_topics if a in tcodes])  # same_thread_as_addressee
    x[44] = answered_me  # cand_answered_sender
    if mine >= 0:
        x[45] = not_same & (parent == mine)  # cand_answers_my_latest
        x[46] = idx == parent[mine]  # my_latest_answered_cand
    x[47] = not_same & among(s, linked_codes)  # linked_pair
    x[48] = has_reply  # cand_has_reply
    x[49] = replied_by_sender  # cand_replied_by_sender
    x[51] = answered_me & is_latest  # cand_latest_answered_sender
    x[53] = question & ~has_reply  # cand_open_question
    x[55] = np.minimum(rare, 3.0)  # rare_overlap
    return x, PairFacts(mine >= 0, latest_to_sender >= 0)


def best_cosine(cos: np.ndarray) -> float:
    """The largest cosine of ``cos`` (NaN: no vector), 0.0 when none is finite: ``np.nanmax`` as Python's
    ``max`` gives it (called per message and per topic)."""
    known = cos[~np.isnan(cos)]
    return max(known.tolist()) if _or(np.isfinite(known)) else 0.0


def _overlaps(
    words: frozenset[str], keywords: list[frozenset[str]], shared: list[frozenset[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate: the Jaccard of its content words with the message's, and its shared words each weighted
    1 / the number of candidates sharing it (summed in the order the shared set gives them)."""
    n = len(shared)
    overlap, rare = np.zeros(n), np.zeros(n)
    hits = [i for i, sh in enumerate(shared) if sh]
    if hits:
        df: dict[str, int] = {}
        for i in hits:
            for kw in shared[i]:
                df[kw] = df.get(kw, 0) + 1
        size = len(words)
        overlap[hits] = [len(shared[i]) / (len(keywords[i]) + size - len(shared[i])) for i in hits]
        rare[hits] = [sum(1.0 / df[kw] for kw in shared[i]) for i in hits]
    return overlap, rare


def among(a: np.ndarray, codes: list[int] | set[int]) -> np.ndarray:
    """Where ``a`` holds one of ``codes`` (a few: a loop of comparisons beats ``np.isin``)."""
    out = np.zeros(a.shape, dtype=bool)
    for c in codes:
        if c >= 0:
            out |= a == c
    return out


def _last(mask: np.ndarray) -> int:
    """The index of the last True of ``mask``, -1 when none."""
    last = len(mask) - 1 - int(mask[::-1].argmax())
    return last if mask[last] else -1
