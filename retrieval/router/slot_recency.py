"""The newest statement of an asked slot wins (pure), whatever its wording.

Extraction names a slot only for the phrasings its rules know, so a change said another way ("Customers were
told the beta launch happens on August 13", "蜀乡情的位置发群里了，周年饭局别走错") leaves the slot fact at its
old value. A question that asks for the *current* value of a slot ("… now?", "现在…", "最新…") can do
better from the candidates themselves: every item that is a **statement of the slot** — it is about the asked
subject and carries a value of the asked kind — is dated, the newest one is the current value, and older
statements whose values differ from it are history ("superseded by the statement of <date>").

What counts as a statement, per attribute:

- ``when``: the subject (an event/plan/task noun) and a date or clock time;
- ``owner``: the subject and a person's name (a participant, a known owner, a capitalised name, 小/老/阿X);
- ``where``: the subject and a place cue (at/in/venue/地点/在/去/改…) or a capitalised place name;
- ``lives_in`` / ``works_at``: the person (as speaker, or named) and a domain cue (live/move/home, work/job/…);
- ``favorite_<kind>``: the person and the asked kind ("team", "球队") or a liking cue.

A statement's *values* are the dates it names (``when``), the names it names (``owner``), else its content
words outside the subject and the question. An older statement sharing a value with the newest one is a
restatement and is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import rjieba

from agents.extract.dates import find_dates, find_time
from agents.extract.person import looks_like_name
from agents.text import ENGLISH_STOPWORDS, has_cjk, tokenize
from retrieval.protocols import Doc
from retrieval.router.slot_query import SlotQuery, subject_in_text

__all__ = ["Statement", "asks_current", "newest_statement", "query_subject", "slot_statements", "statement_values"]

_CURRENT = re.compile(
    r"(?i)\b(?:now|current(?:ly)?|latest|newest|still|these days|nowadays|at the moment|anymore|most recent|lately|"
    r"recently)\b|现在|目前|最新|如今|当前|眼下|现今|还在|这会儿|最近|近来|这阵子"
)
_NAMED_VALUES = ("where", "lives_in", "works_at")
_STATEMENT_KINDS = ("turn", "fact", "task", "decision", "date")
_EN_NOT_VALUE = frozenset(
    "now currently current latest still new date day time place venue city team food team favourite favorite "
    "change changed changes moved move update updated instead anymore longer plan plans".split()
)
_EN_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WEEKDAYS = re.compile(
    r"(?i)\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|(?:周|星期|礼拜)[一二三四五六日天]"
)
_NOT_PEOPLE = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august "
    "september october november december thanks thank please reminder change update note heads sorry okay yes "
    "hey hi hello great cool nice sure done also today tomorrow tonight weekly daily monthly".split()
)
_ZH_NAME = re.compile(r"(?:小|老|阿)[\u4e00-\u9fff]")
_EN_NAME = re.compile(r"\b[A-Z][a-z]{2,}\b")
_CAP_PHRASE = re.compile(r"\b[A-Z][\w'&-]*(?:\s+(?:[A-Z][\w'&-]*|of|the|de|la))*")
_EN_WHERE = re.compile(r"(?i)\b(?:at|in|to|venue|location|place|room|restaurant|moved|booked|directions)\b")
_ZH_WHERE = re.compile(r"在|去|到|改|地点|位置|地方|场地|订了|定在|餐厅|饭店|菜单")
_EN_LIVES = re.compile(
    r"(?i)\b(?:live[sd]?|living|moved|moving|move[sd]? (?:to|in|out)|relocat\w*|home|flat|apartment|house|city|rent|lease|"
    r"neighbou?rhood|"
    r"settled|based)\b"
)
_ZH_LIVES = re.compile(r"住|搬(?!迁)|安家|定居|落户|城市|房租|租房|新家|住处|老家|家在")
_EN_WORKS = re.compile(
    r"(?i)\b(?:work(?:s|ed|ing)?|job|joined|joining|started|starting|hired|offer|employer|company|badge|colleagues?|"
    r"boss|manager|onboarding|quit|position|role|salary|payroll|intern(?:ship)?)\b"
)
_ZH_WORKS = re.compile(
    r"上班|工作|公司|入职|跳槽|工牌|同事|单位|领导|老板|offer|转正|离职|东家|就职|值\S{0,3}班|加班|项目组|"
    r"工资|薪|年终奖|绩效|面试|实习|做(?:后端|前端|开发|产品|运营|设计|测试|销售|算法)"
)
_EN_LIKED = re.compile(  # a liking with an object that is a thing, not "it" / "that name"
    r"(?i)\b(?:favou?rite(?: \w+)? (?:is|was|now)|obsessed with|fan of|hooked on|enough of|loves?|loved|likes?|"
    r"prefers?|beats|best \w+ is)\s+(?!(?:it|that|this|them|him|her|you|me|the|a|an|my|your|our|their|to|what|how|when)\b)[\w'-]{2,}"
    r"|\bbig [\w' -]{2,30} fan\b"
)
_ZH_LIKED = re.compile(r"(?:迷|爱|喜欢|想着|偏爱|首选)(?:上了?)?(?![这那它他她你我])[\u4e00-\u9fffA-Za-z]{2,}|[\u4e00-\u9fffA-Za-z]{2,}的(?:铁粉|粉丝)")
_CATEGORIES = re.compile(  # kinds of favourites: a liking statement naming another kind is not about the asked one
    r"(?i)\b(?:food|dish|drinks?|beverage|team|club|movie|film|book|song|band|singer|game|sport|colou?r|"
    r"restaurant|show|series|city|place|brand|car|artist|author|snack|dessert|coffee|tea|beer|wine)s?\b|"
    r"美食|菜|饮料|喝的|球队|电影|书|歌|乐队|歌手|游戏|运动|颜色|餐厅|剧|城市|品牌|作家|零食|甜品"
)
_EN_IN_PLACE = re.compile(
    r"\b(?:in|to|from)\s+(?!(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec|Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*\b)"
    r"[A-Z][a-z]+"
)
_EN_AT_ORG = re.compile(r"\b(?:at|for|with|joined|joining)\s+[A-Z][\w&-]+")
_NEGATED_BEFORE = re.compile(
    r"(?i)(?:\bnot|\bno longer|\binstead of|\bleft|\bquit|\bleaving)(?:\s+(?:at|in|with|on|for|to))?\s*$"
    r"|(?:不归|不是|不再|不由|不找|不给|不在|不去|离开)\s*$"
)
_FROM_BEFORE = re.compile(r"(?i)(?:\bfrom|从)\s*$")
_TO_AFTER = re.compile(r"(?i)^\W{0,3}(?:\s*(?:to|->|→)\b|\S{0,4}(?:到|给|换成|改成|改到))")
_CLAUSE = re.compile(r"[,;!?，；：！？。]|[.:]\s|\bbut\b")
_NEGATED_CLAUSE = re.compile(r"(?i)\b(?:not|no longer|instead of)\b|不是|不再|取消")
_STRONG = {
    "lives_in": re.compile(r"(?i)\b(?:live[sd]? in|living in|moved to|home is|is home)\b|住在|搬到|搬去|安家|定居"),
    "works_at": re.compile(r"(?i)\b(?:job is|work(?:s|ing)? (?:at|for)|joined|started at|employer)\b|入职|跳槽|上班|在\S{1,8}工作"),
}
_ANNOTATION = re.compile(r"[(（][^()（）]{1,40}[)）]")
_FIRST_PERSON = re.compile(r"(?i)\b(?:i|i'm|i've|i'll|my|me)\b|我")
_QUESTION = re.compile(r"[?？]\s*$")


_EN_ASK_WORDS = frozenset(
    "who whom whose what which when where how what's who's where's when's is are was were be the a an of for on at in to by with now current "
    "currently latest newest still these days nowadays moment doing does do did done own owns owner owning handle "
    "handles handling run runs running lead leads leading write writes writing working take takes taking charge "
    "we us our you your they i have having has "
    "responsible assigned date day time place venue location happening scheduled set planned held it its".split()
)
_ZH_ASK_WORDS = re.compile(
    r"现在|目前|最新|如今|当前|眼下|还在|是谁|谁|负责|在做|来做|做|在写|写|跟进|的|是|哪一天|哪天|几号|日期|时间|"
    r"什么时候|几点|地点|在哪|哪里|哪儿|哪家|哪个|什么地方|定在|改到|改在|去|在|呢|吗|[？?，,。！!\s]"
)


def query_subject(query: str) -> str | None:
    """The event/task a slot question names, read off the question when no slot fact names it: what is left
    after the question and cue words ("Who is doing the weekly report now?" -> "weekly report",
    "APP发布最新的日期是哪天？" -> "APP发布")."""
    if has_cjk(query):
        runs = [r for r in _ZH_ASK_WORDS.split(query) if len(r) >= 2]
        return max(runs, key=len) if runs else None
    words = [w for w in re.findall(r"[\w'-]+", query) if w.casefold() not in _EN_ASK_WORDS]
    return " ".join(words) if words else None


def asks_current(query: str) -> bool:
    """The question asks for the value as of now ("now", "current", "still", "现在", "最新", "目前")."""
    return _CURRENT.search(query) is not None


@dataclass(frozen=True)
class Statement:
    """A candidate that states the asked slot: its document and its values."""

    doc: Doc
    values: frozenset[str]


def _negated(text: str, a: int, b: int) -> bool:
    """The value at ``text[a:b]`` is denied or left behind: "not at X", "不在X", "from X to Y", "从X跳槽到Y"."""
    before = text[max(0, a - 16) : a]
    return bool(_NEGATED_BEFORE.search(before) or (_FROM_BEFORE.search(before) and _TO_AFTER.search(text[b:])))


def _zh_person_spans(text: str) -> list[tuple[int, int]]:
    """Chinese personal names by jieba's part-of-speech tags (``nr``): "大伟主动认领了周报" -> 大伟."""
    out, pos = [], 0
    for word, tag in rjieba.tag(text):
        if tag == "nr" and 2 <= len(word) <= 3 and has_cjk(word):
            out.append((pos, pos + len(word)))
        pos += len(word)
    return out


def _person_like(word: str) -> bool:
    """A capitalised word that may be a person's name (``looks_like_name`` also refuses names ending in -s)."""
    low = word.casefold()
    if low in _NOT_PEOPLE:
        return False
    return looks_like_name(word) or (low.endswith("s") and looks_like_name(word[:-1]) and not low.endswith("ss"))


def _names(text: str, known: Iterable[str], speaker: str | None = None) -> set[str]:
    """People named in ``text`` as a value: known names (participants, earlier owners), capitalised names,
    小/老/阿X — not a speaker label ("Zoe: …", a fact's leading speaker name) and not a negated one
    ("不归阿峰了", "no longer Hannah", "from Hannah to Grace")."""
    spans = [(m.start(), m.end()) for n in known if n
             for m in re.finditer(re.escape(n) if has_cjk(n) else rf"\b{re.escape(n)}\b", text)]  # fmt: skip
    spans += [(m.start(), m.end()) for m in _ZH_NAME.finditer(text)]
    if has_cjk(text):
        spans += _zh_person_spans(text)
    spans += [(m.start(), m.end()) for m in _EN_NAME.finditer(text) if _person_like(m.group(0))]
    out = set()
    for a, b in spans:
        name = text[a:b]
        if text[b : b + 1] in (":", "：") or _negated(text, a, b):
            continue
        if a == 0 and speaker and name.casefold() == speaker.casefold() and len(text) > b:
            continue
        out.add(name.casefold())
    return out


def _dates(doc: Doc) -> set[str]:
    """The days and times ``doc`` names and does not negate ("no longer on Tuesday"); a weekday said as a
    weekday (also a recurring one: "on Tuesdays", "每周四") is kept as the weekday, so "every Saturday"
    restates "Saturday"."""
    text, out = doc.text, set()
    for d in find_dates(text, doc.ts):
        if _negated(text, d.start, d.end):
            continue
        out.add(f"{d.day:%Y-%m-%d}")
        said = text[d.start : d.end]
        wd = _weekday(said)
        if wd is not None:
            out.add(f"wd{wd}")
    for m in _WEEKDAYS.finditer(text):
        if not _negated(text, m.start(), m.end()):
            out.add(f"wd{_weekday(m.group(0))}")
    for clause in _CLAUSE.split(text):  # one clock time per clause; "不是七点半了，改成八点" says 20:00
        t = find_time(clause)
        if t is not None and not _NEGATED_CLAUSE.search(clause):
            out.add(f"{t:%H:%M}")
    return out


def _weekday(said: str) -> int | None:
    m = _WEEKDAYS.search(said)
    if m is None:
        return None
    word = m.group(0).casefold()
    if has_cjk(word):
        return "一二三四五六日天".index(word[-1]) if word[-1] != "天" else 6
    return next(i for i, d in enumerate(_EN_DAYS) if word.startswith(d))


def _about(sq: SlotQuery, attr: str, subjects: Sequence[str], doc: Doc, participants: Sequence[str]) -> bool:
    if sq.person is None:
        text = _ANNOTATION.sub("", doc.text)  # "年底(约2024-12-31)聚会" is still 年底聚会
        return any(subject_in_text(s, text) for s in subjects)
    person = sq.person
    named = person in doc.text if has_cjk(person) else re.search(rf"(?i)\b{re.escape(person)}\b", doc.text)
    if named:
        return True
    if doc.speaker is None or doc.speaker.casefold() != person.casefold():
        return False
    # the speaker about themself: "I moved to …", "我在…上班"; a liking needs no pronoun ("Totally hooked on X"),
    # nor does a plain statement of home or job ("Day job is at Canva", "换城市了，现在住在厦门")
    return (attr.startswith("favorite_") or _FIRST_PERSON.search(doc.text) is not None
            or (attr in _STRONG and _STRONG[attr].search(doc.text) is not None))  # fmt: skip


def _has_evidence(attr: str, doc: Doc, kind_word: str | None, known: Sequence[str], subjects: Sequence[str]) -> bool:
    text, cjk = doc.text, has_cjk(doc.text)
    if attr == "when":
        return bool(_dates(doc))
    if attr == "owner":
        return bool(_names(text, known, doc.speaker) - {s.casefold() for s in subjects})
    if attr == "where":  # a cue, or (English) a name that is nobody's: "Golden Dragon has good parking"
        return bool((_ZH_WHERE if cjk else _EN_WHERE).search(text)) or (not cjk and bool(
            statement_values(attr, doc, known, [*subjects, *known])))
    if attr == "lives_in":
        return bool((_ZH_LIVES if cjk else _EN_LIVES).search(text) or (not cjk and _EN_IN_PLACE.search(text)))
    if attr == "works_at":
        return bool((_ZH_WORKS if cjk else _EN_WORKS).search(text) or (not cjk and _EN_AT_ORG.search(text)))
    if attr.startswith("favorite_"):
        if kind_word and kind_word.casefold() in text.casefold():
            return True
        other_kind = any(m.group(0).casefold().rstrip("s") != (kind_word or "").casefold().rstrip("s")
                         for m in _CATEGORIES.finditer(text))  # fmt: skip
        return bool((_ZH_LIKED if cjk else _EN_LIKED).search(text)) and not other_kind
    return False


def statement_values(attr: str, doc: Doc, known: Sequence[str], ignore: Iterable[str]) -> frozenset[str]:
    """The value(s) ``doc`` gives the slot, where their type can be read: dates (``when``), names
    (``owner``), capitalised names in other scripts than Chinese; empty when they cannot be told apart
    from the rest of the sentence (then any disagreement is assumed)."""
    if attr == "when":
        return frozenset(_dates(doc))
    if attr == "owner":
        skip = {s.casefold() for s in ignore}
        return frozenset(n for n in _names(doc.text, known, doc.speaker) if n not in skip)
    if has_cjk(doc.text):
        return frozenset()
    ignored = {t for s in ignore for t in tokenize(s)}
    phrases = set()
    for m in _CAP_PHRASE.finditer(doc.text):
        phrase = m.group(0)
        if m.start() == 0 and not (" " in phrase and phrase.split()[0].casefold() not in ENGLISH_STOPWORDS
                                   or "'" in phrase):  # fmt: skip
            phrase = phrase.partition(" ")[2]  # a sentence's first word is capitalised anyway
        if phrase.casefold().startswith(("not ", "no ")):
            continue  # "Not Pho Saigon anymore: …"
        if phrase and not _negated(doc.text, m.start(), m.end()):
            phrases.add(phrase.casefold())
    return frozenset({t for p in phrases for t in tokenize(p)} - ignored - _EN_NOT_VALUE)


def slot_statements(
    sq: SlotQuery,
    attr: str,
    query: str,
    docs: Iterable[Doc],
    *,
    subjects: Sequence[str],
    participants: Sequence[str],
    known: Sequence[str] = (),
    kind_word: str | None = None,
) -> list[Statement]:
    """The candidates that state ``attr`` of the asked subject, newest first. Summaries and Q&A pairs are
    included (they quote statements) but only dated turns, facts and tasks may be the newest."""
    ignore = [query, *subjects, *([sq.person] if sq.person else []), *(participants if attr != "owner" else [])]
    out = []
    for doc in docs:
        if doc.valid_to is not None or _QUESTION.search(doc.text):
            continue
        if not _about(sq, attr, subjects, doc, participants):
            continue
        if not _has_evidence(attr, doc, kind_word, [*known, *participants], subjects):
            continue
        values = statement_values(attr, doc, [*known, *participants], ignore)
        if not values and attr in _NAMED_VALUES and not has_cjk(doc.text):
            continue  # "Where does Wendy work now?" is answered by a name (an employer, a city, a venue)
        out.append(Statement(doc, values))
    out.sort(key=lambda s: s.doc.ts, reverse=True)
    return out


def newest_statement(statements: Sequence[Statement]) -> tuple[Statement | None, list[Statement]]:
    """The newest dated statement, and the older ones that disagree with it: all of them, unless both
    have readable values (dates, names) and share one — then the older one restates the current value."""
    head = next((s for s in statements if str(s.doc.kind) in _STATEMENT_KINDS), None)
    if head is None:
        return None, []
    older = [s for s in statements if s.doc.ts < head.doc.ts and not (s.values & head.values)]
    return head, older
