"""LoCoMo retrieval benchmark through the real pipeline (ingest -> segment -> distil -> consolidate -> index).

``memstream bench locomo --data FILE --out DIR`` -> ``DIR/locomo.json`` + ``DIR/locomo.png``.
Each conversation is one chat; each question is asked in its own chat only. Items map back to turns
through their source message ids (the LoCoMo ``dia_id``s).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.locomo_abstention import abstention_report, plot_abstention
from bench.locomo_metrics import (
    FIG_KEYS,
    aggregate,
    classifier_metrics,
    parse_evidence,
    recall,
    score_question,
    with_budget,
)
from bench.locomo_progress import QuestionProgress
from memstream.settings import Settings

# name -> (retrieval mode, item kinds or None for the default, which store)
SYSTEMS = {
    "memstream-hybrid": ("hybrid", None, "main"),
    "bm25-only": ("bm25", None, "main"),
    "embedding-only": ("embedding", None, "main"),
    "raw-turns-only": ("hybrid", ["turn"], "main"),
    "add-only": ("hybrid", None, "add-only"),
}
CATEGORIES = ("1", "2", "3", "4", "5")
# uniform systems under the names the routing comparison uses (the same runs as memstream-hybrid/embedding-only)
ALIASES = {"uniform-hybrid": "memstream-hybrid", "uniform-embedding": "embedding-only"}
BUDGET_TOKENS, BUDGET_K = 1500, 100  # turn_recall_all@budget: every item the context packs up to 1,500 tokens
STRATEGIES = ("factual_extraction", "temporal_reasoning", "knowledge_update", "multi_hop", "abstention")
ORACLE_TYPE = {"1": "multi_hop", "2": "temporal_reasoning", "3": "factual_extraction", "4": "factual_extraction",
               "5": "factual_extraction"}  # fmt: skip


def load_questions(data: list[dict]) -> list[dict]:
    qs = []
    for conv in data:
        for qa in conv.get("qa", []):
            ev = parse_evidence(qa.get("evidence", []))
            if not ev:
                continue
            qs.append(
                {
                    "chat_id": str(conv["sample_id"]),
                    "question": str(qa["question"]),
                    "category": str(qa.get("category")),
                    "evidence": ev,
                }
            )
    return qs


async def _ingest(settings: Settings, src: Path, embedder, console):
    from memstream.cli_progress import progress_bars
    from memstream.clients import build_clients
    from memstream.ops import ingest

    clients = await build_clients(settings, embedder=embedder)
    if console:
        console.print(f"ingesting into {settings.data_dir.name} ({settings.consolidator.mode})")
    progress, close = progress_bars(stream=console.file) if console else (None, lambda: None)
    t0 = time.perf_counter()
    try:
        report = await ingest(clients, src, fmt="locomo", progress=progress)
    finally:
        close()
    secs = time.perf_counter() - t0
    if console:
        console.print(f"ingested {report.read} turns in {secs:.1f}s ({settings.consolidator.mode}); "
                      f"stages {report.stats.processed}")  # fmt: skip
    return clients, report, secs


KEEP_ALL = 2**62  # Settings.log_keep_derived that keeps every derived record of a run in the log


async def consolidation_stats(clients, n_msgs: int, llm_calls: int) -> dict:
    """Decision mix of the run, read back from the memory-decisions topic of the log (which must keep them
    all: ``log_keep_derived=KEEP_ALL``)."""
    from collections import Counter

    from streams.topics import MEMORY_DECISIONS

    ops: Counter[str] = Counter()
    offset = 0
    while batch := await clients.log.read(MEMORY_DECISIONS.name, offset, 5000):
        ops.update(json.loads(r.value)["op"] for r in batch)
        offset = batch[-1].offset + 1
    total = sum(ops.values()) or 1
    return {
        "records": len(await _all_memories(clients)),
        "decisions": sum(ops.values()),
        **{op.lower(): ops.get(op, 0) for op in ("ADD", "UPDATE", "DELETE", "NOOP")},
        **{
            f"{op.lower()}_share": round(ops.get(op, 0) / total, 4)
            for op in ("ADD", "UPDATE", "DELETE", "NOOP")
        },
        "llm_calls_per_1k_msgs": round(1000 * llm_calls / max(1, n_msgs), 2),
    }


async def _evaluate(clients, questions: list[dict], mode: str, kinds: list[str] | None = None,
                    tick: Callable[[], None] = lambda: None) -> list[dict]:  # fmt: skip
    from retrieval.service import retrieve
    from schemas import RetrieveRequest

    rows = []
    cfg = clients.settings.retrieval
    for q in questions:
        req = RetrieveRequest(
            chat_id=q["chat_id"], query=q["question"], k=10, mode=mode, token_budget=8000, kinds=kinds
        )
        t0 = time.perf_counter()
        resp = await retrieve(clients.store, clients.embedder, req, candidates=cfg.candidates, rrf_k=cfg.rrf_k)
        latency = (time.perf_counter() - t0) * 1000
        ranked = [it.source_message_ids for it in resp.items]
        rows.append(
            score_question(ranked, q["evidence"])
            | {"tokens": resp.context_tokens, "latency_ms": latency, "category": q["category"]}
        )
        tick()
    return rows


class _QueryVectors:
    """The bench's embedder for the routed systems: query vectors cached across systems (ablations re-ask
    the same queries; document vectors are cached by the inner embedder as usual)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.cache: dict[str, object] = {}

    async def embed(self, texts: list[str], *, is_query: bool = False):
        import numpy as np

        if not is_query:
            return await self.inner.embed(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, await self.inner.embed(missing, is_query=True), strict=True))
        return np.stack([self.cache[t] for t in texts])


class _SharedSearches:
    """The bench's store for the routed systems: identical searches run once across systems."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.cache: dict[str, list] = {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    async def search(self, query):
        key = query.model_dump_json()
        if key not in self.cache:
            self.cache[key] = await self.inner.search(query)
        return self.cache[key]


async def _evaluate_routed(
    clients, questions: list[dict], cfg, shared, *, use_oracle: bool = False, k: int = 10, budget: int = 8000,
    tick: Callable[[], None] = lambda: None,
) -> list[dict]:
    from retrieval.router.classifier import oracle
    from retrieval.router.pipeline import retrieve_routed
    from schemas import RetrieveRequest

    store, embedder, now = shared
    rows = []
    for q in questions:
        req = RetrieveRequest(chat_id=q["chat_id"], query=q["question"], k=k, mode="routed", token_budget=budget,
                              now=now[q["chat_id"]])  # fmt: skip
        t0 = time.perf_counter()
        resp = await retrieve_routed(store, embedder, req, cfg=cfg, llm=clients.llm, graph=clients.graph,
                                     classification=oracle(ORACLE_TYPE[q["category"]]) if use_oracle else None)  # fmt: skip
        latency = (time.perf_counter() - t0) * 1000
        verdict = next((t.detail for t in resp.trace if t.step == "abstain"), {})
        ranked = [it.source_message_ids for it in resp.items]
        rows.append(score_question(ranked, q["evidence"]) | {
            "turn_recall_all@budget": recall(ranked, q["evidence"], len(ranked)), "items": len(ranked),
            "tokens": resp.context_tokens, "latency_ms": latency, "category": q["category"], "chat_id": q["chat_id"],
            "predicted": resp.query_type, "abstained": resp.no_relevant_memory and bool(resp.abstention_reason),
            "abstain_score": float(verdict.get("score", -1.0)), "abstain_features": verdict.get("features", {}),
            "abstain_probability": verdict.get("probability"), "abstain_decided_by": verdict.get("decided_by")})  # fmt: skip
        tick()
    return rows


async def _routed_systems(clients, questions: list[dict], console, folds: dict | None,
                          steps: QuestionProgress) -> tuple[dict, dict]:  # fmt: skip
    """routed, oracle-routed and routed-without-<strategy>, sharing query vectors and searches; with ``folds``
    (conversation -> the router layer fitted without its questions) also routed-heldout-router."""
    from memstream.clients import served_router
    from retrieval.router.recipes import RouterConfig

    now = {}
    for chat in {q["chat_id"] for q in questions}:
        msgs = await clients.store.list_messages(chat)
        now[chat] = msgs[-1].ts + timedelta(days=1) if msgs else datetime.now(UTC)
    shared = (
        _SharedSearches(clients.store),
        _QueryVectors(clients.embedder) if clients.embedder else None,
        now,
    )
    base = served_router(clients.settings.retrieval) or RouterConfig()  # as served
    steps.passes -= not folds  # no held-out pass without the fold models
    variants = {"routed": (base, False), "oracle-routed": (base, True)}
    variants |= {f"routed-without-{s}": (base.without(s), False) for s in STRATEGIES}
    systems, rows_of = {}, {}
    for name, (cfg, use_oracle) in variants.items():
        rows = await _evaluate_routed(clients, questions, cfg, shared, use_oracle=use_oracle, tick=steps.step(name))
        systems[name] = summarise(rows)
        rows_of[name] = rows
        _print(console, name, systems[name])
    if folds:
        systems["routed-heldout-router"], rows_of["routed-heldout-router"] = await _heldout(
            clients, questions, base, shared, folds, steps.step("routed-heldout-router"))
        _print(console, "routed-heldout-router", systems["routed-heldout-router"])
    rows = await _evaluate_routed(clients, questions, base, shared, k=BUDGET_K, budget=BUDGET_TOKENS,
                                  tick=steps.step(f"routed @{BUDGET_TOKENS} tokens"))
    systems["routed"] = with_budget(systems["routed"], rows)
    if console:
        o = systems["routed"]["overall"]
        console.print(f"{'routed @' + str(BUDGET_TOKENS) + ' tokens':36} R_all@budget={o['turn_recall_all@budget']:.3f} "
                      f"(1={systems['routed']['by_category']['1']['turn_recall_all@budget']:.3f}) items="
                      f"{o['budget_items_mean']:.1f} tokens={o['budget_context_tokens_mean']:.0f}")  # fmt: skip
    return systems, rows_of


async def _heldout(clients, questions: list[dict], base, shared, folds: dict,
                   tick: Callable[[], None]) -> tuple[dict, list[dict]]:  # fmt: skip
    """The routed system with each conversation's questions classified by the layer fitted without them."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="memstream-router-folds-") as tmp:
        for chat, model in sorted(folds.items()):
            path = Path(tmp) / f"{chat}.json"
            path.write_text(model.model_dump_json(), encoding="utf-8")
            cfg = base.model_copy(update={"classifier": base.classifier.model_copy(update={"model": str(path)})})
            rows += await _evaluate_routed(clients, [q for q in questions if q["chat_id"] == chat], cfg, shared,
                                           tick=tick)
    return summarise(rows) | {"classifier_accuracy": classifier_metrics(rows)["accuracy"]}, rows


def classifier_report(rows: list[dict], cv: dict) -> dict:
    """The routed run's classification (the packaged layer, fitted on the dev file: in-sample there) next to
    the layer's nested leave-one-conversation-out accuracy (refitted without each conversation's questions)."""
    shipped = classifier_metrics(rows)
    cv = {k: v for k, v in cv.items() if k not in ("model", "fold_models")}
    return shipped | {"accuracy_in_sample": shipped["accuracy"], "accuracy_cv": cv.get("accuracy_cv"), "cv": cv}


def _print(console, name: str, summary: dict) -> None:
    if console:
        o, c = summary["overall"], summary["by_category"]
        console.print(f"{name:36} R_all@10={o['turn_recall_all@10']:.3f} (1={c['1']['turn_recall_all@10']:.3f} "
                      f"2={c['2']['turn_recall_all@10']:.3f} 4={c['4']['turn_recall_all@10']:.3f}) "
                      f"R_all@5={o['turn_recall_all@5']:.3f} tokens={o['context_tokens_mean']:.0f} "
                      f"p95={o['latency_ms_p95']:.1f}ms")  # fmt: skip


def summarise(rows: list[dict]) -> dict:
    by_cat = {c: aggregate([r for r in rows if r["category"] == c]) for c in CATEGORIES}
    overall = aggregate([r for r in rows if r["category"] in ("1", "2", "3", "4")])
    return {"overall": overall, "by_category": by_cat}


async def run_locomo(
    data: Path, out_dir: Path, *, embedder: str = "minilm", limit: int | None = None, console=None
) -> dict:
    from backends.embed.embedder import build_embedder

    out_dir.mkdir(parents=True, exist_ok=True)
    convs = json.loads(Path(data).read_text(encoding="utf-8"))
    convs = convs if isinstance(convs, list) else [convs]
    convs = convs[:limit] if limit else convs
    questions = load_questions(convs)
    emb = build_embedder(embedder, None, 64)  # one in-memory cache: the add-only run re-uses the vectors
    with tempfile.TemporaryDirectory(prefix="memstream-locomo-") as tmp:
        src = Path(tmp) / "input.json"
        src.write_text(json.dumps(convs))
        stores = {}
        # every decision stays in the log: consolidation_stats reads the run's decision mix back from it
        main_settings = Settings(data_dir=Path(tmp) / "main", embedder=embedder, log_keep_derived=KEEP_ALL)
        stores["main"], report, secs = await _ingest(main_settings, src, emb, console)
        consolidation = await consolidation_stats(stores["main"], report.read, report.stats.llm_calls)
        add_settings = main_settings.model_copy(
            update={
                "data_dir": Path(tmp) / "add-only",
                "consolidator": main_settings.consolidator.model_copy(update={"mode": "add-only"}),
            }
        )
        stores["add-only"], add_report, _ = await _ingest(add_settings, src, emb, console)
        add_stats = await consolidation_stats(stores["add-only"], add_report.read, add_report.stats.llm_calls)
        try:
            # the uniform systems, routed and oracle-routed, one without each strategy, held out, @budget
            steps = QuestionProgress(console, len(SYSTEMS) + 2 + len(STRATEGIES) + 2, len(questions))
            systems = {}
            for name, (mode, kinds, store) in SYSTEMS.items():
                rows = await _evaluate(stores[store], questions, mode, kinds, steps.step(name))
                systems[name] = summarise(rows)
                _print(console, name, systems[name])
            systems |= {alias: systems[name] for alias, name in ALIASES.items()}
            from bench.locomo_router import cross_validate

            if console:
                console.print("fitting the router layer without each conversation (leave-one-conversation-out)")
            router_cv = cross_validate(convs)
            t0 = time.perf_counter()
            routed, rows_of = await _routed_systems(stores["main"], questions, console, router_cv.get("fold_models"),
                                                    steps)  # fmt: skip
            systems |= routed
            routed_secs = time.perf_counter() - t0
        finally:
            for c in stores.values():
                await c.close()
    result = {
        "dataset": str(data),
        "conversations": len(convs),
        "questions": len(questions),
        "messages": report.read,
        "embedder": embedder,
        "ingest_seconds": round(secs, 2),
        "ingest_msgs_per_s": round(report.read / secs, 1) if secs else 0.0,
        "consolidation": consolidation,
        "add_only_consolidation": add_stats,
        "systems": systems,
        "routed_eval_seconds": round(routed_secs, 1),
        "classifier": classifier_report(rows_of["routed"], router_cv),
        "abstention": abstention_report(rows_of["routed"], rows_of["routed-without-abstention"],
                                        {str(c["sample_id"]) for c in convs[::2]}),
    }
    (out_dir / "locomo.json").write_text(json.dumps(result, indent=2))
    plot(result, out_dir / "locomo.png")
    plot_abstention(result["abstention"], out_dir / "abstention_pr.png")
    if console:
        a = result["abstention"]
        for name in ("configured", "in_sample", "cv"):
            if "f1" in a[name]:
                console.print(f"abstention {name:10} P={a[name]['precision']:.3f} R={a[name]['recall']:.3f} "
                              f"F1={a[name]['f1']:.3f}  recall_all@10 1-4 (abstained dropped) "
                              f"{a[name]['recall_all@10_1-4_if_abstained_items_dropped']:.3f}")  # fmt: skip
        console.print(f"recall_all@10 1-4 without abstention {a['recall_all@10_1-4']['no_abstention']:.3f}")
        cl = result["classifier"]
        console.print(f"classifier accuracy (1/2/4) in-sample {cl['accuracy_in_sample']:.3f}, "
                      f"leave-one-conversation-out {cl['accuracy_cv']} (without the rule features "
                      f"{cl['cv'].get('accuracy_cv_words_only')}; fitted on the bilingual set only "
                      f"{cl['cv'].get('accuracy_own_only')})")  # fmt: skip
    return result


async def _all_memories(clients) -> list:
    out = []
    for chat in await clients.store.chats():
        out.extend(await clients.store.list_memories(chat, live_only=False))
    return out


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = list(result["systems"])
    groups = ["overall", *CATEGORIES]
    labels = ["overall\n(1-4)", "1 multi-hop", "2 temporal", "3 open-dom.", "4 single-hop", "5 adversarial"]
    fig, ax = plt.subplots(figsize=(max(11, 0.9 * len(systems)), 5))
    width = 0.8 / max(1, len(systems))
    colours = plt.get_cmap("tab20")
    for i, name in enumerate(systems):
        s = result["systems"][name]
        vals = [s["overall"]["turn_recall_all@10"]] + [
            s["by_category"][c]["turn_recall_all@10"] for c in CATEGORIES
        ]
        ax.bar([g + i * width for g in range(len(groups))], vals, width, label=name, color=colours(i % 20))
    ax.set_xticks([g + width * (len(systems) - 1) / 2 for g in range(len(groups))], labels)
    ax.set_ylabel("turn recall_all@10")
    ax.set_ylim(0, 1)
    ax.set_title(f"LoCoMo retrieval ({result['conversations']} conversations, {result['questions']} questions)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["FIG_KEYS", "run_locomo"]
