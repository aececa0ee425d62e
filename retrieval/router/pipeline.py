"""Routed retrieval: classify -> pick/mix strategies -> hybrid candidates -> rank -> multi-round ->
abstention check -> graph "related" layer -> layered context. The decisions are the pure modules of this
package; this module only sequences the store, embedder, graph and LLM calls and records the trace.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from language.text import count_tokens
from language.time.windows import widen
from retrieval.protocols import Embedder, MemoryFilter, MemoryStore
from retrieval.query_vectors import upcoming
from retrieval.router import compound, multihop, multiround, profiles
from retrieval.router.answer_type import asked_kind
from retrieval.router.asker import asker_name, has_first_person, in_third_person
from retrieval.router.candidates import Cand, Pool, SearchSpec, bm25_ahead, embed_specs, run_specs, yield_gil
from retrieval.router.classifier import Classification, PrototypeIndex, skeleton
from retrieval.router.classify import classify, wants_vector
from retrieval.router.currency import (
    Succession,
    apply_currency,
    build_succession,
    doc_from_record,
    heads_to_fetch,
)
from retrieval.router.layers import render_layers
from retrieval.router.query import QueryAnalysis
from retrieval.router.recipes import RouterConfig, StrategyRecipe, strategy_mix
from retrieval.router.respond import finish
from retrieval.router.scoring import doc_tokens, keyword_weights
from retrieval.router.slot_step import slot_answers
from retrieval.router.state import Run
from retrieval.router.strategies import RANKERS, Context, Ranking, aggregate_lines, fuse_rankings
from retrieval.store_memo import until_write
from schemas import RetrieveRequest, RetrieveResponse, TraceStep

DEFAULT_INDEX = PrototypeIndex()


def main_spec(req: RetrieveRequest, recipe: StrategyRecipe, bm25_text: str | None = None, **kw) -> SearchSpec:
    n = max(10, req.k) * recipe.candidates_factor // 2
    fields = {
        "label": "main",
        "embed_text": req.query,
        "include_superseded": req.include_superseded,
        "k": 2 * n,
        "candidates": n,
        "rrf_k": recipe.rrf_k,
        "kinds": req.kinds or recipe.kinds,
        **kw,
    }
    return SearchSpec(text=bm25_text or req.query, **fields)


def extra_specs(run: Run, qa: QueryAnalysis, recipes: list[StrategyRecipe]) -> list[SearchSpec]:
    """The searches the chosen strategies add to the main one (pure given the analysis)."""
    req, specs = run.req, []
    base = recipes[0]
    if any(r.filtered_search for r in recipes) and qa.time.window is not None:
        r = next(r for r in recipes if r.filtered_search)
        w = widen(qa.time.window, before=timedelta(days=r.window_pad_before_days),
                  after=timedelta(days=r.window_pad_after_days))  # fmt: skip
        specs.append(
            main_spec(req, base, qa.bm25_text, label="window", since=w.since, until=w.until, weight=0.7)
        )
    if any(r.event_searches for r in recipes):
        for i, event in enumerate(qa.time.events[:3]):
            specs.append(main_spec(req, base, event, label=f"event{i}", embed_text=event, weight=0.5))
        if qa.time.relation and qa.time.anchor:
            specs.append(
                main_spec(req, base, qa.time.anchor, label="anchor", embed_text=qa.time.anchor, weight=0.3)
            )
    if any(r.supersession for r in recipes):
        specs.append(main_spec(req, base, qa.bm25_text, label="history", include_superseded=True, weight=0.5))
    if any(r.subqueries for r in recipes):
        per_entity = len(qa.names) if len(qa.names) >= 2 else 0
        for i, sq in enumerate(qa.subqueries[:3]):  # "sub": one per named entity; "focus": the keywords alone
            # a "focus" search ranks the keywords by BM25 beside the question's own vector: its text (stems,
            # "Melanie kid lik") is no better a kNN query than the question, and a second text in the question's
            # forward made the latency tail, for no recall
            label, embed = (f"sub{i}", sq) if i < per_entity else (f"focus{i}", req.query)
            specs.append(main_spec(req, base, sq, label=label, embed_text=embed, weight=0.5))
    return specs


async def _about_asker(run: Run, store: MemoryStore, named: set[str], now: datetime) -> None:
    """Whom a first-person question is about: "Where do I live?" asked by Mia is, for the slot step and the
    abstention check, "Where does Mia live?" (the searches keep the words as asked: the name would pull in
    every fact that mentions it)."""
    req = run.req
    if req.asker and has_first_person(req.query):
        run.asker_name = await asker_name(store, req.chat_id, req.asker, named, req.trigger_message_id, now)
    run.about = in_third_person(req.query, run.asker_name) if run.asker_name else req.query


async def topic_participants(store: MemoryStore, chat_id: str) -> tuple[set[str], datetime | None]:
    """The chat's participants and its last activity, from its topics (read once until the store is written to,
    when it can tell: every topic parsed each request was ~0.3 ms before the question's embedding could start).
    The set is rebuilt each time by the same inserts in the same order: the same set, iterated alike."""
    memo, key = until_write(store), ("topic participants", chat_id)
    if memo is None or (got := memo.get(key)) is None:
        topics = await store.list_topics(chat_id)
        got = (tuple(name for topic in topics for name in topic.participants),
               max((t.last_active_at for t in topics), default=None))  # fmt: skip
        if memo is not None:
            memo[key] = got
    return set(got[0]), got[1]


def participants(pool: Pool, from_topics: set[str]) -> list[str]:
    return sorted(from_topics | {c.doc.speaker for c in pool.cands.values() if c.doc.speaker})


async def supersession(store: MemoryStore, chat_id: str) -> Succession:
    """The chat's facts invalidated by a value change or retraction (one filter query, no ranking)."""
    query = MemoryFilter(kinds=["fact"], state="invalidated", limit=5000)
    return build_succession(await store.find_memories(chat_id, query))


async def current_versions(store: MemoryStore, run: Run, succ: Succession, ranking: Ranking) -> Ranking:
    """Stale items below their current version, which is fetched when the searches missed it."""
    if succ.empty:
        return ranking
    top = [c for c, _ in ranking.scored[: 2 * run.req.k]]
    fetched: dict[str, Cand] = {}
    for memory_id in heads_to_fetch(succ, top, run.pool.cands):
        record = await store.get_memory(run.req.chat_id, memory_id)
        if record is not None and record.live:
            fetched[memory_id] = Cand(doc=doc_from_record(record), found_by=["currency"])
    return apply_currency(ranking, succ, fetched, run.req.k, run.req.query)


def build_context(run: Run, qa: QueryAnalysis, cands: list[Cand], recipe: StrategyRecipe) -> Context:
    tokens = doc_tokens(cands)
    window = None
    if qa.time.window is not None:
        window = widen(qa.time.window, before=timedelta(days=recipe.window_pad_before_days),
                       after=timedelta(days=recipe.window_pad_after_days))  # fmt: skip
    ctx = Context(
        analysis=qa,
        tokens=tokens,
        keys=keyword_weights(qa.keywords, tokens),
        now=run.now,
        window=window,
        mean_tokens=sum(count_tokens(c.doc.text) for c in cands) / max(1, len(cands)),
    )
    rank_of = {label: ranking for label, ranking in run.pool.rankings.items()}
    best = {label: run.pool.cands[r[0]] for label, r in rank_of.items() if r}
    ctx.anchor = best.get("anchor")
    ctx.events = [(qa.time.events[int(lab[5:])], c) for lab, c in best.items() if lab.startswith("event")]
    ctx.sub_best = [c for lab, c in best.items() if lab.startswith("sub")]
    ctx.k = run.req.k
    ctx.asked_kind = asked_kind(qa.text)
    return ctx


def rank(
    run: Run, qa: QueryAnalysis, mix: list[tuple[str, float]], ctx: Context, cands: list[Cand]
) -> Ranking:
    rankings = []
    for name, weight in mix:
        recipe = run.cfg.recipe(name)
        rankings.append((RANKERS.get(recipe.name, RANKERS["factual_extraction"])(cands, ctx, recipe), weight))
    ranking = fuse_rankings(rankings)
    if any(run.cfg.recipe(n).aggregate for n, _ in mix):
        ranking.lines.extend(aggregate_lines([c for c, _ in ranking.scored[: run.req.k]], ctx))
    return ranking


def rank_pool(run: Run, qa: QueryAnalysis, mix, recipes, succession=({}, {})) -> tuple[Ranking, Context]:
    cands = run.pool.fuse(recipes[0].rrf_k)
    ctx = build_context(run, qa, cands, recipes[0])
    ctx.successor, ctx.stale_sources = succession
    return rank(run, qa, mix, ctx, cands), ctx


async def _prelude(run: Run, store: MemoryStore, named: set[str], ahead: tuple = ()) -> Succession:
    """What a request reads while its texts are embedded (it needs no vector): whom a first-person question is
    about, the succession of facts, the analysis the main search's BM25 text reads, and, on a store that keeps
    BM25 rankings until its next write, the BM25 legs of the searches ``ahead`` (``(mix, early specs)``): the
    hybrid searches that follow run only their kNN legs then."""
    yield_gil()  # the forward was just handed to the embedder's thread
    await _about_asker(run, store, named, min(run.now, run.latest or run.now))
    succ = await supersession(store, run.req.chat_id)
    run.analyse([], None)
    if ahead:
        mix, early = ahead
        await bm25_ahead(store, run.req.chat_id, [_lead_spec(run, mix), *early])
    return succ


def _lead_spec(run: Run, mix) -> SearchSpec:
    """The main search, as the leading strategy runs it (its BM25 text morphology-expanded or as asked)."""
    lead = run.cfg.recipe(mix[0][0])
    bm25_text = run.analyse([], None).bm25_text if lead.expand_morphology else run.req.query
    return main_spec(run.req, lead, bm25_text, label="main")


async def gather(run: Run, store, embedder, qa: QueryAnalysis, mix, llm,
                 succ: Succession) -> tuple[Ranking, Context]:  # fmt: skip
    """Extra searches and ranking, then up to ``max_rounds`` follow-up rounds while confidence is low.
    A round never reshuffles what was found: its new items that carry what was missing replace the tail."""
    recipes = [run.cfg.recipe(n) for n, _ in mix]
    t0 = time.perf_counter()
    specs = extra_specs(run, qa, recipes)
    await run_specs(store, embedder, run.req.chat_id, specs, run.pool, run.vectors)
    run.step("searches", t0, specs=[{"label": s.label, "query": s.text[:200], "hits": len(run.pool.rankings[s.label])}
                                    for s in specs])  # fmt: skip
    ranking, ctx = rank_pool(run, qa, mix, recipes)  # stale items are handled for every strategy below
    ranking.scored, hop = await multihop.second_hop(store, embedder, run.req.chat_id, run.vectors, any(
        r.second_hop for r in recipes), ranking.scored, qa, ctx.tokens, run.cfg.multihop, main_spec(run.req, recipes[0]))
    specs += hop
    run.step("round0", t0, query=run.req.query, top=_top(ranking, run.req.k), second_hop=[s.text for s in hop])
    mr = run.cfg.multiround
    for rnd in range(1, mr.max_rounds + 2):
        t0 = time.perf_counter()
        top = ranking.scored[: run.req.k]
        conf = multiround.confidence(top, qa, ctx.tokens, ctx.keys, ctx.window)
        run.confidence = conf.value
        if rnd > mr.max_rounds:
            break
        feedback = any(r.feedback_round for r in recipes)
        query, lexical = None, False
        if conf.value < mr.confidence_threshold or feedback:
            query, lexical = await _follow_up(llm, run, qa, conf, top)
        if not query or any(s.text == query for s in specs):
            run.step(
                f"round{rnd}", t0, confidence=conf.model_dump(), follow_up=None, top=_top(ranking, run.req.k)
            )
            break
        spec = main_spec(run.req, recipes[0], query, label=f"round{rnd}", embed_text=None if lexical else query)
        specs.append(spec)
        round_pool = Pool()
        await run_specs(store, embedder, run.req.chat_id, [spec], round_pool, run.vectors)
        new = [round_pool.cands[i] for i in round_pool.rankings[spec.label]]
        ctx.tokens.update(doc_tokens([c for c in new if c.doc_id not in ctx.tokens]))
        ranking.scored, added = multiround.merge(
            ranking.scored, new, ctx.tokens, conf.missing, run.req.k, mr.max_new
        )
        run.step(f"round{rnd}", t0, confidence=conf.model_dump(), follow_up=query, added=added,
                 top=_top(ranking, run.req.k))  # fmt: skip
    t0 = time.perf_counter()
    ranking = await current_versions(store, run, succ, ranking)
    run.step("currency", t0, stale_facts=len(succ.successor))
    t0 = time.perf_counter()
    ranking, run.slot_answers = await slot_answers(store, run.req.chat_id, run.about, run.participants,
                                                   run.req.k, ranking, succ)
    run.step("slots", t0, answers=run.slot_answers)
    if any(r.profiles for r in recipes):
        t0 = time.perf_counter()
        run.profile = await profiles.profile_items(store, run.req.chat_id, qa, [c for c, _ in ranking.scored],
                                                   run.cfg.profiles, run.req.token_budget,
                                                   run.vectors.get(run.req.query))  # fmt: skip
        lines = [{"id": c.doc_id, "lines": len(c.doc.source_message_ids)} for c in run.profile]
        run.step("profiles", t0, items=lines)
    return ranking, ctx


def _top(ranking: Ranking, k: int) -> list[dict]:
    return [{"id": c.doc_id, "score": round(s, 4), "fused": round(c.fused, 4)} for c, s in ranking.scored[:k]]


async def _follow_up(llm, run: Run, qa: QueryAnalysis, conf, top) -> tuple[str | None, bool]:
    """The next round's query, and whether BM25 alone runs it: when keywords are missing, the query is those
    words and only items that carry one can join the ranking (:func:`multiround.merge`), which BM25 finds by
    itself; a vector of the words cost a forward and a kNN scan (at 100k memories ~11 of ~32 ms at p50)."""
    if llm is not None:
        from retrieval.router.llm_layer import llm_confidence

        got = await llm_confidence(llm, qa.text, "\n".join(c.doc.text for c, _ in top))
        if got is not None:
            value, query = got
            return (query if value < run.cfg.multiround.confidence_threshold and query else None), False
    query = multiround.follow_up(conf, [c for c, _ in top], qa, run.cfg.multiround.feedback_terms)
    return query, bool(query and conf.missing)


async def retrieve_routed(
    store: MemoryStore,
    embedder: Embedder | None,
    req: RetrieveRequest,
    *,
    cfg: RouterConfig | None = None,
    llm: Any | None = None,
    graph: Any | None = None,
    classification: Classification | None = None,
    index: PrototypeIndex | None = None,
) -> RetrieveResponse:
    """Routed retrieval for one request (see the module docstring). ``classification`` overrides the
    classifier (the benchmark's oracle router). A question that asks several things (:mod:`compound`) is
    also asked part by part, and the answers merged."""
    cfg = with_embedder_floor(cfg or RouterConfig(), embedder)
    whole, qa = await _routed(store, embedder, req, cfg, llm, graph, classification, index)
    asked = compound.parts(req.query, qa.names) if cfg.multihop.split_parts and classification is None else []
    if not asked:
        return whole
    t0 = time.perf_counter()
    subs = [(await _routed(store, embedder, req.model_copy(update={"query": q}), cfg, llm, graph, None, index))[0]
            for q in asked]
    return merged(whole, subs, asked, req, cfg, t0)


def merged(whole: RetrieveResponse, subs: list[RetrieveResponse], asked: list[str], req: RetrieveRequest,
           cfg: RouterConfig, t0: float) -> RetrieveResponse:
    """The whole question's answer joined with its parts' (:func:`compound.merge_items`); it abstains only
    when every one of them did."""
    answered = [r for r in (whole, *subs) if not r.no_relevant_memory]
    step = TraceStep(step="compound", ms=round((time.perf_counter() - t0) * 1000, 3),
                     detail={"parts": asked, "answered": [not r.no_relevant_memory for r in subs]})  # fmt: skip
    if not answered:
        return whole.model_copy(update={"trace": [*whole.trace, step]})
    direct = compound.merge_items([[it for it in r.items if it.layer != "related"] for r in answered], req.k)
    related = [it for it in whole.items if it.layer == "related"] if not whole.no_relevant_memory else []
    context, tokens, layers, used = render_layers(direct, [], related, req.token_budget, count_tokens,
                                                  related_share=cfg.graph.token_share)  # fmt: skip
    return whole.model_copy(update={"items": used, "context": context, "context_tokens": tokens, "layers": layers,
                                    "no_relevant_memory": not direct, "abstention_reason": None,
                                    "trace": [*whole.trace, step]})  # fmt: skip


async def _routed(store, embedder, req: RetrieveRequest, cfg: RouterConfig, llm, graph,
                  classification: Classification | None, index: PrototypeIndex | None
                  ) -> tuple[RetrieveResponse, QueryAnalysis]:  # fmt: skip
    run = Run(req=req, cfg=cfg, now=req.now or datetime.now(UTC), about=req.query)
    t0 = time.perf_counter()
    first = main_spec(req, cfg.recipe("factual_extraction"), label="main")
    named, run.latest = await topic_participants(store, req.chat_id)
    run.analyse(sorted(named), run.latest)
    if classification is None and wants_vector(cfg.classifier):  # the prototype layer reads the skeleton's vector
        to_embed = [first, first.model_copy(update={"embed_text": skeleton(req.query)})]
        # the forward runs in the embedder's thread (ONNX releases the GIL) while this one reads what the
        # request needs whatever the class
        _, succ = await asyncio.gather(embed_specs(embedder, to_embed, run.vectors), _prelude(run, store, named))
        vec = run.vectors.get(skeleton(req.query))
        classification = await classify(req.query, embedder=embedder, vector=None if vec is None else _arr(vec),
                                         index=index or DEFAULT_INDEX, llm=llm, cfg=cfg.classifier)  # fmt: skip
        mix, early = _routing(run, classification, named)
        await embed_specs(embedder, [first, *early], run.vectors)
    else:  # the class needs no vector: all the texts known before the main search are embedded in one forward,
        # which runs in the embedder's thread (ONNX releases the GIL) while this one reads the rest
        classification = classification or await classify(req.query, embedder=embedder, index=index or DEFAULT_INDEX,
                                                          llm=llm, cfg=cfg.classifier)  # fmt: skip
        mix, early = _routing(run, classification, named)
        _, succ = await asyncio.gather(embed_specs(embedder, [first, *early], run.vectors),
                                       _prelude(run, store, named, (mix, early) if embedder is not None else ()))  # fmt: skip
    run.step("classify", t0, label=classification.label, probs=classification.probs, layers=classification.layers,
             strategies=mix)  # fmt: skip
    t0 = time.perf_counter()
    searched = {s.embed_text: run.vectors[s.embed_text] for s in [first, *early] if s.embed_text in run.vectors}
    with upcoming(searched.values()):  # a store may scan for all of them at once (query_vectors)
        await run_specs(store, embedder, req.chat_id, [_lead_spec(run, mix)], run.pool, run.vectors)
        run.participants = participants(run.pool, named)
        qa = run.analyse(run.participants, run.latest)
        run.step("analyse", t0, names=qa.names, keywords=qa.keywords, time=qa.time.model_dump(mode="json"),
                 subqueries=qa.subqueries)  # fmt: skip
        ranking, ctx = await gather(run, store, embedder, qa, mix, llm, succ)
    return await finish(store, run, graph, qa, classification, ranking, ctx, embedder), qa


def _routing(run: Run, classification: Classification, named: set[str]) -> tuple[list, list[SearchSpec]]:
    """The strategy mix, and the searches it adds whose texts are known before the main search (its speakers
    may add names): their texts are embedded with the question's, one forward instead of one more after."""
    mix = strategy_mix(classification.probs, run.cfg)
    early = extra_specs(run, run.analyse(sorted(named), run.latest), [run.cfg.recipe(n) for n, _ in mix])
    return mix, early


def with_embedder_floor(cfg: RouterConfig, embedder: Embedder | None) -> RouterConfig:
    """The abstention check is a property of the embedding model: its calibrated model, and the rules'
    "nothing matches" cosine floor (unrelated text scores ~0.1 with MiniLM but ~0.8 with e5)."""
    abst = cfg.abstention.for_embedder(embedder)
    return cfg if abst is cfg.abstention else cfg.model_copy(update={"abstention": abst})


def _arr(v):
    import numpy as np

    return np.asarray(v, dtype=np.float32)
