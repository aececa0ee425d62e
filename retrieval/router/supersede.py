"""Which statement replaced which (pure): a learned pairwise decision over the items a question retrieved.

People change facts in words no rule table knows ("wednesdays from now on", "RSVP count: 132", "改去广州").
What does not depend on the wording is the shape of a change: a *newer* item that talks about what an
older, relevant item talks about (it shares its words, it is found by the same question, it is a statement
rather than a question) and is not merely the next line of the same exchange. :func:`supersedes` scores one
(older, newer) pair of retrieved items on such features with a small logistic model, fitted on hand-written
chats whose facts change (``python -m bench.fit_supersede``, reported leave-one-chat-out).

:func:`reorder` walks the question's top items: when a newer candidate probably replaced the item at a
position, it takes that position (and is checked in turn, so a value changed twice ends with the newest),
the older one follows it, noted "superseded (said …) by: …", the newer one "previously: … (said …)". An item
nothing replaced keeps its place: relevance decides the order, time only between statements of one thing.
A question about the past ("before", "originally", "以前", "原来") keeps its order. The rule words here are
features of the model, never the decision by themselves.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from language.extract.corrections import denied_numbers, denied_values, numbers
from language.extract.person import OUR_WORDS
from language.extract.plan_moves import moves_plan
from language.extract.slots import states_replacement
from language.extract.text import is_question
from language.lazy_re import lazy
from language.stem import stem
from language.text import extract_keywords, is_cjk_text, text_cache
from retrieval.router.abstain_calib import Component
from retrieval.router.answer_type import value_kinds

__all__ = ["FEATURES", "Frame", "Item", "Link", "SupersedeModel", "asks_past", "load_model", "pair_features", "related",
           "only_asks", "restates",
           "reorder"]

PACKAGED = Path(__file__).with_name("supersede_weights.json")
FORMAT = 1

FEATURES = ("shared_words", "shared_beyond_question", "cos_old", "cos_new", "fused_old", "fused_new", "rank_old", "rank_new",
            "new_is_question", "old_is_question", "log_days", "same_topic", "log_chars_new", "new_turn", "new_fact",
            "new_summary", "new_qa", "asks_past", "bm25_new", "bm25_old", "new_says_change", "new_says_now",
            "old_says_change", "asks_update", "pair_cos", "pair_nearest", "same_speaker", "new_negates_old",
            "value_stated")

_NOW = lazy(r"(?i)\b(?:now|these days|from now on|nowadays|currently|anymore|any more|no longer)\b|现在|目前|以后|今后|从此|不再")
_PAST = lazy(
    r"(?i)\b(?:before|originally|at first|used to|previously|initially|earlier|original|formerly|in the beginning)\b"
    r"|以前|之前|原来|一开始|最初|起初|本来|原先|最早|原本"
)


def asks_past(question: str) -> bool:
    """The question asks for an earlier value ("Where did they meet before …?", "原来定的是哪天？")."""
    return _PAST.search(question) is not None


def _read(text: str) -> dict[str, Any]:
    return dict(_reading(text))


# the stems of the words that say *that* something changed, not *what*: two lines sharing only "changed" or
# "now" are not about one thing ("Change: Nina does the slides" and "dinner time changed to 8pm"; a bot's
# "已更新：房租每月¥4800" and "已更新健身计划：每周二、六")
_CHANGE_WORDS = frozenset(stem(w) for w in ("change", "update", "switch", "move", "instead", "now", "anymore",
                                             "actually", "correction", "new", "mind")) | frozenset(
    "更新 改成 改为 改到 换成 换到 变成 调整 调到 修改 更正 现在 目前 以后 不再".split())


def _words(text: str) -> frozenset[str]:
    """The text's content keywords as stems: a changed value is often told in another form of the same word
    ("swims" -> "quit swimming", "leaving the depot at 7" -> "let's leave at 7:45"); Chinese words as they are."""
    return frozenset(map(stem, extract_keywords(text)))


@text_cache(1 << 13)
def _reading(text: str) -> tuple[tuple[str, Any], ...]:
    """What an item's text says, once per text (a chat's questions find many of the same items)."""
    return (("words", _words(text)), ("question", is_question(text.strip())),
            ("change", states_replacement(text) or moves_plan(text)), ("now", _NOW.search(text) is not None))


def _read_with(text: str, message: str) -> dict[str, Any]:
    """``_read(text)``, its words with those of the message it was drawn from (when that is another text)."""
    read = _read(text)
    if message and message != text:
        read["words"] = read["words"] | _read(message)["words"]
    return read


@dataclass(frozen=True)
class Item:
    """What the decision reads of one retrieved item."""

    doc_id: str
    text: str
    kind: str
    ts: datetime
    topic_id: str | None
    words: frozenset[str]  # content keywords (language.text.extract_keywords), stemmed
    question: bool  # a question, not a statement
    change: bool  # says something changed, moved or was corrected (the rule cues, read as a feature only)
    now: bool  # says what holds from now on ("now", "these days", "现在", "不再")
    cosine: float = 0.0
    bm25: float = 0.0
    fused: float = 0.0
    sources: tuple[str, ...] = ()
    speaker: str | None = None
    # the unit mean of its source turns' stored vectors (what it is about, whatever its words): how close two
    # items are compares what they say, where the question's cosine only says both answer it
    vector: tuple[float, ...] | None = None
    about: frozenset[str] = frozenset()  # the participants it states something about (abstain_parts.parts)
    message: str = ""  # a memory record's one source message, whose words it shares (``of``)

    @classmethod
    def of(cls, doc: Any, scores: dict[str, float], fused: float, vector: Sequence[float] | None = None,
           about: Collection[str] = (), message: str = "", said_at: datetime | None = None) -> Item:  # fmt: skip
        """From a document (``Doc`` or anything with its fields), its search scores and its sources' vector.
        ``message``: the one message a memory record was drawn from, whose words it shares too (the fact
        "the studio pays for the van hire now" left its message's "ignore my earlier numbers on the van");
        ``said_at``: when its newest source message was said (else the document's own time)."""
        return cls(doc_id=doc.doc_id, text=doc.text, kind=str(doc.kind), ts=said_at or doc.ts, topic_id=doc.topic_id,
                   **_read_with(doc.text, message), message=message, cosine=float(scores.get("cosine") or 0.0), bm25=float(scores.get("bm25") or 0.0),
                   fused=float(fused), sources=tuple(doc.source_message_ids), speaker=getattr(doc, "speaker", None),
                   vector=None if vector is None else tuple(np.asarray(vector, dtype=float).tolist()),
                   about=frozenset(about))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "text": self.text, "kind": self.kind, "ts": self.ts.isoformat(),
                "topic_id": self.topic_id, "cosine": self.cosine, "bm25": self.bm25, "fused": self.fused,
                "sources": list(self.sources), "speaker": self.speaker, "about": sorted(self.about),
                **({"message": self.message} if self.message else {}),
                "vector": None if self.vector is None else [round(v, 5) for v in self.vector]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Item:
        return cls(doc_id=d["doc_id"], text=d["text"], kind=d["kind"], ts=datetime.fromisoformat(d["ts"]),
                   topic_id=d.get("topic_id"), **_read_with(d["text"], d.get("message", "")),
                   message=d.get("message", ""), cosine=d.get("cosine", 0.0),
                   bm25=d.get("bm25", 0.0), fused=d.get("fused", 0.0),
                   sources=tuple(d.get("sources", ())), speaker=d.get("speaker"),
                   vector=None if d.get("vector") is None else tuple(d["vector"]), about=frozenset(d.get("about", ())))  # fmt: skip


def source_vector(sources: Sequence[str], vectors: dict[str, Any]) -> list[float] | None:
    """The unit mean of the sources' vectors that are known (None without any)."""
    found = [np.asarray(vectors[m], dtype=np.float32) for m in sources if m in vectors]
    if not found:
        return None
    v = np.mean(found, axis=0)
    n = float(np.linalg.norm(v))
    return (v / n).tolist() if n > 0 else None


def pair_cosines(items: Sequence[Item]) -> np.ndarray:
    """Cosines between the items' vectors, each pair standardised over the question's pairs (a model's cosines
    sit in a band of its own: MiniLM's unrelated pairs near 0.1, a Chinese model's near 0.85); NaN where an
    item has no vector."""
    n = len(items)
    out = np.full((n, n), np.nan)
    have = [i for i, x in enumerate(items) if x.vector is not None]
    if len(have) < 3:
        return out
    m = np.asarray([items[i].vector for i in have], dtype=np.float64)
    sims = m @ m.T
    upper = sims[np.triu_indices(len(have), 1)]
    spread = float(upper.std()) or 1.0
    z = (sims - float(upper.mean())) / spread
    out[np.ix_(have, have)] = z
    return out


@dataclass(frozen=True)
class Frame:
    """What every pair of one question shares: the question's and the people's words, the lists' scales."""

    question_words: frozenset[str]
    names: frozenset[str]
    past: bool
    top_fused: float
    top_bm25: float
    cos_low: float
    cos_high: float
    update: float = 0.0  # the query classifier's probability that the question asks for a changed value
    pairs: Any = None  # pair_cosines of the items (an array; NaN without vectors)

    @classmethod
    def of(cls, items: Sequence[Item], question: str, names: Sequence[str] = (), update: float = 0.0) -> Frame:
        cos = [x.cosine for x in items if x.cosine] or [0.0]
        return cls(question_words=_words(question),
                   # our rewrite's "others" is read like a name: two facts of one group shared it and were paired
                   names=frozenset(w for n in (*names, *OUR_WORDS) for w in _words(n)), past=asks_past(question),
                   top_fused=max((x.fused for x in items), default=0.0) or 1.0,
                   top_bm25=max((x.bm25 for x in items), default=0.0) or 1.0, cos_low=min(cos), cos_high=max(cos),
                   update=update, pairs=pair_cosines(items))  # fmt: skip

    def cos(self, x: Item) -> float:
        """The item's cosine within the list's range (each model scores on a scale of its own)."""
        span = self.cos_high - self.cos_low
        return (x.cosine - self.cos_low) / span if span > 1e-9 and x.cosine else 0.0


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


@text_cache(1 << 13)
def _denied(text: str) -> frozenset[str]:
    """What a line says is not so ("the 29th not the 26th": 26th; "不是六点了": 六点; "12:30 instead of 1": 1)."""
    return _words(" ".join(denied_values(text))) | denied_numbers(text)


def pair_features(items: Sequence[Item], old: int, new: int, frame: Frame) -> dict[str, float]:
    """The features of "``items[new]`` replaced ``items[old]``" (indices in ranking order; ``new`` is newer).
    Words are content keywords without the people's names (every line about Liam shares "Liam")."""
    a, b = items[old], items[new]
    wa, wb = a.words - frame.names - _CHANGE_WORDS, b.words - frame.names - _CHANGE_WORDS
    ka, kb = value_kinds(a.text), value_kinds(b.text)
    days = max(0.0, (b.ts - a.ts).total_seconds() / 86400)
    row = frame.pairs[old] if frame.pairs is not None and len(frame.pairs) == len(items) else None
    pair = float(row[new]) if row is not None and not math.isnan(row[new]) else 0.0
    newer = [row[j] for j, x in enumerate(items) if x.ts > a.ts and not math.isnan(row[j])] if row is not None else []
    nearest = float(bool(newer) and pair > 0 and row[new] >= max(newer))
    return {
        "shared_words": _overlap(wa, wb),
        "shared_beyond_question": _overlap(wa - frame.question_words, wb - frame.question_words),
        "cos_old": frame.cos(a), "cos_new": frame.cos(b), "fused_old": a.fused / frame.top_fused,
        "fused_new": b.fused / frame.top_fused, "rank_old": 1.0 / (1 + old), "rank_new": 1.0 / (1 + new),
        "new_is_question": float(b.question), "old_is_question": float(a.question), "log_days": math.log1p(days),
        "same_topic": float(a.topic_id is not None and a.topic_id == b.topic_id),
        "log_chars_new": math.log1p(len(b.text)), "new_turn": float(b.kind == "turn"),
        "new_fact": float(b.kind == "fact"), "new_summary": float(b.kind == "summary"), "new_qa": float(b.kind == "qa"),
        "asks_past": float(frame.past), "bm25_new": b.bm25 / frame.top_bm25, "bm25_old": a.bm25 / frame.top_bm25,
        "new_says_change": float(b.change), "new_says_now": float(b.now), "old_says_change": float(a.change),
        "asks_update": frame.update, "pair_cos": pair, "pair_nearest": nearest,
        "same_speaker": float(a.speaker is not None and a.speaker == b.speaker),
        "new_negates_old": float(bool(_denied(b.text) & (wa | numbers(a.text)))),
        "value_stated": float(bool(ka | kb)),
    }  # fmt: skip


def related(feats: dict[str, float], new: Item | None = None) -> bool:
    """Only a pair that can be about one thing is weighed: it shares a content word other than the people's
    names, the newer denies a value the older states ("12:30 instead of 1" after "1pm lunch"), or the two items' own vectors are unusually close for this question's candidates while the newer
    one is among the better answers to it. Without either, the features cannot tell a new value of the same
    thing from any later news (docs/BENCHMARKS.md, memory truth). The vectors speak only for a ``new`` item
    that states one thing: a summary of several messages has the mean of their vectors, close to much that
    none of them says (a meeting point's correction and a remark on coworkers read as a friend's new job)."""
    if feats["shared_words"] > 0 or feats.get("new_negates_old", 0.0) > 0:
        return True
    several = new is not None and new.kind == "summary" and len(new.sources) > 1
    return feats["pair_cos"] >= PAIR_Z and feats["cos_new"] >= 0.5 and not several


PAIR_Z = 1.5  # standard deviations above the question's mean pair cosine


def other_subject(old: Item, new: Item, asked: Collection[str]) -> bool:
    """``new`` is about other people than the ones asked about, ``old`` about one of them (a friend's cat
    liking fish says nothing new about what the asked person likes to eat)."""
    return bool(asked) and bool(old.about & set(asked)) and bool(new.about) and not new.about & set(asked)


def only_asks(new: Item) -> bool:
    """``new`` is a chat line that asks and says no change ("what day are we thinking?"): it states no value,
    so it replaces none, however close it sits to one. A question that proposes a change ("wednesday
    instead?") still may."""
    return new.kind == "turn" and new.question and not new.change


def restates(old: Item, new: Item) -> bool:
    """``new`` holds a message ``old`` was drawn from (a summary of the topic a turn is in, a fact from it):
    the later record retells that message, it does not replace what it said."""
    return bool(set(old.sources) & set(new.sources))


# Embedders whose model was trained on English text alone (MiniLM's model card): their vectors of Chinese
# or Japanese text are close to each other whatever it says, so two such items are never paired by vector
# (the shared-word route stays). Measured on the update benchmark's Chinese chats indexed with MiniLM
# (a mixed-language data dir keeps the English model): unrelated later news was linked as a replacement.
ENGLISH_ONLY = frozenset({"minilm"})


def unreadable_by(embedder: str | None) -> Callable[[str], bool]:
    """Whether ``embedder`` cannot read a text (its vector is then left out of the pairs)."""
    if embedder in ENGLISH_ONLY:
        return is_cjk_text
    return lambda text: False


@dataclass(frozen=True)
class SupersedeModel:
    component: Component
    threshold: float
    provenance: dict

    def probability(self, feats: dict[str, float]) -> float:
        z = self.component.logit(feats)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def to_json(self) -> dict:
        return {"format": FORMAT, "component": self.component.to_json(), "threshold": self.threshold,
                "provenance": self.provenance}

    @classmethod
    def from_json(cls, d: dict) -> SupersedeModel:
        if d.get("format") != FORMAT:
            raise ValueError(f"unknown supersession weights format {d.get('format')!r} (expected {FORMAT})")
        return cls(Component.from_json(d["component"]), float(d["threshold"]), d.get("provenance", {}))


@lru_cache(maxsize=4)
def _load(path: str) -> SupersedeModel | None:
    p = Path(path)
    if not p.exists():
        return None
    return SupersedeModel.from_json(json.loads(p.read_text(encoding="utf-8")))


def load_model(model: str) -> SupersedeModel | None:
    """``"auto"``: the packaged weights; ``"off"``: none; else a weights file's path. Read once, never at import."""
    if model == "off":
        return None
    return _load(str(PACKAGED if model == "auto" else Path(model)))


@dataclass(frozen=True)
class Link:
    """``new`` replaced ``old`` (doc ids), with the model's probability."""

    old: str
    new: str
    probability: float


def reorder(items: Sequence[Item], question: str, model: SupersedeModel, *, names: Sequence[str] = (),
            top: int = 10, threshold: float | None = None, update: float = 0.0,
            blocked: Collection[tuple[str, str]] = (), asked: Collection[str] = ()) -> tuple[list[int], list[Link]]:  # fmt: skip
    """The items' order with each replaced statement right below what replaced it, and the links made.

    Positions are visited best first, up to ``top``: at each, the most probable newer replacement found
    further down the list takes the position when its probability reaches the threshold; the visited item
    moves down one place and the newcomer is visited in its turn. A pair is linked at most once, and never
    one of ``blocked`` (``(older, newer)`` doc ids: a new date of a meeting is no new room). When the question
    names participants (``asked``), a statement about one of them is never replaced by one about someone else
    alone."""
    order = list(range(len(items)))
    links: list[Link] = []
    if len(items) < 2:
        return order, links
    frame = Frame.of(items, question, names, update)
    t = model.threshold if threshold is None else threshold
    tried: set[tuple[int, int]] = set()
    pos = 0
    while pos < min(top, len(order)):
        old = order[pos]
        newer = [j for j in order[pos + 1 :] if items[j].ts > items[old].ts and (old, j) not in tried
                 and not restates(items[old], items[j]) and not other_subject(items[old], items[j], asked)
                 and not only_asks(items[j])
                 and (items[old].doc_id, items[j].doc_id) not in blocked]  # fmt: skip
        best, best_p = None, t
        for j in newer:
            tried.add((old, j))
            feats = pair_features(items, old, j, frame)
            p = model.probability(feats) if related(feats, items[j]) else 0.0
            if p >= best_p:
                best, best_p = j, p
        if best is None:
            pos += 1
            continue
        order.remove(best)
        order.insert(pos, best)
        links.append(Link(items[old].doc_id, items[best].doc_id, round(best_p, 4)))
    return order, links
