"""Sentence-level text rules (English and Chinese): splitting, fillers, questions and jieba POS tags."""

from __future__ import annotations

import re

from language.extract.screen import screened
from language.lazy_re import lazy
from language.text import has_cjk, jieba, text_cache

__all__ = [
    "ZH_FILLERS",
    "cjk_tags",
    "has_cjk",
    "is_filler",
    "is_question",
    "is_small_talk_question",
    "split_sentences",
]

# ----------------------------------------------------------------------------------------------- sentences

_ABBREV = ("mr.", "mrs.", "ms.", "dr.", "st.", "e.g.", "i.e.", "vs.", "etc.", "jr.", "sr.", "prof.")
_SPLIT_RE = lazy(r"(?<=[。！？；\n])|(?<=[!?;！？])\s*|(?<=\.)\s+|(?<=[~～])\s+")
_W_RE = lazy(r"\w")
_NOT_WORD_RE = lazy(r"[\s\W_]+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a chat message: split on CJK and Latin enders, abbreviations and ``?!`` runs kept whole.
    Memoised (the distiller, its week context and the title split each message): a fresh list each call."""
    return list(_split_sentences(text))


@text_cache(4096)
def _split_sentences(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for piece in _SPLIT_RE.split(text.replace("\u2019", "'")):
        piece = piece.strip()
        if not piece:
            continue
        wordy = _W_RE.search(piece) is not None
        if out and (not wordy or out[-1].lower().rsplit(None, 1)[-1] in _ABBREV):
            out[-1] = f"{out[-1]} {piece}" if wordy else out[-1] + piece
        else:
            out.append(piece)
    return tuple(out)


# ----------------------------------------------------------------------------------- fillers and questions

_EN_FILLER_PHRASES = screened(lazy(
    r"\b(good (morning|night|evening|afternoon)|good to (see|hear from) you|nice to (see|meet) you|"
    r"thank(s| you)( so much| a lot)?|see (you|ya)( later| soon)?|talk (to you )?(later|soon)|take care|"
    r"sounds (good|great|fun)|no problem|no worries|got it|i see|me too|same here|that's (so )?(cool|great|"
    r"awesome|amazing|nice|wonderful|true|right)|how are you|how have you been|what's up|how's it going|"
    r"long time no see|you too|for sure|of course|all good|never mind|(?:i )?(?:totally |completely )?agree|"
    r"sounds like (?:a |an )?(?:great |good |fun |nice |awesome |cool |solid )?(?:plan|idea|time|blast|fun))\b",
    re.I,
))
_EN_FILLER_WORDS = frozenset(
    """hi hello hey heya yo hiya thanks thx ty ok okay k kk sure cool nice great awesome lol lmao rofl haha
    hahaha hehe yes yeah yep yup no nope bye goodbye night morning wow oh ah ahh aw aww hmm um uh right
    congrats congratulations welcome omg amazing wonderful fantastic perfect indeed totally absolutely
    exactly agreed true so really very much too the a and it that this is was just good glad happy love
    lovely yay woo cheers alright fine well indeed definitely""".split()
)
ZH_FILLERS = tuple(
    "你好 您好 哈喽 嗨 哈 嘿 嗯 哦 噢 啊 呀 好的 好吧 好 行 可以 收到 谢谢 多谢 感谢 拜拜 再见 晚安 早上好 早安 早 对 对的 "
    "是的 没问题 了解 明白 在吗 在的 厉害 牛 太棒了 不错 赞 辛苦了 OK ok 嗯嗯 666 有道理 原来如此 真的吗 是吗 哇 天哪 好呀 "
    "好滴 没事 不客气 恭喜 哈哈".split()
)
_ZH_FILLER_RE = lazy(
    "^(?:" + "|".join(sorted(map(re.escape, ZH_FILLERS), key=len, reverse=True)) + ")+$"
)
_WORD_RE = lazy(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+")


def is_filler(sentence: str, names: frozenset[str] = frozenset(), *, answer: bool = False) -> bool:
    """Greetings, thanks, acknowledgements and one-word reactions carry nothing worth remembering.

    ``answer=True`` keeps one-word replies that may carry a value ("Hangzhou!", "杭州").
    """
    return _is_filler(sentence, tuple(names), answer)  # names in their iteration order: the CJK removal order


@text_cache(8192)  # pure; the distiller and the title ask about the same sentences
def _is_filler(sentence: str, names: tuple[str, ...], answer: bool) -> bool:
    bare = _NOT_WORD_RE.sub("", sentence)
    if not bare:
        return True
    if has_cjk(sentence):
        for name in names:
            bare = bare.replace(name, "")
        return not bare or bool(_ZH_FILLER_RE.match(bare)) or (len(bare) <= 2 and not answer)
    text = _EN_FILLER_PHRASES.sub(" ", sentence)
    lowered_names = {n.lower() for n in names} | {n.lower().split()[0] for n in names if n.strip()}
    words = [w.lower() for w in _WORD_RE.findall(text)]
    rest = [w for w in words if w not in _EN_FILLER_WORDS and w not in lowered_names and len(w) > 1]
    # Short vocatives such as "Hey Mel!" keep one unknown word (a nickname): still a filler.
    return not rest or (len(rest) == 1 and len(words) <= 3 and not rest[0].isdigit() and not answer)


_EN_Q_START = lazy(
    r"^(what|where|when|who|whom|whose|why|how|which|do|does|did|are|is|was|were|can|could|would|will|"
    r"have|has|had|should|shall|may|any|anything)\b",
    re.I,
)
_ZH_Q_RE = lazy(
    r"(吗|么|呢|吧)[~～。！!]*$|什么|怎么|哪|几[个点天岁号]|谁|多少|是不是|有没有|要不要|能不能|会不会"
)
_SMALL_TALK_Q = lazy(
    r"^(how are you|how have you been|how('s| is) it going|what's up|what's new|anything new|you\??$|"
    r"and you|right|really|isn't it|don't you think|huh|what about you|how about you|how was your day|"
    r"是吗|真的吗|在吗|你好吗|对吧|对不对|你呢|好不好)",
    re.I,
)


def is_question(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith(("?", "？")):
        return True
    if has_cjk(s):
        return bool(_ZH_Q_RE.search(s)) and not s.endswith(("。", "！", "!"))
    return bool(_EN_Q_START.match(s)) and len(s.split()) <= 12 and not s.endswith(("!", "."))


def is_small_talk_question(sentence: str) -> bool:
    return bool(_SMALL_TALK_Q.match(sentence.strip().lstrip("@").strip()))


# ----------------------------------------------------------------------------------------------- jieba tags


@text_cache(4096)
def cjk_tags(text: str) -> tuple[tuple[str, str], ...]:
    """jieba (word, POS) pairs of ``text``; cached because summary, facts and entities re-tag sentences."""
    return tuple(jieba().tag(text))
