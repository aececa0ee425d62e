"""Memory-update benchmark (issue 11: memory that stays true as the stream changes).

``memstream bench updates --out DIR`` -> ``DIR/updates.json`` + ``DIR/updates_failures.json``. For each split the
scripted chats of :mod:`bench.updates_gen` go through the real embedded pipeline (ingest -> segment -> distil ->
consolidate -> index, a fresh data dir), the deletions are performed with ``memstream.ops.delete``, then every
question is asked with routed retrieval (``k`` items, ``now`` = a day after the chat's last message).

Scoring is a substring test of the gold aliases in the items' text after :func:`bench.updates_gen.norm`. An item is
*marked* superseded when it has ``valid_to``, a note saying "superseded" or "retracted", or a text starting
with "previously"/"以前"/"之前". (A note "previously: …" is not a mark: retrieval/router/currency.py gives it to
the item that replaced an older one, i.e. to the item the pipeline holds current.) An item *states* a stale value when it names one and no current value comes after
it ("not Tuesday anymore, now Wednesday" states Wednesday).

- ``current_first``: current questions whose top item names the newest value (an abstention counts as a miss);
- ``stale_returned``: current + edit questions with an unmarked top-k item with a sentence claiming a
  superseded value (naming it, not negated, not naming the current value in the same sentence);
  ``stale_mentioned``: the looser round-1 test (no current value after the stale one anywhere in the item);
  ``stale_first``: the top item names a superseded value, not the current one, and is unmarked;
- ``deleted_returned``: questions of chats with a deletion whose items come from the deleted user (speaker,
  source message ids, or a canary in the text). Must be 0;
- ``edit_applied``: the top item names the edited value and no unmarked item states the original one;
  ``retraction_applied``: no unmarked item states the withdrawn value;
- abstention precision/recall/F1: positives = unanswerable, negatives = current/answerable/edit questions
  (deleted and retraction questions, where abstaining is right too, are left out and their abstention rate
  reported); ``answered_when_answerable``: current/answerable questions not abstained.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.updates_gen import SPLITS, Dataset, Deletion, Question, generate, norm, write_dataset

MARK_WORDS = ("superseded", "retracted")
MARK_PREFIXES = ("previously", "以前", "之前")
MAX_FAILURES = 30


def marked(item: Any) -> bool:
    note = (item.note or "").casefold()
    text = item.text.strip().casefold()
    return item.valid_to is not None or any(w in note for w in MARK_WORDS) or text.startswith(MARK_PREFIXES)


def names_any(text: str, names: list[str]) -> bool:
    t = norm(text)
    return any(norm(n) in t for n in names if norm(n))


def _last(t: str, names: list[str]) -> int:
    return max((t.rfind(norm(n)) for n in names if norm(n)), default=-1)


_NEGATED = re.compile(r"(?:not|no longer|不在|不是|不住|没在|不再|不去)\W{0,2}$", re.I)


def _negated(text: str, values: list[list[str]]) -> bool:
    """Every stale mention is negated right before it ("no longer in Paris", "不在青岛住了"): not a claim."""
    low = text.casefold()
    spots = [i for v in values for n in v if n for i in [low.find(n.casefold())] if i >= 0]
    return bool(spots) and all(_NEGATED.search(low[max(0, i - 14) : i]) for i in spots)


def mentions_stale(text: str, expect: list[str], stale: list[list[str]]) -> bool:
    """The round-1 test (kept as ``stale_mentioned``): a superseded value, not negated, with no current value
    after it anywhere in the text — so "Kenji takes the notes, Carol is swamped" counts as stale."""
    t = norm(text)
    last_stale = max((_last(t, v) for v in stale), default=-1)
    return last_stale >= 0 and _last(t, expect) < last_stale and not _negated(text, stale)


_SENTENCES = re.compile(r"(?<=[。！？；!?;])|(?<=[.])\s+|\n+")


def states_stale(text: str, expect: list[str], stale: list[list[str]]) -> bool:
    """Some sentence of the text claims a superseded value: names it, not negated, and does not name the
    current value (a sentence naming both states the change: "moved to Austin, not living in Toronto")."""
    return any(
        mentions_stale(s, expect, stale) and not (expect and names_any(s, expect))
        for s in _SENTENCES.split(text) if s and s.strip()
    )


def from_deleted(item: Any, d: Deletion) -> bool:
    ids = set(d.message_ids)
    return (item.speaker in (d.user, d.user_name) or bool(ids & set(item.source_message_ids))
            or names_any(item.text, d.canaries))


def score(q: Question, resp: Any, deletion: Deletion | None) -> dict[str, Any]:
    items, abstained = list(resp.items), bool(resp.no_relevant_memory)
    top = items[0] if items else None
    row: dict[str, Any] = {"qid": q.qid, "type": q.type, "family": q.family, "lang": q.lang, "abstained": abstained}
    if q.type in ("current", "answerable", "edit"):
        row["top_current"] = bool(not abstained and top is not None and names_any(top.text, q.expect))
    if q.type in ("current", "edit", "retraction"):
        row["stale_returned"] = any(not marked(it) and states_stale(it.text, q.expect, q.stale) for it in items)
        row["stale_mentioned"] = any(not marked(it) and mentions_stale(it.text, q.expect, q.stale) for it in items)
        row["stale_first"] = bool(top is not None and not marked(top) and not names_any(top.text, q.expect)
                                  and any(names_any(top.text, v) for v in q.stale))
    if deletion is not None:
        row["leak"] = any(from_deleted(it, deletion) for it in items)
    row["top"] = [{"kind": str(it.kind), "speaker": it.speaker, "text": it.text[:300],
                   "valid_to": it.valid_to.isoformat() if it.valid_to else None, "note": it.note,
                   "sources": it.source_message_ids[:6]} for it in items[:3]]
    row["items_with_current"] = sum(names_any(it.text, q.expect) for it in items) if q.expect else 0
    return row


def _share(rows: list[dict], key: str, pred=None) -> float | None:
    sel = [r for r in rows if (pred is None or pred(r)) and key in r]
    return round(sum(bool(r[key]) for r in sel) / len(sel), 4) if sel else None


def _prf(rows: list[dict]) -> dict[str, Any]:
    sel = [r for r in rows if r["type"] in ("unanswerable", "current", "answerable", "edit")]
    tp = sum(r["abstained"] and r["type"] == "unanswerable" for r in sel)
    fp = sum(r["abstained"] and r["type"] != "unanswerable" for r in sel)
    fn = sum(not r["abstained"] and r["type"] == "unanswerable" for r in sel)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(2 * p * r / (p + r) if p + r else 0.0, 4),
            "tp": tp, "fp": fp, "fn": fn}


def summarise(rows: list[dict]) -> dict[str, Any]:
    cur = [r for r in rows if r["type"] == "current"]
    leak_rows = [r for r in rows if "leak" in r]
    by = defaultdict(list)
    for r in cur:
        by[("family", r["family"])].append(r)
        by[("lang", r["lang"])].append(r)
    return {
        "questions": dict(Counter(r["type"] for r in rows)),
        "current_first": _share(rows, "top_current", lambda r: r["type"] == "current"),
        "answerable_first": _share(rows, "top_current", lambda r: r["type"] == "answerable"),
        "stale_returned": _share(rows, "stale_returned", lambda r: r["type"] in ("current", "edit")),
        "stale_first": _share(rows, "stale_first", lambda r: r["type"] in ("current", "edit")),
        "stale_mentioned": _share(rows, "stale_mentioned", lambda r: r["type"] in ("current", "edit")),
        "deleted_returned": sum(r["leak"] for r in leak_rows),
        "deleted_returned_share": _share(leak_rows, "leak") or 0.0,
        "deleted_questions_asked": len(leak_rows),
        "edit_applied": _share([r | {"ok": r["top_current"] and not r["stale_returned"]} for r in rows
                                if r["type"] == "edit"], "ok"),
        "retraction_applied": _share([r | {"ok": not r["stale_returned"]} for r in rows
                                      if r["type"] == "retraction"], "ok"),
        "abstention": _prf(rows),
        "answered_when_answerable": _share([r | {"answered": not r["abstained"]} for r in rows
                                            if r["type"] in ("current", "answerable")], "answered"),
        "abstained_on_deleted": _share(rows, "abstained", lambda r: r["type"] == "deleted"),
        "abstained_on_retraction": _share(rows, "abstained", lambda r: r["type"] == "retraction"),
        "current_first_by_family": {k: _share(v, "top_current") for (g, k), v in sorted(by.items()) if g == "family"},
        "current_first_by_lang": {k: _share(v, "top_current") for (g, k), v in sorted(by.items()) if g == "lang"},
        "stale_returned_by_lang": {lang: _share(rows, "stale_returned", lambda r, lang=lang: r["lang"] == lang
                                                and r["type"] in ("current", "edit")) for lang in ("zh", "en")},
    }


def failure_kinds(r: dict) -> list[str]:
    """What went wrong with one question, each with a pattern that says how."""
    out = []
    top = r["top"][0] if r["top"] else None
    if r["type"] in ("current", "answerable", "edit") and not r["top_current"]:
        if r["abstained"]:
            how = "abstained"
        elif r.get("stale_first"):
            how = "top item is a superseded value"
        elif r["items_with_current"]:
            how = f"current value ranked below a {top['kind'] if top else '?'} without it"
        else:
            how = "current value not in the items"
        out.append(f"{r['type']}: {how}")
    if r.get("stale_returned") and r["type"] != "retraction":
        out.append(f"{r['type']}: unmarked stale value in the items")
    if r["type"] == "retraction" and r["stale_returned"]:
        out.append("retraction: withdrawn value returned")
    if r.get("leak"):
        out.append(f"deleted user's content returned ({r['type']} question)")
    if r["type"] == "unanswerable" and not r["abstained"]:
        out.append(f"unanswerable ({r['family']}): not abstained")
    return out


def failures(rows: list[dict], questions: dict[str, Question]) -> dict[str, Any]:
    kinds = {r["qid"]: failure_kinds(r) for r in rows}
    patterns = Counter(k for ks in kinds.values() for k in ks)
    by_pattern: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        for k in kinds[r["qid"]]:
            by_pattern[k].append(r)
    examples: list[dict] = []
    seen: set[str] = set()
    while len(examples) < MAX_FAILURES and any(by_pattern.values()):  # round-robin over the patterns
        for k, _ in patterns.most_common():
            if by_pattern[k] and len(examples) < MAX_FAILURES:
                r = by_pattern[k].pop(0)
                if r["qid"] in seen:
                    continue
                seen.add(r["qid"])
                q = questions[r["qid"]]
                examples.append({"failure": kinds[r["qid"]], "qid": q.qid, "question": q.question, "type": q.type,
                                 "family": q.family, "expect": q.expect, "stale": q.stale, "evidence": q.evidence,
                                 "abstained": r["abstained"], "top3": r["top"]})
    return {"patterns": dict(patterns.most_common()), "examples": examples}


def _chat_now(ds: Dataset) -> dict[str, datetime]:
    last: dict[str, datetime] = {}
    for m in ds.messages:
        t = datetime.fromisoformat(m.get("metadata", {}).get("edited_at") or m["ts"])
        last[m["chat_id"]] = max(t, last.get(m["chat_id"], t))
    return {c: t + timedelta(days=1) for c, t in last.items()}


async def _run_split(split: str, chats: int, embedder: str, emb: Any, k: int, root: Path, show: bool,
                     seed: int | None = None):
    from tqdm import tqdm

    from memstream.clients import build_clients, retrieve_as_served
    from memstream.ops import delete, ingest
    from memstream.settings import Settings
    from schemas import RetrieveRequest

    ds = generate(split, chats, seed)
    src = root / f"updates-{split}.jsonl"
    write_dataset(ds, src)
    clients = await build_clients(Settings(data_dir=root / f"data-{split}", embedder=embedder), embedder=emb)
    chat_ids = {m["chat_id"] for m in ds.messages}  # + one flush record per chat
    bar = tqdm(desc=f"{split} ingest", unit="msg", total=len(ds.messages) + len(chat_ids), disable=not show)

    def progress(stage: str, n: int, lag: int) -> None:
        if stage == "segmenter":
            bar.update(n)

    try:
        t0 = time.perf_counter()
        report = await ingest(clients, src, fmt="jsonl", progress=progress)
        bar.close()
        ingest_secs = time.perf_counter() - t0
        deleted, t_del = {d.chat_id: d for d in ds.deletions}, time.perf_counter()
        for d in ds.deletions:
            await delete(clients, d.chat_id, d.user)
        delete_secs = time.perf_counter() - t_del
        now, rows, t1 = _chat_now(ds), [], time.perf_counter()
        for q in tqdm(ds.questions, desc=f"{split} questions", unit="q", disable=not show):
            req = RetrieveRequest(chat_id=q.chat_id, query=q.question, k=k, mode="routed", now=now[q.chat_id])
            resp = await retrieve_as_served(clients, req)  # as served: the settings' retrieval (supersession)
            rows.append(score(q, resp, deleted.get(q.chat_id)))
        eval_secs = time.perf_counter() - t1
    finally:
        bar.close()
        await clients.close()
    block = {"seed": ds.seed, "chats": chats, "messages": len(ds.messages), "questions_total": len(ds.questions),
             "deletions": len(ds.deletions), "ingest": {"read": report.read, "new": report.new,
                                                        "rejected": report.rejected},
             "ingest_seconds": round(ingest_secs, 1), "delete_seconds": round(delete_secs, 1),
             "eval_seconds": round(eval_secs, 1)} | summarise(rows)
    return block, failures(rows, {q.qid: q for q in ds.questions})


async def run_updates_async(out_dir: Path, *, split: str = "both", chats: int = 200, embedder: str | None = None,
                            k: int = 5, data_dir: Path | None = None, show: bool = True,
                            seed: int | None = None) -> dict[str, Any]:
    from backends.embed.embedder import build_embedder
    from memstream.settings import Settings

    splits = list(SPLITS) if split == "both" else [split]
    if any(s not in SPLITS for s in splits):
        raise ValueError(f"unknown split {split!r} (tune, test or both)")
    embedder = embedder or Settings().embedder
    emb = build_embedder(embedder, None, 64)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    root = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="memstream-updates-"))
    if data_dir and any(root.glob("data-*")):
        raise ValueError(f"{root} already holds a benchmark data dir; pick an empty folder")
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result: dict[str, Any] = {}
    fails: dict[str, Any] = {}
    try:
        for s in splits:
            result[s], fails[s] = await _run_split(s, chats, embedder, emb, k, root, show, seed)
    finally:
        if not data_dir:
            shutil.rmtree(root, ignore_errors=True)
    result["config"] = {"embedder": embedder, "k": k, "chats": chats, "splits": splits,
                        "seeds": {s: SPLITS[s][0] if seed is None else seed for s in splits}, "mode": "routed",
                        "elapsed_seconds": round(time.perf_counter() - t0, 1)}
    (out_dir / "updates.json").write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8")
    (out_dir / "updates_failures.json").write_text(json.dumps(fails, ensure_ascii=False, indent=1), encoding="utf-8")
    return result


def run_updates(out_dir: Path, *, split: str = "both", chats: int = 200, embedder: str | None = None, k: int = 5,
                data_dir: Path | None = None, show: bool = True, seed: int | None = None) -> dict[str, Any]:
    """Run the benchmark (see the module docstring); writes ``updates.json`` and ``updates_failures.json``."""
    return asyncio.run(run_updates_async(out_dir, split=split, chats=chats, embedder=embedder, k=k,
                                         data_dir=data_dir, show=show, seed=seed))


ROWS = [("current_first", "current first ↑"), ("stale_returned", "stale returned ↓"), ("stale_first", "stale first ↓"),
        ("edit_applied", "edit applied ↑"), ("retraction_applied", "retraction applied ↑"),
        ("deleted_returned", "deleted returned (=0)"), ("answered_when_answerable", "answered when answerable ↑")]


def print_table(result: dict[str, Any], console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    splits = [s for s in result["config"]["splits"] if s in result]
    cfg = result["config"]
    table = Table(title=f"memory updates · embedder {cfg['embedder']} · k={cfg['k']} · {cfg['chats']} chats/split "
                        f"· {cfg['elapsed_seconds']:.0f}s")
    table.add_column("metric")
    for s in splits:
        table.add_column(s, justify="right")

    def fmt(v: Any) -> str:
        return "–" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))

    for key, label in ROWS:
        table.add_row(label, *(fmt(result[s][key]) for s in splits))
    for key in ("precision", "recall", "f1"):
        table.add_row(f"abstention {key} ↑", *(fmt(result[s]["abstention"][key]) for s in splits))
    for lang in ("zh", "en"):
        table.add_row(f"current first ({lang})", *(fmt(result[s]["current_first_by_lang"].get(lang)) for s in splits))
    (console or Console()).print(table)
