"""Signals of the topic segmenter (design doc 001, 3.2.1): pure functions over one message and one topic.

A message is reduced once to :class:`Features` (sender, event time, addressees, keywords, vector); each active
topic is then scored with :func:`score_topic`. Signals are in ``[0, 1]``:

- ``reply``: an explicit ``reply_to`` into the topic (1.0, and it always wins); addressing someone whose
  latest message is in the topic (an implicit reply, 1.0; ``mention_elsewhere`` if they spoke there but last
  spoke elsewhere); the sender was addressed in the topic after their last message there (they are
  answering, ``addressed_reply``); in a group chat, naming in passing someone whose latest message is in the
  topic (``named_reply``). "Thanks Priya" and "..., Marco!" address Priya and Marco (``vocative``).
- ``user``: the sender's own continuity: 1.0 in the topic where they last spoke, ``user_elsewhere`` in
  another topic they took part in; full within ``user_window_s``, then halving every window.
- ``semantic``: max cosine of the message vector to the topic centroid and its last-k vectors, rescaled above
  ``semantic_floor`` (sentence embeddings of unrelated chat lines are rarely below ~0.1).
- ``entity``: the share of the message's keywords already used in the topic.

The total is ``w_reply * reply + decay * (w_user * user + w_semantic * semantic + w_entity * entity + w_time)
- w_mismatch * [the message addresses only people absent from the topic]``, with
``decay = 0.5 ** (idle / time_decay_half_life_s)`` and idle the topic's silence so far: the structural reply
signal is not decayed (an explicit reply is explicit however late), and ``w_time * decay`` alone is the pull
of a conversation that is still going on. In a slow chat (a message every few minutes) the half-life and
the same-user window are stretched by :func:`slow_scale`. The message joins the best topic if the total
reaches :func:`join_threshold` (lowered for a revision cue such as "Small change:" or "Correction:").
"""

from __future__ import annotations

import math
import re
import statistics
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from agents.segment_state import rounded  # noqa: F401 (re-exported: agents.forget reads it from here)
from language.text import jieba

if TYPE_CHECKING:
    from agents.config import SegmenterConfig
    from agents.segment_state import ActiveTopic, ChatPool
    from schemas import ChatMessage

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(f"(?P<cjk>[{_CJK}]+)|(?P<word>[a-z0-9][a-z0-9_.+#/-]*[a-z0-9+#]|[a-z])")
# "nick: text", "nick, text", "@nick text" at the start of a message (IRC tab completion, IM @-mentions).
_LEAD_RE = re.compile(r"^\s*(?:@(?P<at>[^\s:,;@]{1,64})|(?P<nick>[^\s:,;@]{1,64})\s*[:,;>])")
_NAME_TOKEN_RE = re.compile(r"[^\W\d][\w\-\[\]\\^{}`|]*")
_AT_RE = re.compile(r"@([^\s:,;@]{1,64})")
# a name spoken to, not about: "Thanks Priya", "Congrats Priya!!", "Morning Olive", "see you, Marco"
_VOCATIVE_RE = re.compile(
    r"^\s*(?:thanks|thank you|thx|ty|cheers|congrats|congratulations|sorry|welcome|hi|hey|hello|morning"
    r"|good morning|evening|good evening|night|good night|bye)[\s,]+(?P<lead>[^\W\d][\w\-]*)"
    r"|,\s*(?P<tail>[^\W\d][\w\-]*)\s*[.!?]*\s*$",
    re.IGNORECASE,
)
# a revision of something said earlier ("Small change: ...", "Correction: ...", "更正：..."): it refers back,
# so it continues a conversation rather than starting one
_REVISION_RE = re.compile(
    r"^\s*(?:small change|quick change|slight change|change of plans?|correction|update|actually|scratch that"
    r"|edit|more precisely)\b|^\s*(?:更正|纠正|改一下|计划有变|有变|更新一下|补充一下|其实)",
    re.IGNORECASE,
)

_STOP_EN = frozenset(
    """
    a an the and or but if then else so than too very of to in on at by for with about as from into over under
    up down out off again once between through during before after above below until while because is am are
    was were be been being do does did doing done have has had having i me my we us our you your he him his she
    her it its they them their this that these those there here what which who whom whose when where why how
    all any both each few more most other some such no not only own same just can will would should could may
    might must also im ive id ill youre dont doesnt didnt isnt arent wasnt cant couldnt wont wouldnt havent
    thats theres whats lets yeah yes yep nope oh ok okay hi hey hello lol haha hmm heh um uh thanks thank thx
    please pls plz know anyone anybody someone something anything help need want get got try trying tried use
    using used like just now then still really think thought see say said make made way well good right sure
    one two also even much many any way work works working thing things let going gonna wanna already
    """.split()
)
_STOP_ZH = frozenset(
    """
    的 了 是 在 和 与 及 就 都 也 还 又 把 被 给 让 吗 呢 吧 啊 呀 哦 嗯 哈 啦 嘛 着 过 这 那 个 之 而 或 但 我 你 您
    他 她 它 们 我们 你们 他们 咱们 自己 这个 那个 这些 那些 一个 什么 怎么 为什么 没有 就是 还是 但是 因为 所以
    如果 然后 可以 已经 不是 这样 那样 一下 一些 有点 哈哈 哈哈哈 好的 嗯嗯 大家 现在 知道 觉得 应该
    """.split()
)


@dataclass(frozen=True, slots=True)
class Features:
    """What the segmenter needs to know about one message, computed once per message."""

    sender: str
    ts: float
    addressees: tuple[str, ...]
    keywords: frozenset[str]
    reply_to: str | None
    vector: np.ndarray | None
    question: bool = False
    length: float = 0.0  # characters / 200, capped at 1
    named: tuple[str, ...] = ()  # known senders named anywhere in the text (not as the addressee)
    pace: float = 1.0  # the chat's pace: time windows are stretched by this (see :func:`pace_scale`)
    revision: bool = False  # opens with a revision cue (refers back to something said)
    group: bool = True  # not a private (two-person) chat


def features(msg: ChatMessage, vector: object, pool: ChatPool, cfg: SegmenterConfig | None = None) -> Features:
    """Reduce a message (and its optional embedding) to what the signals read."""
    group = msg.chat_type != "private"  # in a private chat every turn is spoken to the other: no topic cue
    to = addressees(msg, pool.names, vocative=cfg is not None and cfg.vocative and group)
    return Features(
        sender=msg.sender,
        ts=msg.ts.timestamp(),
        addressees=to,
        keywords=keywords(msg.text),
        reply_to=msg.reply_to,
        vector=as_unit(vector),
        question="?" in msg.text or "\uff1f" in msg.text,
        length=min(1.0, len(msg.text) / 200),
        named=named(msg.text, pool.names, {msg.sender, *to}),
        pace=pace_scale(pool.gaps, cfg) * slow_scale(pool.gaps, cfg),
        group=group,
        revision=cfg is not None and cfg.threshold_revision != 0 and bool(_REVISION_RE.match(msg.text)),
    )


def pace_scale(gaps: list[float], cfg: SegmenterConfig | None) -> float:
    """Per-chat pace (design doc 6.4, dynamic thresholds): the median of the chat's recent gaps between
    messages over ``pace_reference_s``, clamped to ``[pace_min, pace_max]``. A slow chat's silences are
    longer, so its time decay and same-user window stretch; a fast chat's shrink. 1.0 when off or young."""
    if cfg is None or not cfg.pace_adaptive or len(gaps) < 8:
        return 1.0
    ratio = statistics.median(gaps) / cfg.pace_reference_s
    return min(cfg.pace_max, max(cfg.pace_min, ratio))


def slow_scale(gaps: list[float], cfg: SegmenterConfig | None) -> float:
    """How much slower than a live conversation this chat is (1.0 at most one message a ``slow_reference_s``):
    the median of its gaps so far over ``slow_reference_s``, shrunk in log space towards 1 by a prior worth
    ``slow_prior_n`` gaps (the first gaps say little), within ``[1, slow_max]``. It only stretches: a chat of
    people answering every few minutes keeps its topics open and its pull for that long, where IRC-speed
    settings would close or leave them after two gaps. 1.0 when off, before any gap, or when
    ``pace_adaptive`` (the symmetric scale) is on."""
    if cfg is None or cfg.slow_max <= 1.0 or cfg.pace_adaptive or not gaps:
        return 1.0
    ratio = statistics.median(gaps) / cfg.slow_reference_s
    if ratio <= 1.0:
        return 1.0
    shrunk = math.exp(math.log(ratio) * len(gaps) / (len(gaps) + cfg.slow_prior_n))
    return min(cfg.slow_max, shrunk)


def named(text: str, names: dict[str, str], skip: set[str]) -> tuple[str, ...]:
    """Known senders whose name (3+ characters) appears as a token anywhere in ``text``."""
    found: list[str] = []
    for token in _NAME_TOKEN_RE.findall(text):
        key = token.lower().rstrip("_")
        sid = names.get(key) if len(key) >= 3 else None
        if sid is not None and sid not in skip and sid not in found:
            found.append(sid)
    return tuple(found)


def keywords(text: str) -> frozenset[str]:
    """Content words: Latin tokens of 3+ characters (paths, package names kept whole) that are not stopwords
    or numbers, and jieba words of 2+ characters that are not function words."""
    out: set[str] = set()
    for m in _TOKEN_RE.finditer(unicodedata.normalize("NFKC", text).lower()):
        run = m.group("cjk")
        if run is not None:
            out.update(w for w in jieba().cut(run) if len(w) >= 2 and w not in _STOP_ZH)
            continue
        word = m.group("word").strip("./-")
        if len(word) >= 3 and word not in _STOP_EN and not word.replace(".", "").isdigit():
            out.add(word)
    return frozenset(out)


def addressees(msg: ChatMessage, names: dict[str, str], *, vocative: bool = False) -> tuple[str, ...]:
    """Sender ids this message is addressed to: ``msg.mentions`` plus a leading ``name:``/``name,``/``@name``
    (and inline ``@name``) that names a known recent sender, and with ``vocative`` a known name (exactly)
    after a leading greeting or thanks or after a final comma. ``names`` maps lowercased names/ids to ids."""
    found: list[str] = []
    for mention in msg.mentions:
        sid = names.get(mention.lower(), mention)
        if sid != msg.sender and sid not in found:
            found.append(sid)
    lead = _LEAD_RE.match(msg.text)
    candidates = [lead.group("at") or lead.group("nick")] if lead else []
    candidates += _AT_RE.findall(msg.text)
    for token in candidates:
        sid = resolve_name(token, names)
        if sid is not None and sid != msg.sender and sid not in found:
            found.append(sid)
    voc = _VOCATIVE_RE.search(msg.text) if vocative else None
    if voc is not None:
        sid = names.get((voc.group("lead") or voc.group("tail")).lower())
        if sid is not None and sid != msg.sender and sid not in found:
            found.append(sid)
    return tuple(found)


def resolve_name(token: str, names: dict[str, str]) -> str | None:
    """Exact (case-insensitive) name, else the unique known name it abbreviates (``Hik`` -> ``Hikaru79``)."""
    key = token.lower().rstrip("_")
    if key in names:
        return names[key]
    if len(key) < 3:
        return None
    hits = {sid for name, sid in names.items() if name.startswith(key)}
    return hits.pop() if len(hits) == 1 else None


def as_unit(vector: object) -> np.ndarray | None:
    """A float32 unit vector, or None for a missing/zero vector."""
    if vector is None:
        return None
    v = np.asarray(vector, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 and math.isfinite(norm) else None


def semantic_signal(topic: ActiveTopic, vector: np.ndarray | None, cfg: SegmenterConfig) -> float:
    """Max cosine to the centroid and the last-k vectors, rescaled from ``[semantic_floor, 1]`` to ``[0, 1]``."""
    mat = topic.vectors() if vector is not None else None
    if mat is None or mat.shape[1] != vector.shape[0]:
        return 0.0
    best = float(np.maximum.reduce(mat @ vector))  # .max() without its Python wrapper
    return min(1.0, max(0.0, (best - cfg.semantic_floor) / (1.0 - cfg.semantic_floor)))


def entity_signal(topic: ActiveTopic, words: frozenset[str]) -> float:
    """Share of the message's keywords already used in the topic (a one-sided Jaccard)."""
    if not words or not topic.keywords:
        return 0.0
    shared = sum(1 for w in words if w in topic.keywords)
    return shared / max(len(words), 2)


def reply_signal(topic: ActiveTopic, f: Features, pool: ChatPool, cfg: SegmenterConfig) -> float:
    if f.reply_to is not None and pool.msg_topic.get(f.reply_to) == topic.topic_id:
        return 1.0
    best = 0.0
    for sid in f.addressees:
        if sid in topic.last_by_sender:
            seen = pool.senders.get(sid)
            here = seen is not None and seen.topic_id == topic.topic_id
            best = max(best, 1.0 if here else cfg.mention_elsewhere)
    for sid in f.named if f.group else ():  # named in passing ("we'll meet at Marco's flat"), not spoken to
        seen = pool.senders.get(sid)
        if seen is not None and seen.topic_id == topic.topic_id:
            best = max(best, cfg.named_reply)
    asked = topic.addressed.get(f.sender)
    if asked is not None and asked >= topic.last_by_sender.get(f.sender, -math.inf):
        best = max(best, cfg.addressed_reply)
    return best


def user_signal(topic: ActiveTopic, f: Features, pool: ChatPool, cfg: SegmenterConfig) -> float:
    last = topic.last_by_sender.get(f.sender)
    if last is None:
        return 0.0
    seen = pool.senders.get(f.sender)
    base = 1.0 if seen is not None and seen.topic_id == topic.topic_id else cfg.user_elsewhere
    window = cfg.user_window_s * f.pace
    gap = max(0.0, f.ts - last) - window
    return base if gap <= 0 else base * 0.5 ** (gap / window)


def score_topic(
    topic: ActiveTopic, f: Features, pool: ChatPool, cfg: SegmenterConfig, link: float = 0.0
) -> tuple[float, dict[str, float]]:
    """Affinity of one message to one topic: the total and its per-signal breakdown. ``link`` is the reply
    linker's probability that the message answers one of the topic's messages (:mod:`agents.segment_link`)."""
    idle = max(0.0, f.ts - topic.last_ts)
    decay = 0.5 ** (idle / (cfg.time_decay_half_life_s * f.pace))
    reply = reply_signal(topic, f, pool, cfg)
    user = user_signal(topic, f, pool, cfg)
    ent = entity_signal(topic, f.keywords)
    sem = semantic_signal(topic, f.vector, cfg)
    mismatch = 1.0 if f.addressees and not any(a in topic.last_by_sender for a in f.addressees) else 0.0
    soft = cfg.w_user * user + cfg.w_semantic * sem + cfg.w_entity * ent
    total = cfg.w_reply * reply + decay * (soft + cfg.w_time) - cfg.w_mismatch * mismatch + cfg.w_link * link
    parts = {
        "reply": reply,
        "link": link,
        "user": user,
        "semantic": sem,
        "entity": ent,
        "decay": decay,
        "mismatch": mismatch,
        "total": total,
    }
    return total, parts


def join_threshold(f: Features, known_sender: bool, cfg: SegmenterConfig) -> float:
    """The score a message must reach to join a topic. Questions and long messages are typical openers (the
    bar rises); people already talking, or addressing someone, usually continue (it falls)."""
    return (
        cfg.threshold
        + cfg.threshold_question * f.question
        + cfg.threshold_length * f.length
        + cfg.threshold_known_sender * known_sender
        + cfg.threshold_addressed * bool(f.addressees)
        + cfg.threshold_revision * f.revision
    )


def effective_threshold(pool: ChatPool, f: Features, cfg: SegmenterConfig) -> float:
    """The join threshold for this message in this chat."""
    return join_threshold(f, f.sender in pool.senders, cfg)
