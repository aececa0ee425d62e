"""Pure text utilities shared by indexing and querying: one tokenizer for BM25, token counting, keywords.

Everything here is deterministic and free of I/O. ``tokenize`` is applied identically to documents and
queries, so whatever normalisation it does (lowercasing, stopwords, light stemming, Chinese segmentation)
can never make a query miss a document that contains the same words.
"""

from __future__ import annotations

import re
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from functools import cache, lru_cache
from typing import Any, Generic, NamedTuple, TypeVar

from language.stem import stem

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


_TEXT_CACHES: list[Any] = []


def text_cache(maxsize: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """``lru_cache`` for a pure function of what people wrote (messages, memories, names, questions), kept in
    a registry so that a deletion can empty them all (:func:`clear_text_caches`)."""

    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        cached = lru_cache(maxsize=maxsize)(fn)
        _TEXT_CACHES.append(cached)
        return cached

    return wrap


class _Size(NamedTuple):
    currsize: int


class TextMap(Generic[K, T]):
    """A bounded LRU map of texts to what they parse to, registered like :func:`text_cache` (a deletion
    empties it), for values the code that wrote a text can hand in before its first read: a profile's
    lines are known when it is rendered (:func:`agents.profile.parse_lines`)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: OrderedDict[K, T] = OrderedDict()
        _TEXT_CACHES.append(self)

    def get(self, key: K) -> T | None:
        value = self._items.get(key)
        if value is not None:
            try:
                self._items.move_to_end(key)
            except KeyError:  # dropped meanwhile by another thread's put
                pass
        return value

    def put(self, key: K, value: T) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.maxsize:
            self._items.popitem(last=False)

    def cache_info(self) -> _Size:
        return _Size(len(self._items))

    def cache_clear(self) -> None:
        self._items.clear()


def text_cache_entries() -> int:
    """How many entries the :func:`text_cache` caches hold now."""
    return sum(cached.cache_info().currsize for cached in _TEXT_CACHES)


def clear_text_caches() -> int:
    """Empty every :func:`text_cache` (after a deletion: no erased text or name stays in this process's
    memory through a cache). Returns how many entries went. They refill on use."""
    gone = 0
    for cached in _TEXT_CACHES:
        gone += cached.cache_info().currsize
        cached.cache_clear()
    return gone


M = TypeVar("M")


PARSE_CACHE_MAX_CHARS = 8192  # longer payloads (a profile of hundreds of lines) are parsed every time


def parse_json(model: type[M], payload: str) -> M:
    """``model.model_validate_json(payload)``, kept for the next read of the same payload: a stored memory is
    read back by every consolidation it is a candidate in (~10 parses per stored memory in a LoCoMo ingest)
    and a log record by each stage that reads its topic. Only for frozen contracts (:class:`schemas.base.
    Contract`): every reader shares the one object. A payload that fails validation raises each time. Payloads
    over :data:`PARSE_CACHE_MAX_CHARS` are not kept: 4,096 of them could hold hundreds of MB."""
    if len(payload) > PARSE_CACHE_MAX_CHARS:
        return model.model_validate_json(payload)  # type: ignore[attr-defined]
    return _parse_json(model, payload)


@text_cache(maxsize=4096)
def _parse_json(model: type[M], payload: str) -> M:
    return model.model_validate_json(payload)  # type: ignore[attr-defined]


@cache
def jieba() -> Any:
    """rjieba, imported on the first CJK text (its dictionary load is ~0.2 s of every CLI start otherwise)."""
    import rjieba

    return rjieba


def is_zh_name(tagged: Sequence[tuple[str, str]], i: int) -> bool:
    """Whether the ``i``-th of jieba's tagged words is a person's name: tagged ``nr*``, and not a word cut
    across another's edge. jieba reads "那段时间" as 那 + 段时间 (段 is a surname); when the word before and the
    name's first character make a word (那段) and the rest is one too (时间), it is no name."""
    word, tag = tagged[i]
    has = jieba().has_word
    return tag.startswith("nr") and not (i > 0 and len(word) >= 3 and has(tagged[i - 1][0] + word[0])
                                         and has(word[1:]))


class LazyTokens:
    """A frozen set of ``tokenize(text)``, tokenised on the first membership test: a module-level word list
    with Chinese in it would load jieba at import (~0.2 s of every CLI start). A word with no CJK in it is
    looked up among the list's other words alone, which need no jieba: a CJK run's tokens are pieces of the
    run, so they never equal such a word (an English question does not load the dictionary)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._words: frozenset[str] | None = None
        self._plain: frozenset[str] | None = None

    def __contains__(self, word: object) -> bool:
        if self._words is None and isinstance(word, str) and _CJK_RE.search(word) is None:
            if self._plain is None:
                self._plain = frozenset(plain_tokens(self._text))
            return word in self._plain
        if self._words is None:
            self._words = frozenset(tokenize(self._text))
        return word in self._words


# Han ideographs (incl. extensions and compatibility forms), kana and Hangul syllables: scripts written
# without spaces, handled by segmentation + character bigrams instead of whitespace words.
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ebef"
_CJK_RE = re.compile(f"[{_CJK_CHARS}]")
# Letters and digits of every other script (``\w`` minus underscore minus CJK).
_ALNUM = f"[^\\W_{_CJK_CHARS}]"
_LATIN_WORD_RE = re.compile(r"[A-Za-z]+")


def is_cjk_text(text: str) -> bool:
    """A text is CJK when it has at least as many CJK characters as Latin words (``我明天去 office`` is)."""
    cjk = len(_CJK_RE.findall(text))
    return cjk > 0 and cjk >= len(_LATIN_WORD_RE.findall(text))


_TOKEN_RE = re.compile(f"(?P<cjk>[{_CJK_CHARS}]+)|(?P<word>{_ALNUM}+(?:['\u2019]{_ALNUM}+)*)")
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")
_ASCII_CASED_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z0-9]+)*")
_COUNT_RE = re.compile(f"(?P<cjk>[{_CJK_CHARS}])|(?P<num>\\d+)|(?P<word>{_ALNUM}+)|(?P<sym>[^\\s\\w])")

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    a an the and or but if then else nor so than too very of to in on at by for with about as from into onto
    over under up down out off again further once between through during before after above below until while
    because against among is am are was were be been being do does did doing done have has had having
    i me my myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers
    herself it its itself they them their theirs themselves this that these those there here
    what which who whom whose when where why how all any both each few more most other some such no not only
    own same just can will would should could shall may might must also im ive id ill youre youve youd
    hes shes thats theres whats dont doesnt didnt isnt arent wasnt werent cant couldnt wont wouldnt
    shouldnt havent hasnt hadnt lets s t d ll m re ve o y yeah yes oh ok okay hi hey lol haha hmm um uh
    """.split()
)

CHINESE_STOPWORDS: frozenset[str] = frozenset(
    """
    的 了 是 在 和 与 及 就 都 也 还 又 把 被 给 让 吗 呢 吧 啊 呀 哦 嗯 哈 啦 嘛 着 过 这 那 个 之 而 或 但 与
    我 你 您 他 她 它 们 我们 你们 他们 她们 它们 咱们 自己 这个 那个 这些 那些 一个 什么 怎么 为什么 没有
    就是 还是 但是 因为 所以 如果 然后 可以 已经 不是 这样 那样 一下 一些 有点 哈哈 哈哈哈 好的 嗯嗯
    哪 哪里 哪儿 哪个 哪些 谁 几 多少 怎样 如何 么
    """.split()
)


def has_cjk(text: str) -> bool:
    """True if ``text`` contains any Chinese/Japanese/Korean character (an ASCII string, known to be one in
    O(1), holds none: ~100k calls per 2,000 English turns skip the scan)."""
    return not text.isascii() and _CJK_RE.search(text) is not None


def _normalise(text: str) -> str:
    """NFKC folds full-width letters/digits (ＡＢＣ１２３) to ASCII; then lowercase."""
    return unicodedata.normalize("NFKC", text).lower()


def _fold_word(word: str) -> str:
    """Lowercased word without a possessive ``'s`` and without inner apostrophes (don't -> dont)."""
    if word.endswith(("'s", "\u2019s")):
        word = word[:-2]
    return word.replace("'", "").replace("\u2019", "")


def _cjk_tokens(run: str) -> list[str]:
    """jieba words of a CJK run (minus stopwords) plus every character bigram not already a jieba word."""
    if len(run) == 1:
        return [] if run in CHINESE_STOPWORDS else [run]
    out: list[str] = []
    two_char_words: set[int] = set()
    pos = 0
    for word in jieba().cut(run):
        if len(word) == 2:
            two_char_words.add(pos)
        pos += len(word)
        if word not in CHINESE_STOPWORDS:
            out.append(word)
    out.extend(run[i : i + 2] for i in range(len(run) - 1) if i not in two_char_words)
    return out


def tokenize(text: str) -> list[str]:
    """BM25 tokens of ``text`` (documents and queries alike).

    Latin/other scripts: lowercased alphanumeric words split on punctuation, English stopwords dropped,
    light-stemmed (:func:`stem`); numbers kept. CJK runs: jieba words (minus a few function words) plus
    character bigrams of the run; a one-character run yields that character. Memoised (a text is
    tokenised by several stages and every retrieval re-reads its candidates): a fresh list each call.
    """
    return list(_tokens(text))


def tokenize_lines(text: str) -> list[str]:
    """``tokenize(text)``, line by line: no token spans a line break, and each line is memoised on its own, so a
    long text that keeps most lines from one version to the next (a profile of up to 400 lines, rewritten
    whenever a topic adds one) is tokenised only in its new lines."""
    return [t for line in text.split("\n") for t in _tokens(line)]


@text_cache(1 << 13)
def _tokens(text: str) -> tuple[str, ...]:
    return _scan(text, cjk=True)


def plain_tokens(text: str) -> tuple[str, ...]:
    """The tokens of ``text`` that are not of a CJK run (:func:`tokenize` without jieba)."""
    return _scan(text, cjk=False)


def _scan(text: str, cjk: bool) -> tuple[str, ...]:
    if text.isascii():  # NFKC keeps ASCII as is; _TOKEN_RE's words are then _ASCII_WORD_RE's
        return tuple(t for t in map(_word_token, _ASCII_WORD_RE.findall(text.lower())) if t is not None)
    tokens: list[str] = []
    for m in _TOKEN_RE.finditer(_normalise(text)):
        run = m.group("cjk")
        if run is not None:
            if cjk:
                tokens.extend(_cjk_tokens(run))
            continue
        token = _word_token(m.group("word"))
        if token is not None:
            tokens.append(token)
    return tuple(tokens)


@text_cache(1 << 12)
def word_forms(text: str) -> tuple[tuple[str, str], ...]:
    """(token, word as written, lowercased) of each content word of ``text``: the :func:`tokenize` token of a
    Latin word of three or more letters (no numbers), and each jieba word of two or more characters of a CJK
    run (its own token). What a word-vector comparison can read: a token ("injur") is no word."""
    out: list[tuple[str, str]] = []
    for m in _TOKEN_RE.finditer(_normalise(text)):
        run = m.group("cjk")
        if run is not None:
            out.extend((w, w) for w in jieba().cut(run) if len(w) >= 2 and w not in CHINESE_STOPWORDS)
            continue
        word = m.group("word")
        if len(word) >= 3 and word.isalpha():
            token = _word_token(word)
            if token is not None:
                out.append((token, _fold_word(word)))
    return tuple(dict.fromkeys(out))


@text_cache(1 << 16)  # pure; the same words recur in every message
def _word_token(word: str) -> str | None:
    """The BM25 token of one normalised word, None for a stopword or nothing."""
    folded = _fold_word(word)
    return stem(folded) if folded and folded not in ENGLISH_STOPWORDS else None


def fts_query(text: str, *, max_terms: int = 64) -> str:
    """A safe SQLite FTS5 MATCH expression: the OR of the query's distinct tokens, each quoted.

    Quoting makes every token a literal (no FTS5 operators or column filters can be injected). Returns
    ``""`` when the text has no searchable token; callers must then skip the MATCH.
    """
    seen: dict[str, None] = {}
    for token in tokenize(text):
        seen.setdefault(token, None)
        if len(seen) >= max_terms:
            break
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in seen)


_LINES_FROM = 256  # characters: a longer text with line breaks is counted line by line (count_tokens)


@text_cache(1 << 13)  # pure; the router counts the same candidates on every question
def count_tokens(text: str) -> int:
    """Approximate LLM (BPE) token count; fast, deterministic, errs slightly high.

    The approximation: one token per CJK character, one per 3 digits of a number, one per 5 letters of a
    word (at least one per word; common English words are single tokens, long ones split), one per
    punctuation/symbol character. Whitespace is free (BPE merges it into the following token).

    No token holds a line break, so a long text of several lines counts as the sum of its lines, each read
    from this cache: a rendered context is made of lines counted while it was packed.
    """
    if len(text) > _LINES_FROM and "\n" in text:
        return sum(map(count_tokens, text.split("\n")))
    total = 0
    for m in _COUNT_RE.finditer(text):
        kind = m.lastgroup
        if kind == "num":
            total += (len(m.group()) + 2) // 3
        elif kind == "word":
            total += (len(m.group()) + 4) // 5
        else:
            total += 1
    return total


def extract_keywords(text: str) -> set[str]:
    """Content keywords for overlap signals (segmenter entity overlap, consolidator matching).

    Latin: non-stopword words of three or more characters, plus shorter capitalised words (names such as
    ``Li`` or ``Bo``), all lowercased with possessives removed, not stemmed; pure numbers are skipped.
    CJK: jieba words of two or more characters that are not function words. Memoised: a fresh set each call.
    """
    return set(_keywords(text))


@text_cache(1 << 13)
def _keywords(text: str) -> frozenset[str]:
    keywords: set[str] = set()
    if text.isascii():  # the words of the loop below, added in the same order (set order depends on it)
        for word in map(_word_keyword, _ASCII_CASED_WORD_RE.findall(text)):
            if word is not None:
                keywords.add(word)
        return frozenset(keywords)
    for m in _TOKEN_RE.finditer(unicodedata.normalize("NFKC", text)):
        run = m.group("cjk")
        if run is not None:
            words = jieba().cut(run)
            keywords.update(w for w in words if len(w) >= 2 and w not in CHINESE_STOPWORDS)
            keywords.update(unknown_pairs(words))
            continue
        word = _word_keyword(m.group("word"))
        if word is not None:
            keywords.add(word)
    return frozenset(keywords)


# lone characters that end such a pair rather than belong to it: prepositions, modal and motion verbs
_LONE_FUNCTION = frozenset("从到向对跟比往为由于说要会能想去来有没不很太再才只等让叫")


def unknown_pairs(words: list[str]) -> list[str]:
    """Two-character words jieba's dictionary does not know, which it cuts into two lone characters: a shop's
    name (知行 -> 知/行), a coined noun (月卡 -> 月/卡). Exactly two content characters between other words;
    a longer run of lone characters is more often a clause of short verbs than one word."""
    out: list[str] = []
    run: list[str] = []
    for w in [*words, ""]:
        if len(w) == 1 and w not in CHINESE_STOPWORDS and w not in _LONE_FUNCTION and _CJK_RE.match(w):
            run.append(w)
            continue
        if len(run) == 2:
            out.append("".join(run))
        run = []
    return out


@text_cache(1 << 16)
def _word_keyword(surface: str) -> str | None:
    """The keyword of one word as written, None when it is not one (stopword, number, short lowercase)."""
    word = _fold_word(surface.lower())
    if not word or word.isdigit() or word in ENGLISH_STOPWORDS:
        return None
    return word if len(word) >= 3 or surface[0].isupper() else None
