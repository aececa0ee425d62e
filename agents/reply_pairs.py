"""The reply linker's pair features (:data:`agents.reply_features.PAIR_FEATURES`, in that order): one row per
candidate parent of a message, the linker's hot loop (every message scores every window message).

What depends on the message alone is read once per message, not once per candidate.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["pair_rows"]

_EMPTY: frozenset[str] = frozenset()


def pair_rows(msg: Any, window: list[Any], ctx: Any, cosines: list[float | None], threads: Any = None) -> list[list[float]]:
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
