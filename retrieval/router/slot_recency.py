"""The newest statement of an asked slot wins (pure), whatever its wording.

Extraction names a slot only for the phrasings its rules know, so a change said another way ("Customers were
told the beta launch happens on August 13", "蜀乡情的位置发群里了") leaves the slot fact at its old value. For
a question about the *current* value ("… now?", "现在…", "最新…") every candidate that **states the slot** —
about the asked subject, with a value of the asked kind — is dated; the newest is the current value, older
ones with other values are history ("superseded by the statement of <date>"). Per attribute, a statement has:
``when`` a date or clock time; ``owner`` a person's name, or its speaker taking the task on ("周报我来写吧");
``where`` a place cue or a capitalised name; ``lives_in`` / ``works_at`` the person and a home/job cue;
``favorite_<kind>`` the person and the kind or a liking. Its *values*: the dates (a change's target only:
"from 9:30 to 10:00"), the names, the liked thing, else capitalised words outside the subject and question.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from language.extract.event_slots import EN_TIME, ZH_TIME, is_plan_change
from language.extract.subject import looks_like_name
from language.text import ENGLISH_STOPWORDS, has_cjk, is_zh_name, jieba, text_cache, tokenize
from language.time.clock import find_clocks
from language.time.dates import find_dates
from retrieval.protocols import Doc
from retrieval.router import slot_cues as cue
from retrieval.router.answer_type import lacks_kind, time_spans
from retrieval.router.slot_query import SlotQuery, subject_in_text

__all__ = ["Statement", "asks_current", "newest_statement", "query_subject", "revises", "same_subject",
           "slot_statements", "statement_values"]


def query_subject(query: str) -> str | None:
    """The event/task a slot question names, read off the question when no slot fact names it: what is left
    after the question and cue words ("Who is doing the weekly report now?" -> "weekly report",
    "APP发布最新的日期是哪天？" -> "APP发布")."""
    if has_cjk(query):
        runs = [r for r in cue.ZH_ASK_WORDS.split(query) if len(r) >= 2]
        return max(runs, key=len) if runs else None
    words = [w for w in re.findall(r"[\w'-]+", query) if w.casefold() not in cue.EN_ASK_WORDS]
    return " ".join(words) if words else None


def asks_current(query: str, *, event: bool = True) -> bool:
    """The question asks for the value as of now: it says so ("now", "current", "still", "现在", "最新",
    "目前"), or — about an event or task (``event``), not a person — it is in the present tense and says
    nothing of the past ("When is the report due?", "年会在哪办？"; not "When was…", "以前…"). A person's
    slot needs the word: "How often does John work out?" reads as a question about a job."""
    if cue.CURRENT.search(query) is not None:
        return True
    if not event or cue.PAST.search(query):
        return False
    return has_cjk(query) or cue.PRESENT.search(query) is not None


@dataclass(frozen=True)
class Statement:
    """A candidate stating the asked slot: its values, its words outside the subject (does a summary quote
    the newest statement?), and whether it is *weak* — the speaker's own line without a pronoun or a strong
    cue ("Still at Canva", "终于把西安新家的箱子都拆完了"): history when older, never the newest."""

    doc: Doc
    values: frozenset[str]
    core: frozenset[str] = frozenset()
    weak: bool = False


def _negated(text: str, a: int, b: int) -> bool:
    """The value at ``text[a:b]`` is denied or left behind: "not at X", "不在X", "from X to Y", "从X跳槽到Y"."""
    before = text[max(0, a - 16) : a]
    return bool(cue.NEGATED_BEFORE.search(before) or (cue.FROM_BEFORE.search(before) and cue.TO_AFTER.search(text[b:])))


def _zh_person_spans(text: str) -> list[tuple[int, int]]:
    """Chinese personal names by jieba's part-of-speech tags (``nr``): "大伟主动认领了周报" -> 大伟."""
    out, pos = [], 0
    tagged = jieba().tag(text)
    for i, (word, tag) in enumerate(tagged):
        if tag == "nr" and 2 <= len(word) <= 3 and has_cjk(word) and is_zh_name(tagged, i):
            out.append((pos, pos + len(word)))
        pos += len(word)
    return out


def _person_like(word: str) -> bool:
    """A capitalised word that may be a person's name (``looks_like_name`` also refuses names ending in -s)."""
    low = word.casefold()
    if low in cue.NOT_PEOPLE:
        return False
    return looks_like_name(word) or (low.endswith("s") and looks_like_name(word[:-1]) and not low.endswith("ss"))


def _names(text: str, known: Iterable[str], speaker: str | None = None) -> set[str]:
    """People named in ``text`` as a value: known names (participants, earlier owners), capitalised names,
    小/老/阿X — not a speaker label ("Zoe: …", a fact's leading speaker name) and not a negated one
    ("不归阿峰了", "no longer Hannah", "from Hannah to Grace")."""
    spans = [(m.start(), m.end()) for n in known if n
             for m in re.finditer(re.escape(n) if has_cjk(n) else rf"\b{re.escape(n)}\b", text)]  # fmt: skip
    spans += [(m.start(), m.end()) for m in cue.ZH_NAME.finditer(text)]
    if has_cjk(text):
        spans += _zh_person_spans(text)
    spans += [(m.start(), m.end()) for m in cue.EN_NAME.finditer(text) if _person_like(m.group(0))]
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
    restates "Saturday". When some of them are the target of a change ("from 9:30 to 10:00", "改回周二吧，
    周三会议室约不到"), only those are the statement's values."""
    text = doc.text
    found: list[tuple[int, str]] = []  # (start, value)
    for d in find_dates(text, doc.ts):
        if _negated(text, d.start, d.end):
            continue
        found.append((d.start, f"{d.day:%Y-%m-%d}"))
        wd = _weekday(text[d.start : d.end])
        if wd is not None:
            found.append((d.start, f"wd{wd}"))
    for m in cue.WEEKDAYS.finditer(text):
        if not _negated(text, m.start(), m.end()):
            found.append((m.start(), f"wd{_weekday(m.group(0))}"))
    pos = 0
    for clause in cue.CLAUSE.split(text):  # "不是七点半了，改成八点" says 20:00
        at = text.find(clause, pos)
        pos = max(pos, at)
        if clause and not cue.NEGATED_CLAUSE.search(clause):
            found += [(at + c.start, f"{c.at:%H:%M}") for c in find_clocks(clause)
                      if not (cue.FROM_BEFORE.search(clause[: c.start]) and cue.TO_AFTER.search(clause[c.end :]))]  # fmt: skip
    targets = {v for start, v in found if cue.CHANGE_TO.search(text[max(0, start - 10) : start])}
    return targets or {v for _, v in found}


def _weekday(said: str) -> int | None:
    m = cue.WEEKDAYS.search(said)
    if m is None:
        return None
    word = m.group(0).casefold()
    if has_cjk(word):
        return "一二三四五六日天".index(word[-1]) if word[-1] != "天" else 6
    return next(i for i, d in enumerate(cue.EN_DAYS) if word.startswith(d))


_WEAK = 1


def _about(sq: SlotQuery, attr: str, subjects: Sequence[str], doc: Doc, participants: Sequence[str]) -> int:
    """2: ``doc`` is about the asked subject; 1 (``_WEAK``): the speaker's own line about themself with
    neither a pronoun nor a strong cue, naming nobody else (chat drops the subject: "Still at Canva"); 0."""
    if sq.person is None:
        text = cue.ANNOTATION.sub("", doc.text)  # "年底(约2024-12-31)聚会" is still 年底聚会
        return 2 * any(subject_in_text(s, text) for s in subjects)
    person = sq.person
    if _named(person, doc.text):
        return 2
    if doc.speaker is None or doc.speaker.casefold() != person.casefold():
        return 0
    # the speaker about themself: "I moved to …", "我在…上班"; a liking needs no pronoun ("Totally hooked on X"),
    # nor does a plain statement of home or job ("Day job is at Canva", "换城市了，现在住在厦门")
    others = [p for p in participants if p.casefold() != person.casefold() and _named(p, doc.text)]
    own = cue.MY_KIN.sub("", _kin_of(person).sub("", doc.text))
    kin = own != doc.text  # "我妹妹…", "小美妹妹…", "my sister …": about a relative
    first = cue.FIRST_PERSON.search(cue.KIN_AFTER.sub("", own) if kin else doc.text) is not None
    if (others or kin) and not first:
        return 0  # the speaker tells of someone else ("马丽最近特别迷申花" said by 田野, "我妹妹搬到深圳了")
    if attr.startswith("favorite_") or first or (attr in cue.STRONG and cue.STRONG[attr].search(doc.text) is not None):
        return 2
    return _WEAK if attr in cue.STRONG and not cue.ZH_NAME.search(doc.text) else 0


@text_cache(256)
def _kin_of(person: str) -> re.Pattern[str]:
    """"我" or ``person`` right before a relative ("我妹妹", "小美的老公"), compiled once per person."""
    return re.compile(f"(?:我们?|{re.escape(person)})(?=" + cue.KIN_AFTER.pattern + ")")


def _named(name: str, text: str) -> bool:
    """``name`` is in ``text`` as the person, not as a relative's owner ("小美妹妹…", "Mia's sister Ana …")."""
    pattern = re.escape(name) if has_cjk(name) else rf"(?i)\b{re.escape(name)}\b"
    return any(not cue.KIN_AFTER.match(text, m.end()) for m in re.finditer(pattern, text))



def _takers(doc: Doc) -> set[str]:
    """Who takes the task on in the first person: a turn's speaker, a summary's labelled speaker."""
    if doc.kind == "turn":
        return {doc.speaker.casefold()} if doc.speaker and cue.TAKES_IT.search(doc.text) else set()
    return {m[1].casefold() for m in cue.LABELLED.finditer(doc.text) if cue.TAKES_IT.search(m[2])}


def _has_evidence(attr: str, doc: Doc, kind_word: str | None, known: Sequence[str], subjects: Sequence[str],
                  query: str = "") -> bool:  # fmt: skip
    text, cjk = doc.text, has_cjk(doc.text)
    if attr == "when":
        return bool(_dates(doc))
    if attr == "owner":  # a name, or the speaker taking it on ("周报我来写吧", "I'll take the notes")
        return bool(_names(text, known, doc.speaker) - {s.casefold() for s in subjects}) or bool(_takers(doc))
    if attr == "where":  # a cue, or (English) a name that is nobody's: "Golden Dragon has good parking"
        return _place_cue(text, cjk, query) or (not cjk and bool(statement_values(attr, doc, known, [*subjects, *known])))
    if attr == "lives_in":
        return bool((cue.ZH_LIVES if cjk else cue.EN_LIVES).search(text) or (not cjk and cue.EN_IN_PLACE.search(text)))
    if attr == "works_at":  # "at Canva", not "for Mike" (a person)
        names = {n.casefold() for n in known}
        if cjk:  # "公司派我去出差" names no company of "在哪家公司上班？": the cue is the asked kind itself
            kinds = _which_kinds(query)
            return any(m.group(0) not in kinds for m in cue.ZH_WORKS.finditer(text))
        return bool(cue.EN_WORKS.search(text) or any(
            m.group(0).split()[-1].casefold() not in names for m in cue.EN_AT_ORG.finditer(text)))
    if attr.startswith("favorite_"):
        if kind_word and kind_word.casefold() in text.casefold():
            return True
        other_kind = any(m.group(0).casefold().rstrip("s") != (kind_word or "").casefold().rstrip("s")
                         for m in cue.CATEGORIES.finditer(text))  # fmt: skip
        return bool((cue.ZH_LIKED if cjk else cue.EN_LIKED).search(text)) and not other_kind
    return False


_WHICH = re.compile(r"哪一?[家个所间位]|什么|啥")  # "在哪工作" asks where: no kind of thing


def _which_kinds(query: str) -> set[str]:
    """The kinds of thing a Chinese question asks which one of ("公司" of "在哪家公司上班？")."""
    words = (next(iter(jieba().cut(query[m.end() : m.end() + 6])), "") for m in _WHICH.finditer(query))
    return {w for w in words if len(w) >= 2}


_CUE_TAIL = re.compile(r"[到在成为至]+|(?i:\s*(?:the\s+|this\s+|next\s+)?)")


def _place_cue(text: str, cjk: bool, query: str = "") -> bool:
    """A place cue not leading to a time ("改到下周一下午两点", "moved to Friday" move the time, not the place),
    nor, in Chinese, to the very kind of place the question asks which one of ("去医院复查" names no hospital
    of "去哪家医院复查？")."""
    times = ZH_TIME if cjk else EN_TIME
    asked = {w for w in jieba().cut(query) if len(w) >= 2} if cjk and query else set()
    for m in (cue.ZH_WHERE if cjk else cue.EN_WHERE).finditer(text):
        tail = _CUE_TAIL.match(text, m.end())
        at = tail.end() if tail else m.end()
        if times.match(text, at):
            continue
        if asked and next(iter(jieba().cut(text[at : at + 8])), "") in asked:
            continue
        return True
    return False


def statement_values(attr: str, doc: Doc, known: Sequence[str], ignore: Iterable[str]) -> frozenset[str]:
    """The value(s) ``doc`` gives the slot, where their type can be read: dates (``when``), names
    (``owner``), capitalised names in other scripts than Chinese; empty when they cannot be told apart
    from the rest of the sentence (then any disagreement is assumed)."""
    if attr == "when":
        return frozenset(_dates(doc))
    if attr == "owner":  # a turn in the first person names its speaker ("the budget sheet is with me now")
        skip = {s.casefold() for s in ignore}
        me = _takers(doc) | ({doc.speaker.casefold()} if doc.kind == "turn" and doc.speaker
                             and cue.FIRST_PERSON.search(doc.text) else set())  # fmt: skip
        return frozenset(n for n in _names(doc.text, known, doc.speaker) if n not in skip) | me
    if has_cjk(doc.text):
        return frozenset()
    ignored = {t for s in ignore for t in tokenize(s)}
    if attr.startswith("favorite_"):  # the liked thing, capitalised or not ("a big cold brew fan")
        liked = {t for m in cue.EN_LIKED_OBJECT.finditer(doc.text) if not _negated(doc.text, m.start(), m.end())
                 for t in tokenize(next(g for g in m.groups() if g))} - ignored - cue.NOT_VALUE_TOKENS  # fmt: skip
        if liked:
            return frozenset(liked)
    phrases = set()
    for m in cue.CAP_PHRASE.finditer(doc.text):
        phrase = m.group(0)
        if phrase.casefold().startswith(("not ", "no ")):
            continue  # "Not Pho Saigon anymore: …"
        if m.start() == 0 and not (" " in phrase and phrase.split()[0].casefold() not in ENGLISH_STOPWORDS
                                   or "'" in phrase):  # fmt: skip
            phrase = phrase.partition(" ")[2]  # a sentence's first word is capitalised anyway
        if phrase and not _negated(doc.text, m.start(), m.end()):
            phrases.add(phrase.casefold())
    return frozenset({t for p in phrases for t in tokenize(p)} - ignored - cue.NOT_VALUE_TOKENS)


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
    facts: Sequence[tuple[Doc, str | None]] = (),
) -> list[Statement]:
    """The candidates that state ``attr`` of the asked subject, newest first. Summaries and Q&A pairs are
    included (they quote statements) but only dated turns, facts and tasks may be the newest. ``facts``:
    the live slot facts of ``attr`` with their values — statements by construction, whatever their wording
    ("Julia switched jobs: Figma now"), so an older statement never outranks a newer fact."""
    ignore = [query, *subjects, *([sq.person] if sq.person else []), *(participants if attr != "owner" else [])]
    ignored = {t for s in ignore for t in tokenize(s)}
    out = []
    for doc, value in facts:  # the fact's own value, where it has one, is what it states
        values = statement_values(attr, doc, [*known, *participants], ignore)
        if value and attr != "when":
            values = frozenset({value.casefold(), *(() if has_cjk(value) else tokenize(value))})
        out.append(Statement(doc, values, frozenset(t for t in tokenize(doc.text) if t not in ignored)))
    seen = {d.doc_id for d, _ in facts}
    for doc in docs:
        if doc.valid_to is not None or doc.doc_id in seen or cue.QUESTION.search(doc.text):
            continue
        about = _about(sq, attr, subjects, doc, participants)
        if not about:
            continue
        if not _has_evidence(attr, doc, kind_word, [*known, *participants], subjects, query):
            continue
        values = statement_values(attr, doc, [*known, *participants], ignore)
        if not values and attr in cue.NAMED_VALUES and not has_cjk(doc.text):
            continue  # "Where does Wendy work now?" is answered by a name (an employer, a city, a venue)
        if attr != "when" and not values and doc.kind != "summary" and lacks_kind(doc.text, "place"):
            continue  # a time, no value: "聚会推迟到七点" keeps the party's place (a summary's other lines may name one)
        core = frozenset(t for t in tokenize(cue.ANNOTATION.sub("", doc.text)) if t not in ignored)
        out.append(Statement(doc, values, core, weak=about == _WEAK))
    out.sort(key=lambda s: s.doc.ts, reverse=True)
    return out


def _restates(s: Statement, head: Statement, distinct: frozenset[str]) -> bool:
    """``s`` says what ``head`` says: both have readable values and share one; or, values unreadable (Chinese),
    a summary or Q&A pair quoting the newest statement, whatever its date, holds most of the words that only
    the head says (``distinct``: not in the older statements)."""
    if s.values and head.values:
        return bool(s.values & head.values)
    quoted = str(s.doc.kind) not in cue.STATEMENT_KINDS and bool(distinct)
    return quoted and len(s.core & distinct) >= 0.5 * len(distinct)


Revision = Literal["replaces", "unsure"]


def revises(head: Statement, text: str) -> Revision | None:
    """How a later line reads against the newest statement of a time: it names a time the statement names and
    states another, saying the old one is off ("not monday, he texted me, it's wednesday 10am now",
    "不是周一了，改周三上午") -> ``"replaces"``; naming it and another time without saying so ("周一上午我去
    健身到十点"), or asking about another -> ``"unsure"`` (the head is then not known to be the latest); else None."""
    said = _time_words_of(cue.ANNOTATION.sub("", head.doc.text))
    low = text.casefold()
    old = [(a, b) for w in said for a, b in _find_all(low, w)]
    if not old:
        return None
    if not any(low[a:b] not in said for a, b in time_spans(low) if not any(a < y and x < b for x, y in old)):
        return None  # no other time than the old one
    if cue.QUESTION.search(text) is None and (any(_negated(low, a, b) for a, b in old) or is_plan_change(text)):
        return "replaces"
    return "unsure"  # a question proposing another time ("thursdays are out for me. sundays maybe?") doubts it


def _time_words_of(text: str) -> set[str]:
    """The times a text names, in lower case, but for a part of the day alone, which any line may say
    ("the plumber is coming monday morning" -> monday)."""
    low = text.casefold()
    return {w for a, b in time_spans(low) if len(w := low[a:b].strip()) >= 2 and w not in _PART_OF_DAY}


_PART_OF_DAY = frozenset("morning afternoon evening night tonight noon midnight weekend 上午 下午 晚上 早上 中午".split())


def _find_all(text: str, word: str) -> list[tuple[int, int]]:
    pattern = re.escape(word) if has_cjk(word) else rf"(?<!\w){re.escape(word)}(?!\w)"
    return [m.span() for m in re.finditer(pattern, text)]


def same_subject(doc: Doc, head: Doc, subjects: Sequence[str]) -> bool:
    """``doc`` names one of the asked ``subjects`` that ``head`` names: when a question names two ("When is
    lunch after the demo?"), the demo's start time is no older time of lunch."""
    if len(subjects) < 2:
        return True
    named = {s for s in subjects if subject_in_text(s, head.text)}
    return not named or any(subject_in_text(s, doc.text) for s in named)


def newest_statement(statements: Sequence[Statement]) -> tuple[Statement | None, list[Statement]]:
    """The newest dated statement (not a weak one), and the ones that disagree with it: the older ones,
    unless they restate it; and the summaries and Q&A pairs that do not quote it, whatever their date (a
    topic summary is dated when its topic closed, after the statements it quotes)."""
    head = next((s for s in statements if str(s.doc.kind) in cue.STATEMENT_KINDS and not s.weak), None)
    if head is None:
        return None, []
    said = [s.core for s in statements if str(s.doc.kind) in cue.STATEMENT_KINDS and s is not head
            and not (s.values & head.values)]  # fmt: skip
    distinct = head.core.difference(*said)
    older = [s for s in statements if s is not head and not _restates(s, head, distinct)
             and (s.doc.ts < head.doc.ts or str(s.doc.kind) not in cue.STATEMENT_KINDS)]  # fmt: skip
    return head, older
