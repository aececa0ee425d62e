"""The topic-level parts of a result: fact cap, extractive summary, title, and the assembled result."""

from __future__ import annotations

import math
import re
from collections import Counter

from agents.distill.context import Collected, Sentence, TopicContext
from language.extract.entities import ZH_NOT_ENTITIES, find_entities
from language.extract.text import cjk_tags, is_filler, is_small_talk_question, split_sentences
from language.text import extract_keywords, has_cjk
from language.time.dates import MONTHS, WEEKDAYS, ZH_DATE_WORD
from schemas import CandidateFact, DistillResult, QAPair, stable_id

__all__ = ["GENERIC_WORDS", "build_result", "cap_facts", "senders_of", "summarise", "title_of"]


GENERIC_WORDS = frozenset(
    "thing things time day today yesterday tomorrow week month year lot really pretty gonna something people "
    "way kind sure great good nice cool awesome love like think know feel felt want make made going get got "
    "anything everything nothing stuff lots bit totally super last next ago week weekend month year tonight "
    "morning evening afternoon night wow hey yeah lol haha omg woah congrats thanks awesome amazing".split()
    + list(WEEKDAYS + MONTHS)
)


def build_result(
    ctx: TopicContext, out: Collected, facts: list[CandidateFact], qa: list[QAPair], summary: str, method: str
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
        title=title_of(ctx),
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
        senders=senders_of(ctx.msgs),
    )


def senders_of(msgs) -> dict[str, list[str]]:
    """Each display name's sender ids, in order of appearance."""
    out: dict[str, list[str]] = {}
    for m in msgs:
        ids = out.setdefault(m.display_name, [])
        if m.sender not in ids:
            ids.append(m.sender)
    return out


def cap_facts(scored: list[tuple[CandidateFact, float]], cap: int) -> list[CandidateFact]:
    ordered = sorted(scored, key=lambda fs: fs[0].event_time)  # stable: sentence order within a message
    if len(ordered) <= cap:
        return [f for f, _ in ordered]
    keep = {f.fact_id for f, _ in sorted(ordered, key=lambda fs: (-fs[1], fs[0].event_time))[:cap]}
    return [f for f, _ in ordered if f.fact_id in keep]


def summarise(sentences: list[Sentence], n: int) -> str:
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
        parts.append(f"{s.speaker}: {_with_antecedent(s, raw)}")
    return " ".join(parts)


_OPENS_WITH_PRONOUN = re.compile(r"(?i)^(?:she|he|they|it|his|her|their)\b|^(?:她|他|它)")
ANTECEDENT_CHARS = 60  # a longer sentence before is a statement of its own, not just who "she" is


def _with_antecedent(s: Sentence, raw: str) -> str:
    """A sentence that opens with a pronoun, with the message's sentence before it ("Febe's in! she'll play
    piano for us"): the summary would otherwise say what someone does without saying who."""
    text = s.msg.text.replace("\u2019", "'")  # as split_sentences reads it
    if not _OPENS_WITH_PRONOUN.match(s.raw) or s.raw not in text:
        return raw
    before = [x for x in split_sentences(text.split(s.raw, 1)[0]) if x.strip()]
    if not before or len(before[-1]) > ANTECEDENT_CHARS:
        return raw
    head = before[-1].strip()
    return f"{head}{'' if head[-1:] in '.!?。！？…' else ('。' if has_cjk(head) else '.')} {raw}"


def title_of(ctx: TopicContext) -> str:
    """The topic's keywords: phrases repeated across messages first, then the most frequent words."""
    names = {n.lower() for n in ctx.names} | {n.split()[0].lower() for n in ctx.names if n.strip()}
    df: Counter[str] = Counter()
    surface: dict[str, str] = {}
    order: dict[str, int] = {}
    for m in ctx.msgs:
        for sent in split_sentences(m.text):
            if is_filler(sent, ctx.names) or is_small_talk_question(sent):
                continue
            for term, form in _title_terms(sent, names):
                df[term] += 1
                surface.setdefault(term, form)
                order.setdefault(term, len(order))

    entities = {e.lower() for m in ctx.msgs for e in find_entities(m.text, ctx.names)}

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
            for w, tag in cjk_tags(sent)
            if len(w) >= 2
            and tag.startswith(("n", "vn", "eng"))
            and w not in ZH_NOT_ENTITIES
            and w.lower() not in names
            and not ZH_DATE_WORD.fullmatch(w)
        ][:12]
    keywords = extract_keywords(sent)
    words = _LATIN_WORD_RE.findall(sent)
    out: list[tuple[str, str]] = []
    prev: str | None = None
    for w in words:
        low = w.lower()
        low = low[:-2] if low.endswith("'s") else low
        ok = low in keywords and low not in names and low not in GENERIC_WORDS and len(low) >= 3
        if ok:
            out.append((low, w))
            if prev is not None:
                out.append((f"{prev} {low}", f"{_surface_of(out, prev)} {w}"))
        prev = low if ok else None
    return out


_LATIN_WORD_RE = re.compile(r"[A-Za-z][\w'\-]*")


def _surface_of(terms: list[tuple[str, str]], low: str) -> str:
    return next((form for term, form in reversed(terms) if term == low), low)
