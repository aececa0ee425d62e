"""The response of a routed request: the abstention verdict, the direct items, the graph's "related"
layer and the layered context (the last stage of :mod:`retrieval.router.pipeline`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from language.text import count_tokens
from retrieval.protocols import MemoryFilter
from retrieval.router import abstain, supersede
from retrieval.router.abstain_calib import reads
from retrieval.router.abstain_parts import EVERYONE, parts_memo, said_by
from retrieval.router.answer_type import asked_kind, lacks_kind
from retrieval.router.asker import has_first_person, own_words_answer
from retrieval.router.candidates import Cand
from retrieval.router.currency import is_current_version, notes_for
from retrieval.router.layers import render_layers
from retrieval.router.state import Run
from retrieval.router.strategies import Context, Ranking
from retrieval.router.synonyms import with_synonyms
from retrieval.router.window_check import empty_window
from schemas import RetrievedItem, RetrieveResponse


def uncovered(ranking: Ranking, n: int) -> list[int]:
    """Positions in ``ranking.scored`` of its first ``n`` items whose sources no better item covers. A current
    version (noted "previously: …") is never dropped so: a message of two sentences gives two facts, and the
    one stating the new value ("It's Delft, not Rotterdam") must not hide behind its neighbour ("the flat
    fell through")."""
    seen: set[str] = set()
    kept: list[int] = []
    for i, (c, _) in enumerate(ranking.scored):
        if len(kept) >= n:
            break
        sources = set(c.doc.source_message_ids)
        if sources and sources <= seen and not is_current_version(ranking.notes.get(c.doc_id)):
            continue
        seen |= sources
        kept.append(i)
    return kept


def answered_questions(ranking: Ranking) -> Ranking:
    """The ranking with each asking turn's place taken by the Q&A pair that answers it (a ``qa`` item whose
    first source is that turn), when the pair ranks lower: the turn states nothing ("still on for feb 2?"),
    and shown alone it reads as the value asked about; the pair carries the answer ("let's say Feb 16").
    The turn follows right after its pair, where ``uncovered`` drops it."""
    asked = {c.doc.source_message_ids[0]: i for i, (c, _) in enumerate(ranking.scored)
             if c.doc.kind == "qa" and c.doc.source_message_ids}  # fmt: skip
    moves: dict[int, int] = {}  # the turn's position -> its pair's
    for i, (c, _) in enumerate(ranking.scored):
        ids = c.doc.source_message_ids
        j = asked.get(ids[0]) if c.doc.kind == "turn" and len(ids) == 1 else None
        if j is not None and j > i and j not in moves.values():
            moves[i] = j
    if not moves:
        return ranking
    moved = set(moves.values())
    scored: list[tuple[Cand, float]] = []
    for i, (c, s) in enumerate(ranking.scored):
        if i in moved:
            continue
        if i in moves:
            scored.append((ranking.scored[moves[i]][0], s))
        scored.append((c, s))
    return replace(ranking, scored=scored)


async def source_messages(store, chat_id: str, cands: Sequence[Cand]) -> tuple[dict[str, str], dict[str, datetime]]:
    """What the candidates' source messages tell supersession, by doc id: the text of the one message a memory
    record (a fact, a task; not a turn, summary or Q&A pair) was drawn from, and when the newest source was
    said. A summary is stamped when its topic closed, which may be after a correction of the line it retells
    ("we set off at 7" summarised at 11:02, "7:45 instead" said at 11:00); what it states was said at its sources."""
    wanted = list(dict.fromkeys(m for c in cands for m in c.doc.source_message_ids))
    if not wanted or store is None:
        return {}, {}
    msgs = {m.message_id: m for m in await store.get_messages(chat_id, wanted)}
    text, said = {}, {}
    for c in cands:
        ids = c.doc.source_message_ids
        if c.doc.kind not in ("turn", "summary", "qa") and len(ids) == 1 and ids[0] in msgs:
            text[c.doc_id] = msgs[ids[0]].text
        if stamps := [msgs[m].ts for m in ids if m in msgs]:
            said[c.doc_id] = max(stamps)
    return text, said


async def newest_statements(store, run: Run, ranking: Ranking, update: float = 0.0, asked: Sequence[str] = (),
                            tokens: Mapping[str, set[str]] | None = None) -> Ranking:  # fmt: skip
    """The ranking with each statement a newer candidate replaced right below its replacement, both noted
    (:func:`retrieval.router.supersede.reorder` over the first ``window`` de-duplicated candidates; ``update``:
    the classifier's probability that the question asks for a changed value; ``asked``: the participants the
    question names; ``tokens``: the candidates' tokens, for whom each is about)."""
    cfg = run.cfg.supersession
    model = supersede.load_model(cfg.model)
    if model is None and not cfg.record_inputs:
        return ranking  # off: no candidate is read
    t0 = time.perf_counter()
    kept = uncovered(ranking, max(cfg.window, run.req.k))
    cands = [ranking.scored[i][0] for i in kept]
    sources = list(dict.fromkeys(m for c in cands for m in c.doc.source_message_ids))
    vectors = await stored_vectors(store, run, sources)
    unreadable = supersede.unreadable_by(run.cfg.abstention.embedder)
    spans = parts_memo(run.participants, tokens or {})
    said, said_at = await source_messages(store, run.req.chat_id, cands)
    items = [supersede.Item.of(c.doc, c.scores, c.fused, None if unreadable(c.doc.text) else
                               supersede.source_vector(c.doc.source_message_ids, vectors),
                               _about(c, spans, run.participants), said.get(c.doc_id, ""),
                               said_at.get(c.doc_id)) for c in cands]  # fmt: skip
    detail: dict = ({"inputs": [x.to_json() for x in items], "names": run.participants, "update": update}
                    if cfg.record_inputs else {})  # fmt: skip
    if model is None or len(items) < 2:
        run.step("supersede", t0, links=[], **detail)
        return ranking
    order, links = supersede.reorder(items, run.req.query, model, names=run.participants, top=cfg.top,
                                     threshold=cfg.threshold, update=update,
                                     blocked=await other_attribute(store, run, items) | no_asked_value(items, run.req.query),
                                     # "who waters Ines's plot now": the answer is about someone else
                                     asked=() if abstain.asks_person(run.req.query) else
                                     [n for n in asked if n in run.participants])  # fmt: skip
    run.step("supersede", t0, links=[vars(x) for x in links], **detail)
    if not links:
        return ranking
    scores = sorted((ranking.scored[i][1] for i in kept), reverse=True)
    head = [(cands[j], s) for j, s in zip(order, scores, strict=True)]
    taken = set(kept)
    rest = [cs for i, cs in enumerate(ranking.scored) if i not in taken]
    notes = notes_for(items, links, ranking.notes)
    return Ranking(ranking.strategy, head + rest, notes, ranking.lines, ranking.chronological)


async def other_attribute(store, run: Run, items: Sequence[supersede.Item]) -> set[tuple[str, str]]:
    """``(answer, newer)`` doc ids where ``answer`` is a live value of the asked slot and ``newer`` stated
    another attribute of the same subject, and not this one, or this attribute of another subject only, as
    the facts distilled from its messages say (the meeting's new time is no new room; the dinner's is no new
    time of the talk before it). A newer line no fact was read from may still replace the answer:
    the slot may have missed a change said without its subject."""
    if not run.slot_answers or store is None:
        return set()
    answers = [r for i in run.slot_answers if (r := await store.get_memory(run.req.chat_id, i)) and r.attribute]
    sources = sorted({m for x in items for m in x.sources})
    if not answers or not sources:
        return set()
    stated: dict[str, set[tuple[str, str]]] = {}  # message id -> (subject, attribute) of the facts read from it
    for r in await store.find_memories(run.req.chat_id, MemoryFilter(kinds=["fact"], message_ids=sources, state="all")):
        for m in r.source_message_ids if r.attribute else ():
            stated.setdefault(m, set()).add(((r.subject or "").casefold(), r.attribute))
    out = set()
    for a in answers:
        subject = (a.subject or "").casefold()
        for x in items:
            facts = {f for m in x.sources for f in stated.get(m, ())}
            said = {attr for subj, attr in facts if subj == subject}
            elsewhere = any(attr == a.attribute and subj != subject for subj, attr in facts)
            if (said and a.attribute not in said) or (not said and elsewhere):
                out.add((a.memory_id, x.doc_id))  # its new time is another thing's ("读书会后面的聚餐十二点")
    return out


def no_asked_value(items: Sequence[supersede.Item], question: str) -> set[tuple[str, str]]:
    """``(older, newer)`` doc ids where the older item states a value of the kind the question asks for and the
    newer one states none (:mod:`retrieval.router.answer_type`); asked where, a newer line naming no place blocks
    only when it states a time ("pushed to 8pm" is no new place; "held in room 210" may be one)."""
    kind = asked_kind(question)
    if kind is None:
        return set()
    lacks = {x.doc_id: lacks_kind(x.text, kind, question) for x in items}
    return {(a.doc_id, b.doc_id) for a in items if not lacks[a.doc_id] for b in items if lacks[b.doc_id]}


def to_items(ranking: Ranking, k: int, layer: str) -> list[RetrievedItem]:
    """``drop_covered`` of the ranking's items, first ``k``: an item whose every source message a better one
    covers is dropped. Only the items kept are built (a ranking holds several times ``k`` candidates)."""
    items = []
    for i in uncovered(ranking, k):
        c, s = ranking.scored[i]
        d = c.doc
        items.append(RetrievedItem(item_id=d.doc_id, kind=d.kind, text=d.text, speaker=d.speaker, timestamp=d.ts,
                                   score=round(s, 6), source_message_ids=list(d.source_message_ids),
                                   topic_id=d.topic_id, valid_to=d.valid_to, layer=layer,
                                   note=ranking.notes.get(d.doc_id),
                                   scores={**c.scores, "fused": round(c.fused, 6)}))  # fmt: skip
    return items


def _about(c, spans, participants: list[str]) -> set[str]:
    """Whom an item states something about, for supersession: a part about both people of a two-person chat
    (``EVERYONE``) counts as its writer's, as supersession was fitted."""
    out = set()
    for who, toks, _ in spans(c):
        if toks:
            out.add((said_by(c, participants) or who) if who == EVERYONE else who)
    return out - {EVERYONE}


async def stored_vectors(store, run: Run, ids: Sequence[str]) -> dict[str, Any]:
    """The stored vectors of these messages (id -> vector; none for a message without one), read from the store
    once per request: the abstention check and the supersession step read many of the same."""
    missing = [m for m in dict.fromkeys(ids) if m not in run.stored_vectors]
    if missing and store is not None:
        got = await store.turn_vectors(run.req.chat_id, missing)
        run.stored_vectors.update({m: got.get(m) for m in missing})
    return {m: v for m in ids if (v := run.stored_vectors.get(m)) is not None}


async def source_cosine(store, run: Run, top: Sequence[Cand]) -> float:
    """The question's best cosine to the messages the top items were read from (each item: the unit mean of
    its sources' vectors). A fact or summary is searched by its own rewritten text ("Lena Park has switched the
    stand-up to Fridays"); the people's own words answer a naturally worded question better (on hand-written
    chats this separates answerable questions from the rest better than the search's cosine). 0 without
    vectors."""
    query = run.vectors.get(run.req.query)
    sources = list(dict.fromkeys(m for c in top for m in c.doc.source_message_ids))
    if query is None or store is None or not sources:
        return 0.0
    vectors = await stored_vectors(store, run, sources)
    items = [v for c in top if (v := supersede.source_vector(c.doc.source_message_ids, vectors)) is not None]
    if not items:
        return 0.0
    q = np.asarray(query, dtype=np.float32)
    n = float(np.linalg.norm(q))
    return float(np.max(np.asarray(items, dtype=np.float32) @ (q / n))) if n > 0 else 0.0


async def related_items(graph, run: Run, label: str, items: list[RetrievedItem]) -> list[RetrievedItem]:
    g = run.cfg.graph
    wanted = label in g.types or run.confidence < g.below_confidence
    if graph is None or not g.enabled or not items or not wanted:
        return []
    from retrieval.graph_expand import expand

    facts = await expand(graph, run.req.chat_id, items, max_facts=run.cfg.graph.max_facts,
                         token_budget=int(run.req.token_budget * run.cfg.graph.token_share))  # fmt: skip
    return [RetrievedItem(item_id=f.edge_id, kind="fact", text=f.text, timestamp=f.valid_from, score=f.score,
                          source_message_ids=f.source_message_ids, valid_to=f.valid_to, layer="related",
                          note=f"via {f.via}") for f in facts]  # fmt: skip


async def finish(store, run: Run, graph, qa, classification, ranking: Ranking, ctx: Context,
                 embedder=None) -> RetrieveResponse:  # fmt: skip
    req, cfg = run.req, run.cfg
    t0 = time.perf_counter()
    ordered = [c for c, _ in ranking.scored]
    window = {c.doc_id: c.doc.text for c in ordered[: cfg.abstention.window]}
    aliases = await with_synonyms(embedder, ctx.keys, run.about, window, ctx.tokens)  # "job" answers "work"
    verdict = abstain.check(
        ordered, [*qa.names, *([run.asker_name] if run.asker_name else [])], run.participants, ctx.tokens,
        ctx.keys, cfg.abstention, query=run.about, aliases=aliases,
        source_cosine=await source_cosine(store, run, ordered[: cfg.abstention.window])
        if reads(cfg.abstention, "source_cosine") else 0.0,
    )
    if verdict.abstain and run.slot_answers:  # the asked slot has a live value for the asked subject
        verdict = verdict.model_copy(update={"abstain": False, "reason": None})
    if verdict.abstain and run.profile and cfg.profiles.overrides_abstention:  # the asked person's own lines
        verdict = verdict.model_copy(update={"abstain": False, "reason": None})
    if verdict.abstain and verdict.reason == "other_subject" and run.asker_name and has_first_person(req.query) \
            and own_words_answer(verdict.features):  # "What do I drink now?": the asker's own words on top
        verdict = verdict.model_copy(update={"abstain": False, "reason": None})
    empty = empty_window(qa.time, qa.keywords, [c.doc for c in ordered[: cfg.abstention.window]])
    if empty and not verdict.abstain and not run.slot_answers and cfg.abstention.enabled:  # nothing said then
        verdict = verdict.model_copy(update={"abstain": True, "reason": "no_match", "decided_by": "empty_window"})
    run.step("abstain", t0, **verdict.model_dump())
    if not verdict.abstain:  # after the check, which reads the candidates in relevance order
        ranking = answered_questions(ranking)
        ranking = await newest_statements(store, run, ranking, classification.probs.get("knowledge_update", 0.0),
                                          [*qa.names, *([run.asker_name] if run.asker_name else [])], ctx.tokens)
    if run.profile and not verdict.abstain:  # after the check, which reads the searches' evidence only
        top = ranking.scored[0][1] if ranking.scored else 0.0
        ranking.scored = [(c, top + 1.0 - 1e-3 * i) for i, c in enumerate(run.profile)] + ranking.scored
    direct = to_items(ranking, req.k, "direct")
    related: list[RetrievedItem] = []
    notice = None
    if verdict.abstain:
        if verdict.reason == "other_subject" and cfg.abstention.other_subject_policy == "related":
            notice = (f"No memory says this about {verdict.subject}; the closest memories are about "
                      f"{verdict.other or 'someone else'}.")  # fmt: skip
            related = [it.model_copy(update={"layer": "related", "note": _about_note(it, verdict)}) for it in direct]
        else:
            notice = f"Nothing in memory from {empty}." if empty else "No relevant memory."
        direct = []
    else:
        t1 = time.perf_counter()
        related = await related_items(graph, run, ranking.strategy.split(":")[0], direct)
        run.step("graph", t1, related=len(related))
    context, tokens, layers, used = render_layers(
        direct,
        ranking.lines if direct else [],
        related,
        req.token_budget,
        count_tokens,
        chronological=ranking.chronological,
        related_share=cfg.graph.token_share if not verdict.abstain else 1.0,
        notice=notice,
    )
    run.step("render", t0, items=len(used), tokens=tokens, layers=[x.name for x in layers])
    return RetrieveResponse(chat_id=req.chat_id, query=req.query, items=used, context=context, context_tokens=tokens,
                            no_relevant_memory=verdict.abstain or not direct, strategy=f"routed:{ranking.strategy}",
                            trace=run.trace, query_type=classification.label, strategy_probs=classification.probs,
                            abstention_reason=verdict.reason, layers=layers)  # fmt: skip


def _about_note(item: RetrievedItem, verdict: abstain.Verdict) -> str | None:
    """Whom a related item is about, when it is someone other than the person asked about: its speaker, else
    the person most of the evidence was about. An item of the person asked about gets no note."""
    who = item.speaker or verdict.other
    if not who or (verdict.subject and who.casefold() == verdict.subject.casefold()):
        return None
    return f"about {who}"
