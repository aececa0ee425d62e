"""Fit the reply linker's weights (``agents/reply_linker_weights.json``) on annotated IRC files.

A conditional-logit ranking model: for each annotated message, a softmax over its candidates (the previous
``window`` turns and itself); the loss is the negative log of the probability mass on the gold parents, plus
L2. Half the examples are shown without vectors so one weight file serves chats with and without an
embedder. ``--cv`` reports leave-one-file-out link precision/recall/F1 (the honest figure for unseen files).

    python -m bench.train_linker --data DIR [--embedder minilm] [--cv] [--out agents/reply_linker_weights.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from agents.reply_linker import FEATURES, LinkerWeights, LinkMsg, Threads, candidate_matrix
from agents.segment_link import link_msg, threads
from agents.segment_signals import features
from agents.segmenter import ChatPool, step
from bench import irc
from memstream.settings import SegmenterConfig

WINDOW = 60


@dataclass
class Example:
    file: str
    line: int
    ids: list[int]  # candidate line numbers, the message's own last
    x: np.ndarray
    gold: np.ndarray  # bool per candidate
    vec: bool = False  # built with vectors


def link_msgs(f: irc.IrcFile) -> list[tuple[irc.IrcLine, LinkMsg, Threads]]:
    """The file's turns as the streaming segmenter sees them (same name resolution, cues and topic state;
    the segmenter runs without the linker here, so the weights do not feed on themselves)."""
    cfg = SegmenterConfig(use_linker=False)
    pool = ChatPool(chat_id=f"irc-{f.name}")
    out = []
    for ln in f.lines:
        if ln.kind == "system":
            continue
        msg = irc.to_message(f, ln)
        lm = link_msg(msg, features(msg, None, pool))
        hints = threads(pool, lm)
        recent = {m.message_id for _, m, _ in out[-WINDOW:]}
        hints = Threads({m: t for m, t in hints.topic_of.items() if m in recent}, hints.sender_topic, hints.addressee_topics)
        out.append((ln, lm, hints))
        pool, _ = step(pool, msg, None, cfg)
    return out


def examples(f: irc.IrcFile, vectors: np.ndarray | None, window: int = WINDOW) -> list[Example]:
    parents: dict[int, set[int]] = {}
    for a, b in f.gold_links:
        parents.setdefault(max(a, b), set()).add(min(a, b))
    msgs = link_msgs(f)
    out = []
    for k, (ln, lm, hints) in enumerate(msgs):
        if ln.idx < f.cutoff or ln.idx not in parents:
            continue
        lo = max(0, k - window)
        win = [m for _, m, _ in msgs[lo:k]]
        cos = None if vectors is None else vectors[lo:k] @ vectors[k]
        ids = [line.idx for line, _, _ in msgs[lo:k]] + [ln.idx]
        x = candidate_matrix(lm, win, cos, hints)
        out.append(Example(f.name, ln.idx, ids, x, np.isin(ids, list(parents[ln.idx])), vectors is not None))
    return out


def fit(train: list[Example], l2: float = 1.0) -> np.ndarray:
    usable = [e for e in train if e.gold.any()]
    x = np.vstack([e.x for e in usable])
    gold = np.concatenate([e.gold for e in usable])
    sizes = np.asarray([len(e.gold) for e in usable])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    seg = np.repeat(np.arange(len(usable)), sizes)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = x @ w
        s = s - np.maximum.reduceat(s, starts)[seg]
        e = np.exp(s)
        z = np.add.reduceat(e, starts)
        zg = np.add.reduceat(np.where(gold, e, 0.0), starts)
        total = float(np.sum(np.log(z) - np.log(np.maximum(zg, 1e-300)))) + 0.5 * l2 * float(w @ w)
        coef = e / z[seg] - np.where(gold, e / np.maximum(zg, 1e-300)[seg], 0.0)  # p - q
        return total, x.T @ coef + l2 * w

    res = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 1000})
    return res.x


def predict(examples_: list[Example], w: np.ndarray) -> dict[str, set[tuple[int, int]]]:
    links: dict[str, set[tuple[int, int]]] = {}
    for e in examples_:
        links.setdefault(e.file, set()).add((e.line, e.ids[int(np.argmax(e.x @ w))]))
    return links


def score(files: list[irc.IrcFile], links: dict[str, set[tuple[int, int]]]) -> dict[str, float]:
    """The benchmark's metrics for these links (conversations = their connected components)."""
    parent = {name: dict(pairs) for name, pairs in links.items()}
    system = irc.link_system(files, lambda f, line, _: parent.get(f.name, {}).get(line.idx, line.idx))
    return irc.score(files, system)


async def build(files: list[irc.IrcFile], embedder) -> dict[str, list[Example]]:
    by_file: dict[str, list[Example]] = {}
    for f in files:
        exs = examples(f, None)
        if embedder is not None:
            texts = [ln.text for ln, _, _ in link_msgs(f)]
            vecs = np.asarray(await embedder.embed(texts), dtype=np.float64)
            exs += examples(f, vecs)
        by_file[f.name] = exs
    return by_file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.train_linker", description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--embedder", choices=["none", "minilm"], default="minilm")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--cv", action="store_true", help="leave-one-file-out figures")
    ap.add_argument("--out", type=Path, default=None, help="write the weights here")
    args = ap.parse_args(argv)
    files = irc.read_irc_dir(args.data)
    by_file = asyncio.run(build(files, irc.build_embedder(args.embedder)))
    report: dict[str, object] = {"files": len(files), "features": len(FEATURES)}
    if args.cv:
        for variant in ("no-vector", "vector"):
            links: dict[str, set[tuple[int, int]]] = {}
            for f in files:
                train = [e for name, exs in by_file.items() if name != f.name for e in exs]
                w = fit(train, args.l2)
                test = [e for e in by_file[f.name] if e.vec == (variant == "vector")]
                links.update(predict(test, w))
            if links:
                report[f"cv_{variant}"] = score(files, links)
    w = fit([e for exs in by_file.values() for e in exs], args.l2)
    report["train"] = score(files, predict([e for exs in by_file.values() for e in exs if not e.vec], w))
    print(json.dumps(report, indent=2))
    if args.out:
        weights = LinkerWeights(
            weights={name: round(float(v), 4) for name, v in zip(FEATURES, w, strict=True)},
            window=WINDOW,
            meta={"fitted_on": [f.name for f in files], "l2": args.l2, "embedder": args.embedder, **report},
        )
        args.out.write_text(weights.model_dump_json(indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
