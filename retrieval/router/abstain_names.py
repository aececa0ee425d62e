"""Whom and what an abstention question names that the chat may never mention (pure): non-participant
names (``Eve's landlord``), roles and kinship terms (``grandma``, ``外婆``), Chinese person names, and whether
a name (or a synonym: ``mom``/``mother``) is among an item's tokens; whether a question asks for a person and a
line speaks of someone rather than addressing them. Used by :mod:`retrieval.router.abstain`."""

from __future__ import annotations

import re

from language.text import LazyTokens, has_cjk, is_zh_name, tokenize

__all__ = ["GENERIC", "asks_person", "is_relation", "mentioned", "named_entities", "named_people", "names_in_line",
           "same_person"]


# capitalised words that name no one (sentence starts are skipped separately)
_NOT_ENTITIES = frozenset(
    "i i'm i've i'd i'll who who's what what's where where's when when's why how which whose january february march april may june july august september october november "
    "december monday tuesday wednesday thursday friday saturday sunday".split()
)
# Chinese words for people who are rarely participants of the chat (their name is the relation)
KINSHIP_ZH = frozenset(
    "外婆 外公 姥姥 姥爷 奶奶 爷爷 祖母 祖父 妈妈 爸爸 母亲 父亲 老妈 老爸 老婆 老公 妻子 丈夫 媳妇 女朋友 男朋友 "
    "女友 男友 儿子 女儿 哥哥 姐姐 弟弟 妹妹 舅舅 舅妈 阿姨 叔叔 婶婶 姑姑 姑父 伯伯 表哥 表姐 表弟 表妹 堂哥 "
    "堂姐 堂弟 堂妹 侄子 侄女 外甥 外甥女 孙子 孙女 岳父 岳母 公公 婆婆 老板 领导 同事 室友 邻居 闺蜜 房东 房客 "
    "保姆 司机 医生 教练 老师 同学 前任 孩子 小孩 宝宝 闺女 娃".split()
)
# ... and English ones (relations and roles a question names instead of a name)
ROLES_EN = frozenset(
    "grandma grandpa grandmother grandfather granny mom mum dad mother father wife husband girlfriend boyfriend "
    "fiance fiancee son daughter brother sister aunt uncle cousin niece nephew boss manager landlord landlady "
    "neighbour neighbor roommate flatmate nanny babysitter doctor dentist coach teacher ex".split()
)
# words a question uses around what it asks for ("favourite ... team", "最喜欢哪个球队"): not its focus
GENERIC = LazyTokens("favourite favorite like likes liked love loves loved prefer prefers best most usually really "
                     "最 最喜欢 喜欢 爱 偏爱 常 经常 一般 通常 哪个 哪家 哪里 什么 哪些")  # fmt: skip
_EN_WORD = re.compile(r"[A-Za-z][\w'\u2019-]*")


_ASKS_PERSON = re.compile(r"\b(?:who|whom|whose|who's|which (?:person|one of (?:them|us|you)))\b|谁", re.IGNORECASE)


def asks_person(query: str) -> bool:
    """The question asks for a person (``who …``, ``…是谁``): its answer is someone other than the
    participant it names ("who covers Tomek's shifts" is answered by what another person said), so what
    matches being about someone else is no reason to abstain."""
    return bool(_ASKS_PERSON.search(query))


def named_as_possessor(query: str, names: list[str]) -> bool:
    """Every participant the question names stands as an owner ("Who approves Marisol's designs?",
    "谁管小美的猫？"): a question for a person about someone's thing is answered by another person's part in
    it, not by what the owner said of themself."""
    firsts = [n.split()[0] for n in names if n.split()]
    return bool(firsts) and all(re.search(rf"{re.escape(f)}的" if has_cjk(f) else rf"(?i)\b{re.escape(f)}(?:\s+(?:and|&)\s+\w+)?['’]s\b",
                                          query) for f in firsts)  # fmt: skip


# kin by rank or side, formed the same way for every relative: 大舅, 二姨, 小姨, 三叔, 大伯, 大嫂, 表舅, 堂叔
_RANKED_KIN = re.compile(r"[大二三四五六小表堂][舅姨叔伯姑婶嫂][妈父母夫子]?")  # not 大哥/小妹/大爷: said to anyone


def _roles_and_zh_names(query: str, participants: list[str]) -> list[str]:
    """Relations and roles (``grandma``, ``landlord``) and Chinese person names / kinship terms (``外婆``)
    that are not participants."""
    out = [w for w in re.findall(r"[a-z]+", query.lower()) if w in ROLES_EN]
    if has_cjk(query):
        import rjieba

        masked = query  # a participant's name is one word: "小美的妹妹" is not 小 + 美的 (a brand, tagged nr)
        for p in sorted((p for p in participants if p and has_cjk(p)), key=len, reverse=True):
            masked = masked.replace(p, "，")
        tagged = rjieba.tag(masked)
        for i, (w, _) in enumerate(tagged):
            if (is_zh_name(tagged, i) and len(w) >= 2) or w in KINSHIP_ZH or _RANKED_KIN.fullmatch(w):
                if not any(w in p or p in w for p in participants if p):
                    out.append(w)
    return out


def named_entities(query: str, participants: list[str]) -> list[str]:
    """People and things the question names that are not participants: capitalised English words (not a
    sentence start, month or weekday, not a participant's name or its prefix), relations and roles
    (``grandma``, ``landlord``), Chinese person names (jieba ``nr``) and kinship/role terms (``外婆``, ``房东``).
    Pure."""
    from retrieval.router.query import name_matches  # query.py imports jieba; keep this module light

    out: list[str] = []
    for m in _EN_WORD.finditer(query):
        word = re.sub(r"['\u2019]s$", "", m[0])
        before = query[: m.start()].rstrip()
        if not word[0].isupper() or not before or before[-1] in ".?!:;\"“" or word.lower() in _NOT_ENTITIES:
            continue
        if not name_matches(word, participants):
            out.append(word)
    return list(dict.fromkeys(out + _roles_and_zh_names(query, participants)))


# a relation is mentioned under any of its everyday names
_SAME_PERSON = [
    {"grandma", "grandmother", "granny", "nana"}, {"grandpa", "grandfather", "granddad"}, {"mom", "mum", "mother", "mama"},
    {"dad", "father", "papa"}, {"neighbour", "neighbor"}, {"girlfriend", "gf"}, {"boyfriend", "bf"},
    {"外婆", "姥姥"}, {"外公", "姥爷"}, {"奶奶", "祖母"}, {"爷爷", "祖父"}, {"妈妈", "母亲", "老妈"}, {"爸爸", "父亲", "老爸"},
    {"老婆", "妻子", "媳妇"}, {"老公", "丈夫"}, {"女朋友", "女友"}, {"男朋友", "男友"},
]  # fmt: skip
_SYNONYMS = {w: group for group in _SAME_PERSON for w in group}


def is_relation(word: str) -> bool:
    """A word for a relation or role (``sister``, ``landlord``, ``外婆``)."""
    w = word.casefold()
    return w in ROLES_EN or w in KINSHIP_ZH or w in _SYNONYMS or (w.endswith("s") and w[:-1] in ROLES_EN)


def same_person(a: str, b: str) -> bool:
    """Two everyday names of one relation (``mum``, ``mother``)."""
    return a.casefold() in _SYNONYMS.get(b.casefold(), ())


def mentioned(entity: str, tokens: set[str]) -> bool:
    for name in _SYNONYMS.get(entity.lower(), {entity}):
        toks = tokenize(name)
        if toks and all(t in tokens for t in toks):
            return True
    return False


def named_people(query: str, participants: list[str]) -> list[str]:
    """The people a question is about who are not participants: a possessive name (``Eve's``), a relation or
    role (``grandma``, ``the landlord``), a Chinese person name or kinship term (``外婆``). Pure."""
    from retrieval.router.query import name_matches

    out = [m[1] for m in re.finditer(r"\b([A-Z][a-z]+)['\u2019]s\b", query)
           if m[1].lower() not in _NOT_ENTITIES and not name_matches(m[1], participants)]  # fmt: skip
    return list(dict.fromkeys(out + _roles_and_zh_names(query, participants)))


_GREETING = r"(?:hey|hi|hello|yo|thanks|thank you|congrats|congratulations|ok|okay|oh|wow|sorry|dear|morning|night)"


def _vocative(text: str, at: int, end: int) -> bool:
    """Whether the name at ``text[at:end]`` addresses its person ("Hey John!", "thanks, Tomek.", "苏苏，…")
    rather than speaking of them ("covers Tomek's shifts")."""
    after = text[end:end + 1]
    if after and after not in ",!?.;:，！？。；：~…":
        return False
    before = text[:at].rstrip()
    return (not before or before[-1] in ",.!?;:，。！？；：\n-—(" or
            re.search(rf"(?i)\b{_GREETING}$", before) is not None)  # fmt: skip


def names_in_line(text: str, first: str) -> bool:
    """``first`` (a participant's first name) is spoken of in ``text``, not only addressed."""
    pattern = re.escape(first) if has_cjk(first) else rf"(?i)\b{re.escape(first)}\b"
    return any(not _vocative(text, m.start(), m.end()) for m in re.finditer(pattern, text))
