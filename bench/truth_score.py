"""Scores of the memory-truth benchmark (pure): one question's answer against its gold, and summaries.

The figures are those of the truth set's own scorer (``run.py`` beside the data), computed from the same
fields of a retrieval response:

- ``ev_rank``: the rank of the first item whose sources hold an evidence message; a *stale* item's sources hold
  a stale message and no evidence message;
- ``current_first`` (questions with stale ids): an evidence item in the top 5 and above every stale item of the
  top 10; ``current_first_answered`` also needs an answer (no abstention); ``current_first_marked_ok`` lets
  stale items above it pass when they are marked (``valid_to``, a "superseded"/"retracted" note, a text
  starting "previously"/"以前"/"之前");
- ``r5`` / ``r10``: an evidence message in the top k (multi-hop: every evidence entry, ``a|b`` = either);
- ``stale_above``: a stale item above the first evidence item of the top 10 (or stale and no evidence);
- ``top1_value``: the top item's speaker and text name an answer alias (an abstention is a miss);
- abstention precision/recall/F1 of ``no_relevant_memory`` (positive = an abstention question), near misses
  apart, and the share of answerable questions abstained on.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

MARK_WORDS = ("superseded", "retracted")
MARK_PREFIXES = ("previously", "以前", "之前")
TYPES = ("current_value", "who", "when", "history", "multi_hop", "abstention")
KEYS = ("current_first", "current_first_answered", "current_first_marked_ok", "r5", "r10", "stale_above",
        "stale_above_unmarked", "top1_value", "top1_value_changed", "top1_stale_value")


def norm(s: str | None) -> str:
    return unicodedata.normalize("NFKC", s or "").casefold().replace("’", "'")


def names_any(text: str, names: Iterable[str]) -> bool:
    t = norm(text)
    return any(norm(n) in t for n in names if norm(n))


def marked(item: dict[str, Any]) -> bool:
    note, text = norm(item.get("note")), norm(item.get("text")).strip()
    return item.get("valid_to") is not None or any(w in note for w in MARK_WORDS) or text.startswith(MARK_PREFIXES)


def score(q: dict[str, Any], resp: dict[str, Any]) -> dict[str, Any]:
    """One question (the truth set's schema) against one response (``RetrieveResponse`` as JSON)."""
    top10 = (resp.get("items") or [])[:10]
    abst = bool(resp.get("no_relevant_memory"))
    row: dict[str, Any] = {"qid": q["qid"], "type": q["type"], "question": q["question"], "abstained": abst,
                           "abstention_reason": resp.get("abstention_reason"), "query_type": resp.get("query_type"),
                           "near_miss": q.get("near_miss"), "cause": q.get("cause"), "n_items": len(top10)}
    entries = [set(e.split("|")) for e in q.get("evidence", [])]
    ev = set().union(*entries)
    stale = set(q.get("stale", [])) - ev
    srcs = [set(it.get("source_message_ids") or []) for it in top10]
    is_ev = [bool(s & ev) for s in srcs]
    is_st = [bool(s & stale) and not s & ev for s in srcs]
    ev_rank = next((i + 1 for i, x in enumerate(is_ev) if x), None)
    st_rank = next((i + 1 for i, x in enumerate(is_st) if x), None)
    st_unmarked = next((i + 1 for i, (x, it) in enumerate(zip(is_st, top10, strict=True)) if x and not marked(it)),
                       None)
    row.update(ev_rank=ev_rank, stale_rank=st_rank)
    if q["type"] != "abstention":
        for k in (5, 10):
            got = set().union(*srcs[:k])
            row[f"r{k}"] = all(e & got for e in entries) if q["type"] == "multi_hop" else bool(ev & got)
        if q.get("answer"):
            first = f"{top10[0].get('speaker') or ''}: {top10[0].get('text') or ''}" if top10 else ""
            row["top1_value"] = bool(not abst and top10 and names_any(first, q["answer"]))
            if stale:
                row["top1_value_changed"] = row["top1_value"]
        if stale:
            cf = ev_rank is not None and ev_rank <= 5 and (st_rank is None or ev_rank < st_rank)
            row["current_first"] = cf
            row["current_first_answered"] = cf and not abst
            row["current_first_marked_ok"] = (ev_rank is not None and ev_rank <= 5
                                              and (st_unmarked is None or ev_rank < st_unmarked))
            above = [i for i, x in enumerate(is_st) if x and (ev_rank is None or i + 1 < ev_rank)]
            row["stale_above"] = bool(above)
            row["stale_above_unmarked"] = any(not marked(top10[i]) for i in above)
        if q.get("stale_values"):
            flat = [n for v in q["stale_values"] for n in v]
            text = top10[0].get("text", "") if top10 else ""
            row["top1_stale_value"] = bool(top10 and not names_any(text, q.get("answer", []))
                                           and names_any(text, flat) and not marked(top10[0]))
    row["top"] = [{"rank": i + 1, "kind": it.get("kind"), "speaker": it.get("speaker"),
                   "text": (it.get("text") or "")[:240], "sources": (it.get("source_message_ids") or [])[:8],
                   "note": (it.get("note") or "")[:200] or None, "evidence": is_ev[i], "stale": is_st[i]}
                  for i, it in enumerate(top10[:5])]
    return row


def _share(rows: Sequence[dict], key: str) -> tuple[float | None, int]:
    sel = [r[key] for r in rows if r.get(key) is not None]
    return (round(sum(map(bool, sel)) / len(sel), 3) if sel else None), len(sel)


def abstention_prf(rows: Sequence[dict]) -> dict[str, Any]:
    tp = sum(r["type"] == "abstention" and r["abstained"] for r in rows)
    fn = sum(r["type"] == "abstention" and not r["abstained"] for r in rows)
    fp = sum(r["type"] != "abstention" and r["abstained"] for r in rows)
    if not any(r["type"] == "abstention" for r in rows):
        return {"precision": None, "recall": None, "f1": None, "tp": tp, "fp": fp, "fn": fn}
    p = tp / (tp + fp) if tp + fp else None
    rc = tp / (tp + fn) if tp + fn else None
    f1 = 2 * p * rc / (p + rc) if p and rc else (0.0 if p is not None and rc is not None else None)
    return {"precision": None if p is None else round(p, 3), "recall": None if rc is None else round(rc, 3),
            "f1": None if f1 is None else round(f1, 3), "tp": tp, "fp": fp, "fn": fn}


def summarise(rows: Sequence[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for k in KEYS:
        out[k], out[k + "_n"] = _share(rows, k)
    out["abstention"] = abstention_prf(rows)
    ab = [r for r in rows if r["type"] == "abstention"]
    out["abstention_near_miss_recall"] = _share([{"x": r["abstained"]} for r in ab if r.get("near_miss")], "x")[0]
    out["abstention_plain_recall"] = _share([{"x": r["abstained"]} for r in ab if r.get("near_miss") is False],
                                            "x")[0]
    out["answerable_abstained"] = _share([{"x": r["abstained"]} for r in rows if r["type"] != "abstention"], "x")[0]
    return out


def report(rows: Sequence[dict]) -> dict[str, Any]:
    """Summaries overall, per language, per type and per language and type (``ambiguous`` rows left out)."""
    rows = [r for r in rows if not r.get("excluded")]
    by_lang = {"all": summarise(rows)} | {lang: summarise([r for r in rows if r["lang"] == lang])
                                          for lang in ("en", "zh") if any(r["lang"] == lang for r in rows)}
    by_type = {t: summarise([r for r in rows if r["type"] == t]) for t in TYPES if any(r["type"] == t for r in rows)}
    by_lang_type = {f"{lang}/{t}": summarise(sel) for lang in ("en", "zh") for t in TYPES
                    if (sel := [r for r in rows if r["lang"] == lang and r["type"] == t])}
    return {"by_language": by_lang, "by_type": by_type, "by_language_type": by_lang_type}


HEADLINE = (("current_first", "cur 1st"), ("top1_value_changed", "top=cur"), ("stale_above", "stale>cur"),
            ("r5", "R@5"), ("r10", "R@10"), ("abst_f1", "abst F1"), ("abstention_near_miss_recall", "near-miss"),
            ("answerable_abstained", "ans abst"))


def headline(s: dict[str, Any]) -> dict[str, float | None]:
    return {key: s["abstention"]["f1"] if key == "abst_f1" else s.get(key) for key, _ in HEADLINE}
