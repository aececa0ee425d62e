"""The router's ``slots`` step: a question asking for a slot gets its current value on top.

Two sources, both read here and decided by pure functions: the live slot facts consolidation keeps
(:mod:`retrieval.router.slot_query`), and — for questions about the value *now* — the newest candidate that
states the slot in any wording (:mod:`retrieval.router.slot_recency`). When the newest statement is newer than
the live fact, it wins: the fact was not updated because the change was worded in a way extraction missed.
Items stating an earlier value are kept in view below the current ones, marked superseded.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import cache

from language.text import extract_keywords, has_cjk, tokenize
from retrieval.protocols import Doc, MemoryFilter, MemoryStore, SearchQuery
from retrieval.router.answer_type import asked_kind, states_kind
from retrieval.router.candidates import Cand
from retrieval.router.currency import Succession, doc_from_record
from retrieval.router.slot_query import (
    SlotQuery,
    current_values,
    states_superseded,
    subject_in_text,
    superseded_values,
)
from retrieval.router.slot_query import parse as parse_slot_query
from retrieval.router.slot_recency import (
    Statement,
    asks_current,
    newest_statement,
    query_subject,
    revises,
    same_subject,
    slot_statements,
)
from retrieval.router.strategies import Ranking
from schemas import ChatMessage, MemoryRecord

__all__ = ["slot_answers", "slot_noun"]


_NOUNS = {"lives_in": "home", "works_at": "employer", "likes": "liking", "dislikes": "dislike", "when": "time",
          "where": "place", "pet_name": "pet's name"}


def slot_noun(attribute: str) -> str:
    """How a note names a slot: ``lives_in`` -> "home", ``pet_name:cat`` -> "pet's name (cat)",
    ``favorite_food`` -> "favourite food"; other keys read as words ("job", "owner", "birthday")."""
    base, _, qualifier = attribute.partition(":")
    noun = _NOUNS.get(base) or base.replace("favorite_", "favourite_").replace("_", " ")
    return f"{noun} ({qualifier})" if qualifier else noun


def _note(notes: dict[str, str], doc_id: str, note: str) -> None:
    notes[doc_id] = f"{notes[doc_id]}; {note}" if notes.get(doc_id) else note


def _recency(
    sq: SlotQuery, query: str, records: list[MemoryRecord], docs: list[Doc], participants: list[str],
    live: list[tuple[MemoryRecord, Doc]],
) -> tuple[str, Statement | None, list[Statement]]:
    """The first asked attribute with a statement among ``docs`` (``live``: the slot facts that answer the
    question, statements whatever their wording): its newest and the disagreeing older ones."""
    for attr in sq.attributes:
        if sq.person is not None and attr in ("when", "where", "owner"):
            continue  # a question about a person asks for the person's slots
        tries: list[list[str]] = [[]]
        if sq.person is None:  # the event as the question names it ("生日聚会"), then as slot facts key it ("聚会")
            keyed = sorted({r.subject for r in records if r.attribute == attr and r.subject
                            and subject_in_text(r.subject, query)}, key=len, reverse=True)  # fmt: skip
            named = query_subject(query)
            tries = [t for t in ([named] if named else [], keyed) if t]
        known = [r.value for r in records if r.attribute == "owner" and r.value] if attr == "owner" else []
        kind = attr.removeprefix("favorite_").replace("_", " ") if attr.startswith("favorite_") else None
        facts = [(doc, r.value) for r, doc in live if r.attribute == attr]
        fact_ids = {doc.doc_id for doc, _ in facts}
        for subjects in tries:
            found = slot_statements(sq, attr, query, docs, subjects=subjects, participants=participants,
                                    known=known, kind_word=kind, facts=facts)  # fmt: skip
            if all(st.doc.doc_id in fact_ids for st in found):
                continue  # only the live facts themselves: this subject's wording found no statement
            head, older = newest_statement(found)
            if head is not None:
                return attr, head, [s for s in older if same_subject(s.doc, head.doc, subjects)]
    return "", None, []


REVISION_WINDOW = timedelta(days=3)  # how long after a time is stated a line that names it may replace it
DOUBT_WINDOW = timedelta(days=30)  # ... and may leave it unlabelled (no "current" on a time a later line doubts)
REVISION_MESSAGES = 300  # the most of the chat's next messages read for one (a busy group's three days)


async def _revised(store: MemoryStore, chat_id: str, head: Statement, older: list[Statement],
                   by_id: dict[str, Cand]) -> tuple[Statement | None, list[Statement], Cand | None]:  # fmt: skip
    """The newest statement of a time, checked against the chat's next messages, whatever they share with the
    question: one that names its value and says it is off ("the plumber is coming monday morning" - "not
    monday, he texted me, it's wednesday 10am now") is the newest instead (its turn, the candidate returned);
    one that names it with another time and says nothing of a change leaves no statement known to be the
    latest (no label)."""
    verdict, by = await _revision(store, chat_id, head.doc)
    if verdict is None:
        return head, older, None
    if by is not None:
        cand = next((c for c in by_id.values() if c.doc.kind == "turn" and by.message_id in c.doc.source_message_ids),
                    None) or await _turn(store, chat_id, by)  # fmt: skip
        if cand is not None:
            return Statement(cand.doc, frozenset()), [head, *older], cand
    return None, [], None


async def _revision(store: MemoryStore, chat_id: str, doc: Doc,
                    window: timedelta = REVISION_WINDOW) -> tuple[str | None, ChatMessage | None]:  # fmt: skip
    """How the chat's next messages (within ``window``) read against a statement of a time (:func:`revises`):
    ``"replaces"`` with the latest message that calls it off, ``"unsure"``, or None."""
    quoted = set(doc.source_message_ids)
    said = Statement(doc, frozenset())
    later = await store.list_messages(chat_id, since=doc.ts, until=doc.ts + window)
    verdict, by = None, None
    for m in later[:REVISION_MESSAGES]:
        if m.message_id in quoted or m.ts <= doc.ts:
            continue
        r = revises(said, m.text)
        if r == "replaces":
            verdict, by = r, m
        elif r == "unsure" and verdict is None:
            verdict = r
    return verdict, by


async def _turn(store: MemoryStore, chat_id: str, m: ChatMessage) -> Cand | None:
    """The stored turn of a message (looked up by its words: turn ids are the store's)."""
    hits = await store.search(SearchQuery(chat_id=chat_id, text=m.text, mode="bm25", k=5, kinds=["turn"]))
    hit = next((h for h in hits if m.message_id in h.doc.source_message_ids), None)
    return None if hit is None else Cand(doc=hit.doc, scores=dict(hit.scores), found_by=["revision"])


def _later_texts(head: Statement, top: list[tuple[Cand, float]], stale: set[str]) -> Iterator[str]:
    """The texts of the later, live items among ``top`` that are neither the head again (a summary quoting
    it) nor say its value."""
    quoted = set(head.doc.source_message_ids)
    for c, _ in top:
        if c.doc.ts <= head.doc.ts or c.doc_id in stale or c.doc_id == head.doc.doc_id:
            continue
        if set(c.doc.source_message_ids) & quoted or any(v in c.doc.text.casefold() for v in head.values):
            continue
        yield c.doc.text


def _newer_time_said(head: Statement, top: list[tuple[Cand, float]], stale: set[str], query: str) -> bool:
    """A later, live item among the question's top ones speaks of the thing asked, in the question's words: with
    a clock time or a date ("leaving 5pm instead of 6 so we beat traffic?" - "ok 5pm it is", after "we leave at
    6pm"), or without one, as the thing done or called off ("the boiler's in, works great" after "the boiler
    is pushed to next friday"). The head is then not known to be the latest statement of the time, and a
    stale value labelled latest is worse than none."""
    words = _words(query) - _time_words()
    return bool(words) and any(len(words & _words(t)) >= _SHARE * len(words) for t in _later_texts(head, top, stale))


_NEXT_TO = 3  # the ranks where a later statement of the asked kind competes with the head (further down: other news)


def _newer_kind_said(head: Statement, top: list[tuple[Cand, float]], stale: set[str], query: str) -> bool:
    """A later, live item among the question's first few states another value of the kind the question asks for
    (``answer_type``: "bad news, that slot is gone too. we're on thursdays at 7 from next week" after "mondays
    8pm at the cage", asked "What time is it these days?"), in words that never name the asked thing. Whether
    it is a new time of the same thing cannot be told; what is known is that the head may not be the latest."""
    kind = asked_kind(query)
    return kind is not None and any(states_kind(t, kind, query) for t in _later_texts(head, top, stale))


def _words(text: str) -> set[str]:
    """The words two lines share when they speak of one thing: Chinese by its jieba words (character
    bigrams would count half-words such as 器什 of 热水器什么时候), other text by its tokens."""
    return extract_keywords(text) if has_cjk(text) else set(tokenize(text))


@cache
def _time_words() -> frozenset[str]:
    """The question's words that only ask for a time (read once, not at import)."""
    return frozenset(tokenize("time times when day days date dates hour hours now start starts begin begins end ends "
                              "change changed move moved 现在 时间 几点 哪天 什么时候 改到 改成 开始"))


_VALUE_KINDS = ("clock", "quantity", "weekday")  # kinds a slot fact's own value can be read for
_SHARE = 0.66  # of the question's other words, the share a later line must say to be about the same thing


async def slot_answers(
    store: MemoryStore, chat_id: str, query: str, participants: list[str], k: int, ranking: Ranking,
    succ: Succession,
) -> tuple[Ranking, list[str]]:
    """``ranking`` with the asked slot's current value(s) first, and the ids put there (empty: not a slot
    question, or no value found)."""
    sq = parse_slot_query(query, participants)
    if sq is None:
        return ranking, []
    records: list[MemoryRecord] = []
    for attribute in sq.attributes:
        records += await store.find_memories(
            chat_id, MemoryFilter(kinds=["fact"], attribute=attribute, state="live", limit=500)
        )
    kind = asked_kind(query)
    if kind in _VALUE_KINDS:  # a value of another kind answers nothing asked ("What time is lunch?": "sat")
        records = [r for r in records if not r.value or states_kind(r.value, kind)]
    found = current_values(sq, query, records)[:2]
    scored = list(ranking.scored)
    by_id = {c.doc_id: c for c, _ in scored}
    notes = dict(ranking.notes)
    head: Statement | None = None
    older: list[Statement] = []
    live = await _said_at(store, chat_id, found) if found else []  # the facts dated when said, read once
    if asks_current(query, event=sq.person is None):
        stale_now = {i for i, n in notes.items() if n and ("superseded" in n or "retracted" in n)}
        docs = [c.doc for c, _ in scored if c.doc_id not in stale_now
                and (kind not in _VALUE_KINDS or states_kind(c.doc.text, kind, query))]  # "打卡 今天…" has no hour
        docs += [doc_from_record(r) for r in found if r.memory_id not in by_id]
        attr, head, older = _recency(sq, query, [*records, *succ.records.values()], docs, participants, live)
    if head is not None and attr == "when" and _newer_time_said(head, scored[: max(k, 10)], stale_now, query):
        head, older = None, []  # a later line names a time for it in words the slot reading missed
    if head is not None and attr == "when":
        head, older, revision = await _revised(store, chat_id, head, older, by_id)
        if revision is not None and revision.doc_id not in by_id:
            by_id[revision.doc_id] = revision
            scored.append((revision, 0.0))
        elif head is not None and revision is None and _newer_kind_said(head, scored[:_NEXT_TO], stale_now, query):
            head, older = None, []  # next to it, a later line states another time, of what it cannot tell
    if not found and head is None:
        return ranking, []
    lead_ids: list[str] = []
    if head is not None and head.doc.doc_id not in {r.memory_id for r in found}:
        lead_ids.append(head.doc.doc_id)
        _note(notes, head.doc.doc_id, f"latest statement of the {slot_noun(attr)} ({_day(head.doc.ts)})")
        for r in found:  # a live fact that agrees with the newest statement stays beside it
            if r.attribute != attr or (r.value and r.value.casefold() in head.values):
                lead_ids.append(r.memory_id)
    else:
        lead_ids = [r.memory_id for r in found]
    said_at = {r.memory_id: doc for r, doc in live if r.attribute == "when"}
    for r in found:
        if r.memory_id in lead_ids:
            by_id.setdefault(r.memory_id, Cand(doc=doc_from_record(r), found_by=["slot"]))
            if r.memory_id in said_at and (await _revision(store, chat_id, said_at[r.memory_id], DOUBT_WINDOW))[0]:
                continue  # a later line names its time with another: not known to be current
            value = f": {r.value}" if r.value else ""
            _note(notes, r.memory_id, f"current {slot_noun(r.attribute)} of {r.subject}{value} (since {_day(r.valid_from)})")
    top = max((s for _, s in scored), default=0.0)
    lead = [(by_id[i], top + 1.0 - 0.01 * n) for n, i in enumerate(lead_ids)]
    stale_notes = {s.doc.doc_id: f"superseded by the statement of {_day(head.doc.ts)}: {head.doc.text[:80]}"
                   for s in older} if head is not None else {}  # fmt: skip
    old = superseded_values(sq, query, [r for r in found if r.memory_id in lead_ids],
                            [*records, *succ.records.values()])  # fmt: skip
    rest, stale = [], []
    for c, s in scored:
        if c.doc_id in lead_ids:
            continue
        note = stale_notes.get(c.doc_id)
        if note is None and old:
            prior = states_superseded(c.doc.text, old)
            if prior is not None:
                note = f"superseded: {slot_noun(prior.attribute)} of {prior.subject} is now {prior.value} " \
                       f"(since {_day(prior.valid_from)})"
        if note is None:
            rest.append((c, s))
            continue
        if "superseded" not in (notes.get(c.doc_id) or ""):
            _note(notes, c.doc_id, note)
        stale.append((c, s))
    keep = max(0, k - len(lead) - 1)  # stale items stay in view as history, below the current ones
    ranked = Ranking(ranking.strategy, lead + rest[:keep] + stale + rest[keep:], notes, ranking.lines,
                     ranking.chronological)  # fmt: skip
    return ranked, lead_ids


async def _said_at(store: MemoryStore, chat_id: str, facts: list[MemoryRecord]) -> list[tuple[MemoryRecord, Doc]]:
    """The facts as statements dated when their messages were said (``valid_from`` is when the topic was
    consolidated, often later than a newer message that changed the value)."""
    ids = sorted({m for r in facts for m in r.source_message_ids})
    said = {m.message_id: m.ts for m in await store.get_messages(chat_id, ids)} if ids else {}
    out = []
    for r in facts:
        times = [said[m] for m in r.source_message_ids if m in said]
        doc = doc_from_record(r)
        out.append((r, doc.model_copy(update={"ts": max(times)}) if times else doc))
    return out


def _day(t: datetime) -> str:
    return f"{t:%Y-%m-%d}"
