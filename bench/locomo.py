"""LoCoMo retrieval benchmark through the real pipeline (ingest -> segment -> distil -> consolidate -> index).

``memstream bench locomo --data FILE --out DIR`` -> ``DIR/locomo.json`` + ``DIR/locomo.png``.
Each conversation is one chat; each question is asked in its own chat only. Items map back to turns
through their source message ids (the LoCoMo ``dia_id``s).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from bench.locomo_metrics import FIG_KEYS, aggregate, parse_evidence, score_question
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


def load_questions(data: list[dict]) -> list[dict]:
    qs = []
    for conv in data:
        for qa in conv.get("qa", []):
            ev = parse_evidence(qa.get("evidence", []))
            if not ev:
                continue
            qs.append({"chat_id": str(conv["sample_id"]), "question": str(qa["question"]),
                       "category": str(qa.get("category")), "evidence": ev})
    return qs


async def _ingest(settings: Settings, src: Path, embedder, console):
    from memstream.clients import build_clients
    from memstream.ops import ingest

    clients = await build_clients(settings, embedder=embedder)
    t0 = time.perf_counter()
    report = await ingest(clients, src, fmt="locomo")
    secs = time.perf_counter() - t0
    if console:
        console.print(f"ingested {report.read} turns in {secs:.1f}s ({settings.consolidator.mode}); "
                      f"stages {report.stats.processed}")
    return clients, report, secs


async def consolidation_stats(clients, n_msgs: int, llm_calls: int) -> dict:
    """Decision mix of the run, read back from the memory-decisions topic of the log."""
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
        **{f"{op.lower()}_share": round(ops.get(op, 0) / total, 4) for op in ("ADD", "UPDATE", "DELETE", "NOOP")},
        "llm_calls_per_1k_msgs": round(1000 * llm_calls / max(1, n_msgs), 2),
    }


async def _evaluate(clients, questions: list[dict], mode: str, kinds: list[str] | None = None) -> list[dict]:
    from retrieval.service import retrieve
    from schemas import RetrieveRequest

    rows = []
    cfg = clients.settings.retrieval
    for q in questions:
        req = RetrieveRequest(chat_id=q["chat_id"], query=q["question"], k=10, mode=mode, token_budget=8000,
                              kinds=kinds)
        t0 = time.perf_counter()
        resp = await retrieve(clients.store, clients.embedder, req, candidates=cfg.candidates, rrf_k=cfg.rrf_k)
        latency = (time.perf_counter() - t0) * 1000
        ranked = [it.source_message_ids for it in resp.items]
        rows.append(score_question(ranked, q["evidence"]) | {"tokens": resp.context_tokens, "latency_ms": latency,
                                                            "category": q["category"]})
    return rows


def summarise(rows: list[dict]) -> dict:
    by_cat = {c: aggregate([r for r in rows if r["category"] == c]) for c in CATEGORIES}
    overall = aggregate([r for r in rows if r["category"] in ("1", "2", "3", "4")])
    return {"overall": overall, "by_category": by_cat}


async def run_locomo(data: Path, out_dir: Path, *, embedder: str = "minilm", limit: int | None = None,
                     console=None) -> dict:
    from retrieval.embedder import build_embedder

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
        main_settings = Settings(data_dir=Path(tmp) / "main", embedder=embedder)
        stores["main"], report, secs = await _ingest(main_settings, src, emb, console)
        consolidation = await consolidation_stats(stores["main"], report.read, report.stats.llm_calls)
        add_settings = main_settings.model_copy(update={
            "data_dir": Path(tmp) / "add-only",
            "consolidator": main_settings.consolidator.model_copy(update={"mode": "add-only"})})
        stores["add-only"], add_report, _ = await _ingest(add_settings, src, emb, console)
        add_stats = await consolidation_stats(stores["add-only"], add_report.read, add_report.stats.llm_calls)
        try:
            systems = {}
            for name, (mode, kinds, store) in SYSTEMS.items():
                rows = await _evaluate(stores[store], questions, mode, kinds)
                systems[name] = summarise(rows)
                if console:
                    o = systems[name]["overall"]
                    console.print(f"{name:18} R_all@10={o['turn_recall_all@10']:.3f} "
                                  f"R_all@5={o['turn_recall_all@5']:.3f} tokens={o['context_tokens_mean']:.0f} "
                                  f"p95={o['latency_ms_p95']:.1f}ms")
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
    }
    (out_dir / "locomo.json").write_text(json.dumps(result, indent=2))
    plot(result, out_dir / "locomo.png")
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
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / max(1, len(systems))
    for i, name in enumerate(systems):
        s = result["systems"][name]
        vals = [s["overall"]["turn_recall_all@10"]] + [s["by_category"][c]["turn_recall_all@10"] for c in CATEGORIES]
        ax.bar([g + i * width for g in range(len(groups))], vals, width, label=name)
    ax.set_xticks([g + width * (len(systems) - 1) / 2 for g in range(len(groups))], labels)
    ax.set_ylabel("turn recall_all@10")
    ax.set_ylim(0, 1)
    ax.set_title(f"LoCoMo retrieval ({result['conversations']} conversations, {result['questions']} questions)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["FIG_KEYS", "run_locomo"]
