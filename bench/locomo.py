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

SYSTEMS = {"memstream-hybrid": "hybrid", "bm25-only": "bm25", "embedding-only": "embedding"}
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


async def _ingest(settings: Settings, src: Path, embedder, console) -> tuple[object, int, float]:
    from memstream.clients import build_clients
    from memstream.ops import ingest

    clients = await build_clients(settings, embedder=embedder)
    t0 = time.perf_counter()
    report = await ingest(clients, src, fmt="locomo")
    secs = time.perf_counter() - t0
    if console:
        console.print(f"ingested {report.read} turns in {secs:.1f}s; stages {report.stats.processed}")
    return clients, report.read, secs


async def _evaluate(clients, questions: list[dict], mode: str) -> list[dict]:
    from retrieval.service import retrieve
    from schemas import RetrieveRequest

    rows = []
    cfg = clients.settings.retrieval
    for q in questions:
        req = RetrieveRequest(chat_id=q["chat_id"], query=q["question"], k=10, mode=mode, token_budget=8000)
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
    emb = build_embedder(embedder, None, 64)
    with tempfile.TemporaryDirectory(prefix="memstream-locomo-") as tmp:
        src = Path(tmp) / "input.json"
        src.write_text(json.dumps(convs))
        settings = Settings(data_dir=Path(tmp) / "data", embedder=embedder)
        clients, n_msgs, secs = await _ingest(settings, src, emb, console)
        try:
            systems = {}
            for name, mode in SYSTEMS.items():
                rows = await _evaluate(clients, questions, mode)
                systems[name] = summarise(rows)
                if console:
                    o = systems[name]["overall"]
                    console.print(f"{name:18} R_all@10={o['turn_recall_all@10']:.3f} "
                                  f"R_all@5={o['turn_recall_all@5']:.3f} tokens={o['context_tokens_mean']:.0f} "
                                  f"p95={o['latency_ms_p95']:.1f}ms")
            records = len(await _all_memories(clients))
        finally:
            await clients.close()
    result = {
        "dataset": str(data),
        "conversations": len(convs),
        "questions": len(questions),
        "messages": n_msgs,
        "embedder": embedder,
        "ingest_seconds": round(secs, 2),
        "ingest_msgs_per_s": round(n_msgs / secs, 1) if secs else 0.0,
        "memory_records": records,
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
