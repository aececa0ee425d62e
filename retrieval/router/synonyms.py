"""A question's keywords said in other words, for the abstention check (issue 42 item 5).

"Where does Sean work?" is answered by "Sean's got a new job at the council", which shares no keyword with
it, while "works for me" (Callum agreeing to a time) does: read by keywords, the only match is about someone
else, and the check abstains. Here an item's word counts as a question keyword when their word vectors are
as close as a synonym's (work/job, injured/sprain, 房租/租金), by the embedder the chat already has: no word
list. How close a synonym is depends on the model (MiniLM puts unrelated words near 0.2, e5 near 0.89), so
the bar is the embedder's own ``synonym_cosine`` (no bar: no synonyms).

:func:`aliases_of` and :func:`expand` are pure; :func:`with_synonyms` embeds the words it needs once per process
(``WordVectors``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from language.text import word_forms
from retrieval.router.abstain_names import is_relation, same_person
from retrieval.router.recipes import embedder_key
from retrieval.router.supersede import unreadable_by

__all__ = ["WordVectors", "aliases_of", "expand", "other_relative", "synonym_bar", "with_synonyms"]

MAX_WORDS = 8192  # words kept per embedder (~12 MB with 384 dimensions; a chat's words recur question to question)


def synonym_bar(embedder: Any) -> float | None:
    """The cosine at which two single words of ``embedder`` read as one meaning (None: never)."""
    return getattr(embedder, "synonym_cosine", None) if embedder is not None else None


class WordVectors:
    """Single-word vectors of one embedder, kept between requests (least recently used dropped)."""

    def __init__(self, embedder: Any, size: int = MAX_WORDS) -> None:
        self.embedder = embedder
        self.size = size
        self.cache: OrderedDict[str, np.ndarray] = OrderedDict()

    async def of(self, words: Sequence[str]) -> dict[str, np.ndarray]:
        missing = [w for w in dict.fromkeys(words) if w not in self.cache]
        if missing:
            for w, v in zip(missing, await self.embedder.embed(missing), strict=True):
                self.cache[w] = np.asarray(v, dtype=np.float32)
        out = {}
        for w in words:
            self.cache.move_to_end(w)
            out[w] = self.cache[w]
        while len(self.cache) > self.size:
            self.cache.popitem(last=False)
        return out


_TABLES: dict[int, WordVectors] = {}


def _table(embedder: Any) -> WordVectors:
    table = _TABLES.get(id(embedder))
    if table is None or table.embedder is not embedder:
        table = _TABLES[id(embedder)] = WordVectors(embedder)
    return table


def aliases_of(keys: Iterable[str], key_words: Mapping[str, str], item_words: Iterable[tuple[str, str]],
               vectors: Mapping[str, np.ndarray], bar: float) -> dict[str, frozenset[str]]:  # fmt: skip
    """Item token -> the question keywords its word is as close as ``bar`` to (``key_words``: keyword -> the
    question's word for it; ``item_words``: (token, word) pairs of the items). Pure."""
    wanted = [k for k in keys if k in key_words]
    words = {t: w for t, w in item_words if t not in key_words}
    if not wanted or not words:
        return {}
    toks = list(words)
    sims = np.stack([vectors[words[t]] for t in toks]) @ np.stack([vectors[key_words[k]] for k in wanted]).T
    out = {}
    for i, t in enumerate(toks):
        close = frozenset(k for j, k in enumerate(wanted)
                          if sims[i, j] >= bar and not other_relative(words[t], key_words[k]))  # fmt: skip
        if close:
            out[t] = close
    return out


def other_relative(a: str, b: str) -> bool:
    """Two words for different relations or roles (sister and brother, 外婆 and 奶奶): their vectors sit as
    close as a synonym's, but one is never the other (mum and mother are one: ``same_person``)."""
    return a.casefold() != b.casefold() and is_relation(a) and is_relation(b) and not same_person(a, b)


def expand(tokens: Mapping[str, set[str]], aliases: Mapping[str, frozenset[str]]) -> dict[str, set[str]]:
    """Each item's tokens plus the keywords ``aliases`` gives them. Pure."""
    if not aliases:
        return dict(tokens)
    return {d: toks | {k for t in toks for k in aliases.get(t, ())} for d, toks in tokens.items()}


async def with_synonyms(embedder: Any, keys: Iterable[str], question: str, texts: Mapping[str, str],
                        tokens: Mapping[str, set[str]]) -> dict[str, frozenset[str]]:  # fmt: skip
    """The :func:`aliases_of` the words of the items ``texts`` (doc id -> text) have; none when the embedder
    has no bar or every item has every keyword."""
    bar = synonym_bar(embedder)
    keys = list(keys)
    if bar is None or not keys or all(k in tokens.get(d, ()) for d in texts for k in keys):
        return {}
    unreadable = unreadable_by(embedder_key(embedder))  # MiniLM's Chinese words all sit close together
    key_words = {t: w for t, w in word_forms(question) if t in keys and not unreadable(w)}
    if not key_words:
        return {}
    item_words = [f for text in texts.values() for f in word_forms(text) if not unreadable(f[1])]
    words = list(dict.fromkeys([*key_words.values(), *(w for t, w in item_words if t not in key_words)]))
    vectors = await _table(embedder).of(words)
    return aliases_of(keys, key_words, item_words, vectors, bar)
