"""Distiller: turns one closed topic into a title, a summary, atomic facts, Q&A pairs, tasks and relations.

Two paths, one contract (:class:`DistillResult`):

- :func:`distill_extractive` — pure rules (English and Chinese), deterministic, no model. Facts are rewritten
  to stand alone (``I moved to Hangzhou`` by Alice -> ``Alice moved to Hangzhou``), relative dates are
  resolved against the message time, and known slots (``lives_in``, ``pet_name:cat``…) are named so a later
  value can supersede an earlier one.
- :func:`distill_llm` — one JSON-schema-constrained call per topic (prompt ``agents/prompts/distill_v1``),
  falling back to the extractive path on any failure; it never raises.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from agents import extract_rules as R
from agents.extract_rules import has_cjk
from agents.llm import LLMClient, LLMError
from agents.prompts import distill_v1
from memstream.settings import DistillerConfig
from retrieval.text import ENGLISH_STOPWORDS, extract_keywords, tokenize
from schemas import (
    CandidateFact,
    ChatMessage,
    DistillJob,
    DistillResult,
    QAPair,
    Relation,
    TaskItem,
    stable_id,
)

__all__ = ["distill", "distill_extractive", "distill_llm"]

log = logging.getLogger(__name__)

_MENTION_RE = re.compile(r"@([\w\u4e00-\u9fff.\-]+)")
_CAPS_RE = re.compile(r"\b[A-Z][\w&'\-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][\w&'\-]*)*")
_PREFERENCE_RE = re.compile(
    r"(?i)\b(love|like|enjoy|prefer|hate|favou?rite|fan of|into)\b|喜欢|爱|讨厌|最爱|偏好"
)
_PLAN_RE = re.compile(
    r"(?i)\b(going to|gonna|plan|planning|will|'ll|want to|hope to|thinking of)\b|打算|准备|计划|想要|要去"
)
_ZH_ENTITY_TAGS = ("nr", "nrt", "nrfg", "ns", "nt", "nz", "n", "eng")
_NOT_ENTITIES = frozenset(
    [w.title() for w in R._WEEKDAYS + R._MONTHS]
    + [w[:3].title() for w in R._WEEKDAYS + R._MONTHS]
    + "I I'm I've I'd I'll OK Ok Oh Wow Hey Hi Hello Thanks Yes Yeah No Next Last This Today Tomorrow".split()
)
_INTERJECTION_RE = re.compile(
    r"(?i)^(?:(?:yeah|yes|yep|yup|oh|wow|woah|whoa|ooh|yay|gosh|omg|man|dude|well|haha+|hehe|hmm+|aw+|ah+|"
    r"ok(?:ay)?|so|thanks|thank you|totally|"
    r"absolutely|lol|omg|hey|hi|anyway|by the way|btw)\b[\s,!.~-]*)+|"
    r"^(?:嗯+|哈+|哦+|噢|啊|哇|对|是的|好的|对了|话说)[，,！!~\s]+"
)
_ZH_NOT_ENTITIES = frozenset(R._ZH_FILLERS) | frozenset(
    "大家 时候 东西 事情 问题 时间 感觉 样子 地方 办法 情况 意思 朋友们".split()
)
_VAGUE_TASK_RE = re.compile(
    r"(?i)\b(?:do|try) (?:my|our|his|her|their) best\b|\bcheck (?:it|them|this|that) out\b|\blet you know\b|"
    r"\b(?:share|tell) (?:\w+ )?more\b|\blet's (?:do|make) (?:it|this|that|a difference|a change|some \w+ change)\b|"
    r"\bmake (?:it|this) happen\b"
)
_GENERIC_TITLE_WORDS = frozenset(
    "thing things time day today yesterday tomorrow week month year lot really pretty gonna something people "
    "way kind sure great good nice cool awesome love like think know feel felt want make made going get got "
    "anything everything nothing stuff lots bit totally super last next ago week weekend month year tonight "
    "morning evening afternoon night wow hey yeah lol haha omg woah congrats thanks awesome amazing".split()
    + list(R._WEEKDAYS + R._MONTHS)
)


# ------------------------------------------------------------------------------------------------ context


@dataclass
class _Ctx:
    """Who is in the topic and whom each message addresses."""

    job: DistillJob
    msgs: list[ChatMessage]
    by_id: dict[str, ChatMessage]
    participants: list[str]
    names: frozenset[str]
    name_of: dict[str, str]

    @classmethod
    def build(cls, job: DistillJob) -> _Ctx:
        msgs = sorted(job.messages, key=lambda m: m.ts)
        participants = list(dict.fromkeys(m.display_name for m in msgs))
        name_of = {m.sender: m.display_name for m in msgs}
        return cls(job, msgs, {m.message_id: m for m in msgs}, participants, frozenset(participants), name_of)

    def addressee(self, m: ChatMessage) -> str | None:
        speaker = m.display_name
        replied = self.by_id.get(m.reply_to or "")
        if replied is not None and replied.display_name != speaker:
            return replied.display_name
        mentioned = [self.name_of.get(x, x) for x in m.mentions] + _MENTION_RE.findall(m.text)
        mentioned = [x for x in dict.fromkeys(mentioned) if x != speaker]
        if len(mentioned) == 1:
            return mentioned[0]
        others = [p for p in self.participants if p != speaker]
        if len(others) == 1 and len(mentioned) == 0:
            return others[0]
        return None


@dataclass
class _Sentence:
    """One informative sentence that produced a fact, task or answer; the summary picks among these."""

    msg: ChatMessage
    speaker: str
    raw: str
    tokens: set[str]
    bonus: float = 0.0


@dataclass
class _Out:
    facts: list[tuple[CandidateFact, float]] = field(default_factory=list)
    tasks: list[TaskItem] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    sentences: list[_Sentence] = field(default_factory=list)
    entity_counts: Counter[str] = field(default_factory=Counter)
    next_index: Counter[str] = field(default_factory=Counter)

    def fact_id(self, ctx: _Ctx, message_id: str) -> str:
        index = self.next_index[message_id]
        self.next_index[message_id] += 1
        return stable_id(ctx.job.chat_id, ctx.job.topic_id, message_id, index)


# --------------------------------------------------------------------------------------------- extractive


def distill_extractive(job: DistillJob, cfg: DistillerConfig) -> DistillResult:
    """Distil one topic with rules only: deterministic, English and Chinese, never calls a model."""
    ctx = _Ctx.build(job)
    out = _Out()
    qa_pairs, question_of = _find_qa(ctx)
    for m in ctx.msgs:
        question = question_of.get(m.message_id)
        _distill_message(ctx, m, ctx.by_id[question] if question else None, out)
    for answer, question in question_of.items():
        _answer_slot_fact(ctx, ctx.by_id[answer], ctx.by_id[question], out)
    facts = _cap_facts(out.facts, cfg.max_facts_per_topic)
    return _result(ctx, out, facts, qa_pairs, _summary(out.sentences, cfg.summary_sentences), "extractive")


def _result(
    ctx: _Ctx, out: _Out, facts: list[CandidateFact], qa: list[QAPair], summary: str, method: str
) -> DistillResult:
    job = ctx.job
    first = ctx.msgs[0].ts if ctx.msgs else job.at
    last = ctx.msgs[-1].ts if ctx.msgs else job.at

    def is_participant(e: str) -> bool:
        return any(e == p or (len(e) >= 3 and p.startswith(e)) for p in ctx.participants)

    ranked = sorted(out.entity_counts.items(), key=lambda kv: -kv[1])
    entities = [e for e, _ in ranked if not is_participant(e)][:30]
    return DistillResult(
        result_id=stable_id("distill", job.job_id),
        job_id=job.job_id,
        chat_id=job.chat_id,
        topic_id=job.topic_id,
        title=_title(ctx),
        summary=summary,
        facts=facts,
        qa_pairs=qa,
        tasks=out.tasks,
        entities=entities,
        relations=out.relations,
        participants=ctx.participants,
        started_at=first,
        ended_at=last,
        source_message_ids=[m.message_id for m in ctx.msgs],
        method=method,
        at=job.at,
    )


def _distill_message(ctx: _Ctx, m: ChatMessage, question: ChatMessage | None, out: _Out) -> None:
    """Facts, tasks and relations of one message, sentence by sentence."""
    speaker, addressee = m.display_name, ctx.addressee(m)
    sources = [m.message_id] + ([question.message_id] if question is not None else [])
    for original in R.split_sentences(m.text):
        if R.is_filler(original, ctx.names):
            continue
        sent = _strip_lead(original, ctx.names)
        dates = R.find_dates(sent, m.ts)
        rewrite = R.to_third_person(R.annotate_dates(sent, dates), speaker, addressee)
        entities = _entities(sent, ctx.names)
        out.entity_counts.update(entities)
        task = _task(sent, rewrite.text, m, speaker, addressee, dates, ctx.names)
        if task is not None:
            out.tasks.append(task)
            out.sentences.append(
                _Sentence(m, speaker, sent, set(tokenize(sent)), 1.5 if task.is_decision else 0.5)
            )
        if R.is_question(sent):
            continue
        slots = R.find_slots(sent, speaker, ctx.names)
        out.relations.extend(
            Relation(
                subject=s.subject,
                predicate=s.attribute,
                object=s.value,
                source_message_ids=[m.message_id],
                at=m.ts,
            )
            for s in slots
            if s.value and not s.negated
        )
        if task is not None and not slots:
            continue  # a task sentence is stored as the task, not again as a fact
        score = _informativeness(sent, rewrite, bool(slots), bool(dates), bool(entities)) + (
            question is not None
        )
        if not slots and (len(_content_tokens(sent)) < 2 or (score < 2.5 and not rewrite.first_person)):
            continue
        out.sentences.append(_Sentence(m, speaker, sent, set(tokenize(sent)), 0.3 * score))
        for draft in _drafts(sent, original, rewrite, slots, speaker, addressee, ctx.names, entities):
            out.facts.append((_fact(ctx, out, m, sources, speaker, draft), score))


@dataclass(frozen=True)
class _Draft:
    text: str
    subject: str | None
    slot: R.SlotMatch | None
    negated: bool
    entities: list[str]
    confidence: float


def _drafts(
    sent: str,
    original: str,
    rewrite: R.Rewrite,
    slots: list[R.SlotMatch],
    speaker: str,
    addressee: str | None,
    names: frozenset[str],
    entities: list[str],
) -> list[_Draft]:
    """The sentence as one standalone fact, plus a short fact for every further slot it states."""
    cjk = has_cjk(sent)
    first = slots[0] if slots else None
    subject = first.subject if first else _subject(sent, rewrite, speaker, addressee, names)
    text = rewrite.text
    if first and subject not in text:  # "在阿里巴巴上班" said by 小王: name the subject
        text = (
            subject + text
            if cjk
            else R.slot_sentence(first.attribute, first.value, subject, first.negated, False) or text
        )
    if not (rewrite.first_person or slots or subject not in (None, speaker)) or (
        subject == addressee and rewrite.second_person_subject
    ):
        text = _attributed(text, speaker)  # someone else's news or opinion: keep who said it
    negated = (first.negated if first else False) or R.is_retraction(original)
    conf = 0.9 if slots else 0.8 if rewrite.first_person else 0.6 if text.startswith(speaker) else 0.7
    drafts = [_Draft(text, subject, first, negated, entities, conf)]
    for slot in slots[1:]:
        extra = R.slot_sentence(slot.attribute, slot.value, slot.subject, slot.negated, cjk)
        if extra:
            drafts.append(_Draft(extra, slot.subject, slot, slot.negated, entities, 0.85))
    return drafts


def _fact(ctx: _Ctx, out: _Out, m: ChatMessage, sources: list[str], speaker: str, d: _Draft) -> CandidateFact:
    return CandidateFact(
        fact_id=out.fact_id(ctx, m.message_id),
        chat_id=ctx.job.chat_id,
        topic_id=ctx.job.topic_id,
        text=_capitalise(d.text.strip()),
        speaker=speaker,
        subject=d.subject,
        attribute=d.slot.attribute if d.slot else None,
        value=d.slot.value if d.slot else None,
        negated=d.negated,
        entities=d.entities[:8],
        event_time=m.ts,
        source_message_ids=sources,
        confidence=d.confidence,
    )


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].islower() else text


def _attributed(text: str, speaker: str) -> str:
    """``Melanie said the stories were inspiring`` / ``小王说：明天下雨`` for statements not about the speaker."""
    if has_cjk(text):
        return f"{speaker}说：{text}"
    first, _, rest = text.partition(" ")
    bare = re.sub(r"'s$", "", first.rstrip(",.!?"))
    if bare != "I" and not bare.isupper() and not R._looks_like_name(bare):
        first = first[:1].lower() + first[1:]
    return f"{speaker} said {first} {rest}".strip()


def _subject(
    sent: str, rewrite: R.Rewrite, speaker: str, addressee: str | None, names: frozenset[str]
) -> str | None:
    if rewrite.first_person:
        return speaker
    if has_cjk(sent):
        for name in sorted(names, key=len, reverse=True):
            if sent.startswith(name):
                return name
        tags = R.cjk_tags(sent)
        return (
            tags[0][0]
            if tags and tags[0][1] in ("nr", "nrt", "nrfg")
            else (addressee if rewrite.second_person_subject else None)
        )
    first = sent.split(" ", 1)[0].strip(",.!?:")
    if first in names or (
        first[:1].isupper()
        and first.lower() not in ENGLISH_STOPWORDS
        and first not in _NOT_ENTITIES
        and first in _entities(sent, names)
    ):
        return first
    return addressee if rewrite.second_person_subject else None


def _strip_lead(sent: str, names: frozenset[str]) -> str:
    """Drop leading interjections and vocatives: ``Yeah, Caroline, I painted…`` -> ``I painted…``."""
    out = sent
    for _ in range(3):
        before = out
        out = _INTERJECTION_RE.sub("", out).strip()
        for name in names:
            for form in {name, name.split()[0]}:
                if out.startswith(form) and out[len(form) : len(form) + 1] in (",", "!", "，", "！"):
                    out = out[len(form) + 1 :].strip()
        if out == before:
            break
    return out or sent


def _content_tokens(sent: str) -> set[str]:
    return extract_keywords(sent) - _GENERIC_TITLE_WORDS


def _informativeness(sent: str, rewrite: R.Rewrite, slot: bool, dated: bool, has_entities: bool) -> float:
    n_tokens = len(_content_tokens(sent))
    score = 3.0 * slot + 1.5 * rewrite.first_person + 1.5 * dated + 1.0 * has_entities
    score += 0.5 * bool(re.search(r"\d", sent)) + 1.0 * bool(_PREFERENCE_RE.search(sent))
    score += 0.5 * bool(_PLAN_RE.search(sent)) + 0.15 * min(n_tokens, 10)
    return score - 0.5 * rewrite.second_person_subject


def _entities(sent: str, names: frozenset[str]) -> list[str]:
    found: list[str] = [f"@{x}" for x in _MENTION_RE.findall(sent)]
    if has_cjk(sent):
        for word, tag in R.cjk_tags(sent):
            if (
                tag in _ZH_ENTITY_TAGS
                and len(word) >= 2
                and word not in _ZH_NOT_ENTITIES
                and not R.ZH_DATE_WORD.fullmatch(word)
            ):
                found.append(word)
    for m in _CAPS_RE.finditer(re.sub(r"@[\w.\-]+", " ", sent)):
        phrase = re.sub(r"'s$", "", m.group())
        words = phrase.split()
        at_start = not sent[: m.start()].strip(" \"'(") or sent[: m.start()].rstrip()[-1:] in ".!?:"
        if all(w in _NOT_ENTITIES or w.lower() in ENGLISH_STOPWORDS for w in words):
            continue
        if at_start and len(words) == 1 and phrase not in names and not phrase.isupper():
            continue  # a capitalised first word is usually just a sentence start
        found.append(phrase)
    return list(dict.fromkeys(found))


# -------------------------------------------------------------------------------------------------- tasks


def _task(
    sent: str,
    text: str,
    m: ChatMessage,
    speaker: str,
    addressee: str | None,
    dates: list[R.DateMention],
    names: frozenset[str] = frozenset(),
) -> TaskItem | None:
    cjk = has_cjk(sent)
    if _VAGUE_TASK_RE.search(sent):
        return None
    is_decision = bool((R.ZH_DECISION if cjk else R.EN_DECISION).search(sent))
    owner: str | None = None
    if is_decision:
        owner = speaker if re.search(r"(?i)\bI(?:'ve| have)? decided\b|我(?:已经)?决定", sent) else None
    elif cjk:
        named = R.ZH_TASK_NAMED.search(sent)
        mention = _MENTION_RE.search(sent)
        if R.ZH_TASK_SELF.search(sent) and not R.is_question(sent):
            owner = speaker
        elif mention and (R.ZH_TASK_REQUEST.search(sent) or named):
            owner = mention.group(1)
        elif R.ZH_TASK_REQUEST.search(sent):
            owner = addressee
        elif named:
            owner = _zh_owner(sent, named.group("owner"), names)
            if owner is None and not R.ZH_TASK_GROUP.search(sent):
                return None
        elif not R.ZH_TASK_GROUP.search(sent):
            return None
    else:
        named = R.EN_TASK_NAMED.search(sent)
        mention = _MENTION_RE.search(sent)
        if R.EN_TASK_SELF.search(sent) and not R.is_question(sent):
            owner = speaker
        elif R.EN_TASK_REQUEST.search(sent):
            owner = mention.group(1) if mention else addressee
        elif named and named.group("owner").lower() not in ENGLISH_STOPWORDS:
            owner = named.group("owner")
        elif not R.EN_TASK_GROUP.search(sent):
            return None
    return TaskItem(
        text=text.strip(),
        owner=owner,
        due=_due(sent, m, dates),
        is_decision=is_decision,
        source_message_ids=[m.message_id],
    )


def _zh_owner(sent: str, guess: str, names: frozenset[str]) -> str | None:
    """Who "负责" a task: a participant named right before it, else the guessed name without 由/让/请."""
    for name in sorted(names, key=len, reverse=True):
        if re.search(re.escape(name) + r"(?:来)?(?:负责|来做|来搞|来弄|跟进|去做)", sent):
            return name
    guess = guess.lstrip("由让请叫给和跟")
    return guess if len(guess) >= 2 and not guess.startswith(("我", "你", "他", "她", "大家")) else None


def _due(sent: str, m: ChatMessage, dates: list[R.DateMention]) -> datetime | None:
    """The first day-level date of the sentence (at the time mentioned, else midnight) in the message's zone."""
    today = m.ts.date()  # a due date lies ahead: "last week we decided…" has none
    days = [d for d in dates if d.grain in ("day", "weekend", "absolute", "week") and d.day >= today]
    if not days:
        return None
    clock = R.find_time(sent)
    base = datetime(days[0].day.year, days[0].day.month, days[0].day.day, tzinfo=m.ts.tzinfo)
    return base.replace(hour=clock.hour, minute=clock.minute) if clock else base


# ----------------------------------------------------------------------------------------------------- Q&A


def _question_part(m: ChatMessage, names: frozenset[str]) -> str:
    parts = [
        s
        for s in R.split_sentences(m.text)
        if R.is_question(s)
        and not R.is_small_talk_question(s)
        and not R.EN_TASK_REQUEST.search(s)
        and (len(extract_keywords(s) - {n.lower() for n in names}) >= 1 or R.question_slot(s) is not None)
    ]
    return " ".join(parts)


def _answer_part(m: ChatMessage, names: frozenset[str]) -> str:
    parts = [
        s
        for s in R.split_sentences(m.text)
        if not R.is_filler(s, names, answer=True) and not R.is_question(s)
    ]
    return " ".join(parts[:3])


def _find_qa(ctx: _Ctx) -> tuple[list[QAPair], dict[str, str]]:
    """Question -> answer pairs; an answer is an explicit reply, else the next message of someone else.

    Returns the pairs and ``{answer message id: question message id}``.
    """
    pairs: list[QAPair] = []
    answered: dict[str, str] = {}
    for i, q in enumerate(ctx.msgs):
        question = _question_part(q, ctx.names)
        if not question:
            continue
        answer = next(
            (a for a in ctx.msgs[i + 1 :] if a.reply_to == q.message_id and a.sender != q.sender), None
        )
        if answer is None:
            for a in ctx.msgs[i + 1 : i + 6]:
                if a.sender == q.sender:
                    continue
                if not (a.reply_to and a.reply_to != q.message_id) and a.message_id not in answered:
                    answer = a
                break
        text = _answer_part(answer, ctx.names) if answer is not None else ""
        if answer is None or not text or answer.message_id in answered:
            continue
        answered[answer.message_id] = q.message_id
        pairs.append(
            QAPair(
                question=f"{q.display_name}: {question}",
                answer=f"{answer.display_name}: {text}",
                source_message_ids=[q.message_id, answer.message_id],
            )
        )
    return pairs, answered


def _answer_slot_fact(ctx: _Ctx, answer: ChatMessage, question: ChatMessage, out: _Out) -> None:
    """``Where do you live now?`` — ``Hangzhou.`` becomes the fact ``Bob lives in Hangzhou``."""
    asked = R.question_slot(_question_part(question, ctx.names))
    if asked is None or R.find_slots(answer.text, answer.display_name, ctx.names):
        return
    value = R.short_answer_value(_answer_part(answer, ctx.names))
    if value is None:
        return
    attribute = f"{asked[0]}:{asked[1]}" if asked[1] else asked[0]
    text = R.slot_sentence(attribute, value, answer.display_name, False, has_cjk(question.text + answer.text))
    if text is None:
        return
    slot = R.SlotMatch(attribute, value, answer.display_name, False, 0, 0)
    draft = _Draft(text, answer.display_name, slot, False, [value], 0.7)
    fact = _fact(ctx, out, answer, [answer.message_id, question.message_id], answer.display_name, draft)
    out.facts.append((fact, 4.0))
    out.relations.append(
        Relation(
            subject=answer.display_name,
            predicate=attribute,
            object=value,
            source_message_ids=[answer.message_id, question.message_id],
            at=answer.ts,
        )
    )


# --------------------------------------------------------------------------------------- summary and title


def _cap_facts(scored: list[tuple[CandidateFact, float]], cap: int) -> list[CandidateFact]:
    ordered = sorted(scored, key=lambda fs: fs[0].event_time)  # stable: sentence order within a message
    if len(ordered) <= cap:
        return [f for f, _ in ordered]
    keep = {f.fact_id for f, _ in sorted(ordered, key=lambda fs: (-fs[1], fs[0].event_time))[:cap]}
    return [f for f, _ in ordered if f.fact_id in keep]


def _summary(sentences: list[_Sentence], n: int) -> str:
    """Top sentences by keyword weight and centrality, in chat order, each prefixed with its speaker."""
    if not sentences or n <= 0:
        return ""
    tf: Counter[str] = Counter(t for s in sentences for t in s.tokens)
    scored: list[tuple[float, int]] = []
    for i, s in enumerate(sentences):
        if not s.tokens:
            continue
        weight = sum(tf[t] for t in s.tokens) / (math.sqrt(len(s.tokens)) + 1)
        centrality = sum(
            len(s.tokens & o.tokens) / len(s.tokens | o.tokens) for o in sentences if o is not s and o.tokens
        )
        scored.append((weight + centrality + s.bonus, i))
    picked: list[int] = []
    pool = dict((i, sc) for sc, i in scored)
    while pool and len(picked) < n:  # greedy MMR: relevance minus overlap with what is already picked

        def mmr(i: int) -> float:
            s = sentences[i]
            overlap = max(
                (len(s.tokens & sentences[j].tokens) / len(s.tokens | sentences[j].tokens) for j in picked),
                default=0.0,
            )
            return pool[i] - 2.0 * overlap - 0.3 * sum(sentences[j].speaker == s.speaker for j in picked)

        best = min(pool, key=lambda i: (-mmr(i), i))
        picked.append(best)
        del pool[best]
    chosen = sorted(picked)
    seen: set[str] = set()
    parts: list[str] = []
    for i in chosen:
        s = sentences[i]
        if s.raw in seen:
            continue
        seen.add(s.raw)
        raw = s.raw if s.raw[-1:] in ".!?。！？…" else s.raw + ("。" if has_cjk(s.raw) else ".")
        parts.append(f"{s.speaker}: {raw}")
    return " ".join(parts)


def _title(ctx: _Ctx) -> str:
    """The topic's keywords: phrases repeated across messages first, then the most frequent words."""
    names = {n.lower() for n in ctx.names} | {n.split()[0].lower() for n in ctx.names if n.strip()}
    df: Counter[str] = Counter()
    surface: dict[str, str] = {}
    order: dict[str, int] = {}
    for m in ctx.msgs:
        for sent in R.split_sentences(m.text):
            if R.is_filler(sent, ctx.names) or R.is_small_talk_question(sent):
                continue
            for term, form in _title_terms(sent, names):
                df[term] += 1
                surface.setdefault(term, form)
                order.setdefault(term, len(order))

    entities = {e.lower() for m in ctx.msgs for e in _entities(m.text, ctx.names)}

    def weight(term: str) -> float:
        if " " in term:  # a repeated phrase ("support group") beats its words
            return 2.0 * df[term] + 0.5 if df[term] >= 2 else 0.0
        # names and places first; bare past-tense verbs ("moved") last
        return df[term] + 1.0 * (term in entities) - 0.5 * (term.endswith("ed") and not has_cjk(term))

    ranked = sorted((t for t in df if weight(t) > 0), key=lambda t: (-weight(t), order[t]))
    chosen: list[str] = []
    for term in ranked:
        if any(term in c or c in term for c in chosen):
            continue
        chosen.append(term)
        if len(chosen) == 4:
            break
    sep = "、" if any(has_cjk(surface[t]) for t in chosen) else ", "
    return sep.join(surface[t] for t in chosen)


def _title_terms(sent: str, names: set[str]) -> list[tuple[str, str]]:
    if has_cjk(sent):
        return [
            (w, w)
            for w, tag in R.cjk_tags(sent)
            if len(w) >= 2
            and tag.startswith(("n", "vn", "eng"))
            and w not in _ZH_NOT_ENTITIES
            and w.lower() not in names
            and not R.ZH_DATE_WORD.fullmatch(w)
        ][:12]
    keywords = extract_keywords(sent)
    words = re.findall(r"[A-Za-z][\w'\-]*", sent)
    out: list[tuple[str, str]] = []
    prev: str | None = None
    for w in words:
        low = re.sub(r"'s$", "", w.lower())
        ok = low in keywords and low not in names and low not in _GENERIC_TITLE_WORDS and len(low) >= 3
        if ok:
            out.append((low, w))
            if prev is not None:
                out.append((f"{prev} {low}", f"{_surface_of(out, prev)} {w}"))
        prev = low if ok else None
    return out


def _surface_of(terms: list[tuple[str, str]], low: str) -> str:
    return next((form for term, form in reversed(terms) if term == low), low)


# -------------------------------------------------------------------------------------------------- LLM


async def distill_llm(job: DistillJob, client: LLMClient, cfg: DistillerConfig) -> tuple[DistillResult, int]:
    """One JSON-schema-constrained LLM call per topic (plus retries); falls back to the extractive path.

    Returns the result and the number of LLM calls made. Never raises.
    """
    if not job.messages:
        return distill_extractive(job, cfg), 0
    numbered = distill_v1.numbered(job, cfg.llm_max_messages)
    try:
        data, calls = await client.complete_json_counted(
            distill_v1.build(job, max_messages=cfg.llm_max_messages, max_chars=cfg.llm_max_chars_per_message),
            distill_v1.SCHEMA_NAME,
            distill_v1.schema(),
            validate=distill_v1.validate,
        )
    except LLMError as exc:
        log.warning("distill %s: LLM failed (%s); extractive fallback", job.topic_id, exc)
        return _fallback(job, cfg), exc.calls
    try:
        result = _from_llm(job, distill_v1.Response.model_validate(data), numbered, cfg)
    except Exception:  # never raise: a reply we cannot map falls back like a failed call
        log.exception("distill %s: unusable LLM reply; extractive fallback", job.topic_id)
        result = None
    return (result if result is not None else _fallback(job, cfg)), calls


async def distill(
    job: DistillJob, cfg: DistillerConfig, client: LLMClient | None = None
) -> tuple[DistillResult, int]:
    """The configured path: ``cfg.mode == "llm"`` with a client, else extractive (zero calls)."""
    if cfg.mode == "llm" and client is not None:
        return await distill_llm(job, client, cfg)
    return distill_extractive(job, cfg), 0


def _fallback(job: DistillJob, cfg: DistillerConfig) -> DistillResult:
    return distill_extractive(job, cfg).model_copy(update={"method": "extractive:fallback"})


def _from_llm(
    job: DistillJob, resp: distill_v1.Response, numbered: list[ChatMessage], cfg: DistillerConfig
) -> DistillResult | None:
    """Map the model's small integer ids back to message ids; drop items that cite no real message."""
    ctx = _Ctx.build(job)
    out = _Out()

    def ids(refs: list[int]) -> list[ChatMessage]:
        return [numbered[i - 1] for i in dict.fromkeys(refs) if 1 <= i <= len(numbered)]

    for item in resp.facts[: cfg.max_facts_per_topic]:
        msgs = ids(item.message_ids)
        if not msgs or not item.text.strip():
            continue
        latest = max(msgs, key=lambda m: m.ts)
        speaker = item.speaker if item.speaker in ctx.names else msgs[0].display_name
        slot = (
            R.SlotMatch(item.attribute, item.value, item.subject or speaker, item.negated, 0, 0)
            if item.attribute
            else None
        )
        draft = _Draft(item.text, item.subject or None, slot, item.negated, list(item.entities), 0.85)
        fact = _fact(ctx, out, msgs[0], [m.message_id for m in msgs], speaker, draft)
        out.facts.append((fact.model_copy(update={"event_time": latest.ts}), 1.0))
    qa = [
        QAPair(
            question=p.question,
            answer=p.answer,
            source_message_ids=[m.message_id for m in ids(p.message_ids)],
        )
        for p in resp.qa_pairs
        if ids(p.message_ids)
    ]
    for t in resp.tasks:
        msgs = ids(t.message_ids)
        if msgs:
            out.tasks.append(
                TaskItem(
                    text=t.text,
                    owner=t.owner or None,
                    due=_parse_due(t.due, msgs[0]),
                    is_decision=t.is_decision,
                    source_message_ids=[m.message_id for m in msgs],
                )
            )
    for r in resp.relations:
        msgs = ids(r.message_ids)
        if msgs and r.subject and r.object:
            out.relations.append(
                Relation(
                    subject=r.subject,
                    predicate=r.predicate,
                    object=r.object,
                    source_message_ids=[m.message_id for m in msgs],
                    at=msgs[-1].ts,
                )
            )
    out.entity_counts.update({e: len(resp.entities) - i for i, e in enumerate(resp.entities) if e.strip()})
    if not (resp.summary.strip() or out.facts or qa or out.tasks):
        return None
    result = _result(
        ctx, out, [f for f, _ in out.facts], qa, resp.summary.strip(), f"llm:{distill_v1.VERSION}"
    )
    return result.model_copy(update={"title": resp.title.strip() or result.title})


def _parse_due(raw: str | None, m: ChatMessage) -> datetime | None:
    if not raw:
        return None
    try:
        due = datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return due if due.tzinfo is not None else due.replace(tzinfo=m.ts.tzinfo)
