"""Set questions answered from profile memories: "What books has Melanie read?", "她去过哪些城市？".

The consolidator keeps, per participant and attribute class, a profile record with one line per message that
says one instance (:mod:`agents.profile`). A question that names a participant and asks for a set of a class
(its set word, "books"; an umbrella word, "hobbies"; or a count/list form with a class's cue word) gets one
item per asked person: the profile lines of the asked classes that match the question best, at most
``max_lines`` and ``max_tokens``, oldest first. The item's sources are the shown lines' messages only (it
stands for the turns whose content it carries). The selection is pure; :func:`profile_items` reads the
chat's profile records (one filter query).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from agents.profile import ProfileLine, class_of, parse_lines
from agents.profile_lexicon import asked_classes, set_classes
from language.text import count_tokens, tokenize
from retrieval.protocols import Doc, MemoryFilter, MemoryStore
from retrieval.router.candidates import Cand
from retrieval.router.multihop import is_aggregation
from retrieval.router.query import QueryAnalysis
from schemas import MemoryRecord

__all__ = ["ProfileConfig", "asked", "profile_items", "select_lines"]


class ProfileConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    enabled: bool = True
    max_lines: int = 30  # per item
    max_tokens: int = 700  # per item
    pool_bonus: float = 1.0  # a line whose message the searches found ranks above one they did not
    w_cosine: float = 3.0  # the question's cosine with the line's message (its stored turn vector)
    budget_share: float = 0.5  # of the request's token budget, at most, for the profile items
    cue_classes: bool = True  # also on a class's cue words alone (no set word, no count or list form)
    overrides_abstention: bool = False  # the asked person has lines of the class: not "about someone else"


def asked(qa: QueryAnalysis, cue_classes: bool = False) -> list[str]:
    """The classes a question asks for as a set (none unless it names a set or has a list/count form). Pure."""
    text = qa.text
    for n in qa.names:
        text = text.replace(n, " ")
    return asked_classes(text) if cue_classes or is_aggregation(qa.text) else set_classes(text)


def select_lines(
    lines: list[ProfileLine],
    qa: QueryAnalysis,
    found: dict[str, float],
    cfg: ProfileConfig,
    cosine: dict[str, float] | None = None,
) -> list[ProfileLine]:
    """The lines to show: all when they fit, else those carrying the question's words (rarer ones weigh more)
    and those whose message the searches ranked high (``found``: message id -> 1 for the best, down to 0),
    shown oldest first. Pure."""
    if not lines:
        return []
    toks = [set(tokenize(ln.text)) for ln in lines]
    keys = set(qa.keywords)
    df = {k: sum(k in t for t in toks) for k in keys}
    n = len(lines)

    def score(i: int) -> float:
        match = sum(math.log(1 + n / df[k]) for k in keys if df[k] and k in toks[i])
        mid = lines[i].message_id
        return match + cfg.pool_bonus * found.get(mid, 0.0) + cfg.w_cosine * (cosine or {}).get(mid, 0.0)

    order = sorted(range(n), key=lambda i: (-score(i), -lines[i].at.timestamp()))
    picked, used = [], 0
    for i in order:
        cost = count_tokens(lines[i].text) + 4
        if len(picked) >= cfg.max_lines or (picked and used + cost > cfg.max_tokens):
            break
        picked.append(i)
        used += cost
    return [lines[i] for i in sorted(picked, key=lambda i: (lines[i].at, lines[i].message_id))]


def compose(who: str, classes: list[str], records: list[MemoryRecord], qa: QueryAnalysis,
            found: dict[str, float], cfg: ProfileConfig, cosine: dict[str, float] | None = None) -> Cand | None:  # fmt: skip
    """One person's item over the asked classes' profiles (a message in two classes shows once). Pure."""
    lines: dict[str, ProfileLine] = {}
    for r in records:
        for ln in parse_lines(r):
            lines.setdefault(ln.message_id, ln)
    chosen = select_lines(list(lines.values()), qa, found, cfg, cosine)
    if not chosen:
        return None
    label = ", ".join(classes)
    text = f"{who} ({label}): " + " | ".join(f"{ln.at:%Y-%m-%d} {ln.text}" for ln in chosen)
    first = records[0]
    doc = Doc(doc_id=f"{first.memory_id}:view", chat_id=first.chat_id, kind="profile", text=text, speaker=who,
              ts=chosen[-1].at, source_message_ids=[ln.message_id for ln in chosen], entities=[who])  # fmt: skip
    return Cand(doc=doc, found_by=["profile"])


async def profile_items(
    store: MemoryStore,
    chat_id: str,
    qa: QueryAnalysis,
    ranked: list[Cand],
    cfg: ProfileConfig,
    budget: int,
    query_vector: list[float] | None = None,
) -> list[Cand]:
    """The profile items of a set question about named participants (none for any other question), within
    ``cfg.budget_share`` of the request's token ``budget``."""
    classes = asked(qa, cfg.cue_classes) if cfg.enabled and qa.names else []
    if not classes:
        return []
    records = await store.find_memories(chat_id, MemoryFilter(kinds=["profile"], limit=10_000))
    found: dict[str, float] = {}
    for rank, c in enumerate(ranked[:50]):
        for m in c.doc.source_message_ids[:1]:
            found.setdefault(m, 1.0 - rank / 50)
    out = []
    share = int(cfg.budget_share * budget / max(1, len(qa.names)))
    cfg = cfg.model_copy(update={"max_tokens": min(cfg.max_tokens, share)})
    for who in qa.names:
        mine = [r for r in records if r.subject == who and class_of(r.attribute) in classes]
        mine.sort(key=lambda r: classes.index(class_of(r.attribute) or ""))
        cosine = await _cosines(store, chat_id, mine, query_vector) if cfg.w_cosine else None
        item = compose(who, classes, mine, qa, found, cfg, cosine) if mine else None
        if item is not None:
            out.append(item)
    return out


async def _cosines(
    store: MemoryStore, chat_id: str, records: list[MemoryRecord], query: list[float] | None
) -> dict[str, float]:
    """message id -> the question's cosine with the message's stored turn vector (none without vectors)."""
    if query is None or not records:
        return {}
    import numpy as np

    ids = list(dict.fromkeys(m for r in records for m in r.source_message_ids))
    vecs = await store.turn_vectors(chat_id, ids)
    q = np.asarray(query, dtype=np.float32)
    q /= float(np.linalg.norm(q)) or 1.0
    # np.linalg.norm of a 1-d float vector is sqrt(v.dot(v)), computed so here without its checks
    return {m: float(v @ q / (float(np.sqrt(v.dot(v))) or 1.0)) for m, v in vecs.items()}
