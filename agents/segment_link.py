"""The reply linker inside the streaming segmenter: infer each message's implicit parent, turn the link
distribution into a per-topic ``link`` signal, and keep the chat's recent-message window.

The window lives in the :class:`~agents.segment_state.ChatPool` checkpoint: one small :class:`LinkMsg` per
recent message and its vector as base64 float16 (about 1 KB at 384 dimensions), so a restored worker links
exactly as the one that stopped.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from agents.reply_linker import LinkMsg, Threads, default_weights, rank, text_cues
from agents.reply_window import WindowCols
from language.text import text_cache

if TYPE_CHECKING:
    from agents.config import SegmenterConfig
    from agents.segment_signals import Features
    from agents.segment_state import ChatPool
    from schemas import ChatMessage


@dataclass
class LinkView:
    """The linker's reading of one message: its best parent, and the probability mass per active topic."""

    parent: str | None = None  # best candidate (the message itself = starts a conversation)
    parent_p: float = 0.0
    p_self: float = 0.0
    topic_mass: dict[str, float] = field(default_factory=dict)
    ranking: list[tuple[str, float]] = field(default_factory=list)

    def best_in(self, message_ids: set[str]) -> tuple[str, float] | None:
        return next(((m, p) for m, p in self.ranking if m in message_ids), None)


def encode_vec(vec: np.ndarray | None) -> str:
    return "" if vec is None else base64.b64encode(np.asarray(vec, dtype=np.float16).tobytes()).decode()


@text_cache(8192)  # the same window entries are read by the next 60 messages
def decode_vec(raw: str) -> np.ndarray | None:
    if not raw:
        return None
    vec = np.frombuffer(base64.b64decode(raw), dtype=np.float16).astype(np.float32)
    vec.setflags(write=False)  # shared through the cache
    return vec


def link_msg(msg: ChatMessage, f: Features) -> LinkMsg:
    return LinkMsg(
        message_id=msg.message_id,
        sender=msg.sender,
        ts=f.ts,
        addressees=f.addressees,
        keywords=f.keywords,
        question=f.question,
        length=f.length,
        mentions=f.named,
        **text_cues(msg.text),
    )


def read_links(pool: ChatPool, lm: LinkMsg, f: Features, cfg: SegmenterConfig) -> LinkView:
    """Rank the candidate parents of ``lm`` over the pool's window; ``LinkView()`` (no signal) when the linker
    is off or the window holds fewer than three people: in a dialogue every turn answers the previous one,
    so the links say nothing about topics there (content decides)."""
    if not cfg.use_linker:
        return LinkView()
    weights = default_weights(cfg.linker_weights)
    window = pool.window[-weights.window :]
    cols = pool.link_cols()
    if speakers(lm, window, cols) < 3:
        return LinkView()
    cosines = None
    if f.vector is not None and window:
        vec = f.vector
        if len(pool.window_vectors) < len(window) or (cosines := pool.link_vectors(decode_vec).cosines(vec, len(window))) is None:
            vecs = [decode_vec(v) for v in pool.window_vectors[-len(window) :]]
            cosines = np.asarray(  # one dot per row: a matrix product rounds differently
                [v.dot(vec) if v is not None and v.shape == vec.shape else np.nan for v in vecs], dtype=np.float64
            )
    ranking = rank(lm, window, cosines, weights, threads(pool, lm), cols)
    view = LinkView(ranking=ranking)
    view.parent, view.parent_p = ranking[0]
    for mid, p in ranking:
        if mid == lm.message_id:
            view.p_self = p
        elif (tid := pool.msg_topic.get(mid)) is not None:
            view.topic_mass[tid] = view.topic_mass.get(tid, 0.0) + p
    return view


def speakers(lm: LinkMsg, window: list[LinkMsg], cols: WindowCols) -> int:
    """How many people wrote ``lm`` or a ``window`` message (read from the codes of ``cols`` when they are
    the window's)."""
    if len(cols) != len(window) or (window and cols.window[0] is not window[0]):
        return len({lm.sender, *(m.sender for m in window)})
    codes = set(cols.sender.tolist())
    return len(codes) + (cols.codes.get(lm.sender, -1) not in codes)


def threads(pool: ChatPool, lm: LinkMsg) -> Threads:
    seen = pool.senders.get(lm.sender)
    to = frozenset(s.topic_id for a in lm.addressees if (s := pool.senders.get(a)) is not None)
    return Threads(pool.msg_topic, seen.topic_id if seen is not None else None, to)


def remember(
    pool: ChatPool, lm: LinkMsg, vector: np.ndarray | None, cfg: SegmenterConfig, parent: str | None = None
) -> None:
    """Append the message, with the parent chosen for it, to the pool's window (bounded by the linker's
    window); later messages read who answered whom from it."""
    if not cfg.use_linker:
        return
    if parent is not None:
        sender = next((m.sender for m in reversed(pool.window) if m.message_id == parent), None)
        lm = lm.model_copy(update={"parent": parent, "parent_sender": sender})
    pool.push_link(lm, encode_vec(vector), default_weights(cfg.linker_weights).window, decode_vec)
