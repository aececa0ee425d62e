"""Pure query analysis: who the question is about, its content keywords, time cues and sub-queries."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from language.text import CHINESE_STOPWORDS, LazyTokens, has_cjk, jieba, tokenize
from retrieval.router.timeparse import TimeQuery, parse_time

# question words and generic verbs that say nothing about the content sought
_QUESTION_TOKENS = LazyTokens(
    "ever tell told mention mentioned say said talk talked know remember kind kinds type types sort "
    "thing things anything something happen happened get got go went make made many much often time times "
    "currently current now still latest new recently first last before after since ago year years month "
    "months week weeks day days moment moments nowadays lately anymore 什么 怎么 哪里 哪儿 哪些 多少 几个 有没有 是不是 现在 目前 最近 之前 之后 以前 "
    "以后 如今 眼下 最后 时候 说过 提过 知道 记得 一下 先 后 到 啥 咋 哪 啥时候 说了 聊了 聊过 聊"
)
_SUFFIXES = ("ation", "ion", "ment", "or", "er", "ive")


class QueryAnalysis(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    names: list[str] = Field(default_factory=list)  # participants the question names (display names)
    keywords: list[str] = Field(default_factory=list)  # content tokens (BM25 tokens), names excluded
    time: TimeQuery = Field(default_factory=TimeQuery)
    bm25_text: str  # the question plus derivational variants of its keywords
    subqueries: list[str] = Field(default_factory=list)


def name_matches(query: str, participants: list[str]) -> list[str]:
    """Participants named in the question: a full name, a first name, or a capitalised prefix of three or
    more letters of one (``Mel`` for ``Melanie``); CJK names by substring. Longest names first. A first name
    of two letters ("Bo", "Li") counts when written exactly so, capitalised, not as a question's first word
    ("Do", "Is" …)."""
    found: list[str] = []
    words = [w.removesuffix("'s").removesuffix("\u2019s") for w in re.findall(r"[A-Za-z][\w'-]*", query)]
    # a two-letter first name must not be the question's first word ("Do", "Is"); a lone word is a caller's
    # word from inside a sentence (retrieval/router/abstain_names.py asks one at a time)
    inner = set(words[1:]) if len(words) > 1 else set(words)
    for name in sorted(set(participants), key=len, reverse=True):
        if not name:
            continue
        if has_cjk(name):
            if name in query:
                found.append(name)
            continue
        given = name.split()[0]
        first = given.lower()
        for w in words:
            short = len(w) == 2 and w == given and w[0].isupper() and w[1].islower() and w in inner
            if short or (w[0].isupper() and len(w) >= 3 and (w.lower() == first or first.startswith(w.lower()))):
                found.append(name)
                break
    return found


def variants(token: str) -> list[str]:
    """Derivational neighbours of a stemmed English token (collect <-> collection, paint <-> painter)."""
    if len(token) < 4 or not token.isascii() or not token.isalpha():
        return []
    out = []
    for suf in _SUFFIXES:
        if token.endswith(suf) and len(token) - len(suf) >= 4:
            out.append(token[: -len(suf)])
        elif not token.endswith(suf):
            out.append(token + suf)
    return out


_CJK_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def content_tokens(text: str) -> list[str]:
    """BM25 tokens of ``text`` without the character bigrams that span two words of a CJK run (a question's
    "王现" in "小王现在…" is no content); CJK content is its jieba words."""
    out: list[str] = tokenize(_CJK_RUN.sub(" ", text))
    for run in _CJK_RUN.findall(text):
        out.extend(w for w in jieba().cut(run) if w.strip() and w not in CHINESE_STOPWORDS)
    return out


def keywords(query: str, names: list[str], drop: list[str] = ()) -> list[str]:
    """Content tokens of the question minus names, question words and the time expressions in ``drop``."""
    for label in drop:
        query = re.sub(re.escape(label), " ", query, flags=re.I)
    for name in sorted((n for n in names if has_cjk(n)), key=len, reverse=True):
        query = query.replace(name, " ")  # before segmenting: "小李在…" would cut into "小" + "李在"
    name_tokens = {t for n in names for t in tokenize(n)}
    return [
        t for t in dict.fromkeys(content_tokens(query)) if t not in name_tokens and t not in _QUESTION_TOKENS
    ]


def subqueries(query: str, names: list[str], kws: list[str]) -> list[str]:
    """Non-LLM decomposition: one query per named person when several are named ("what do A and B both
    like" -> "A like", "B like"), and the content keywords alone (drops the question's framing)."""
    out: list[str] = []
    if len(names) >= 2:
        out.extend(f"{name} {' '.join(kws)}" for name in names)
    if kws and len(kws) >= 2:
        out.append(" ".join([*names[:1], *kws]))
    return [q for q in dict.fromkeys(out) if q.strip() and q.strip().lower() != query.strip().lower()]


def analyse(query: str, participants: list[str], now: datetime, latest: datetime | None = None) -> QueryAnalysis:
    """``latest``: the chat's last activity, the year a yearless calendar date means (``parse_time``)."""
    names = name_matches(query, participants)
    time = parse_time(query, now, latest=latest)
    kws = keywords(query, names, [w.label for w in time.windows])
    capitalised = {t for w in re.findall(r"\b[A-Z][\w'-]*", query) for t in tokenize(w)}
    extra = [v for t in kws if t not in capitalised for v in variants(t)]
    return QueryAnalysis(
        text=query,
        names=names,
        keywords=kws,
        time=time,
        bm25_text=" ".join([query, *extra]),
        subqueries=subqueries(query, names, kws),
    )
