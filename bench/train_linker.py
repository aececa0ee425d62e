"""Fit the reply linker's weights (``agents/reply_linker_weights.json``) on annotated IRC files.

A conditional-logit ranking model: for each annotated message, a softmax over its candidates (the previous
``window`` turns and itself); the loss is the negative log of the probability mass on the gold parents, plus
L2. Half the examples are shown without vectors so one weight file serves chats with and without an
embedder. Some features read the parents already chosen for earlier messages, so the examples come from the
streaming segmenter running with a set of weights: round 1 uses ``--init`` (default: the shipped weights),
each later round the weights the previous one fitted. ``--cv`` reports leave-one-file-out link
precision/recall/F1 of the last round (the honest figure for unseen files; the parents in the held-out file
were still chosen by weights that saw it, a small optimism).

    python -m bench.train_linker --data DIR [--embedder minilm] [--rounds 2] [--init W] [--cv] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from agents.reply_linker import FEATURES, LinkerWeights, LinkMsg, Threads, candidate_matrix, default_weights
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


def link_msgs(
    f: irc.IrcFile, vectors: np.ndarray | None = None, weights: str | None = None
) -> list[tuple[irc.IrcLine, LinkMsg, LinkMsg, Threads]]:
    """The file's turns as the streaming segmenter sees them, running with the linker weights ``weights``
    (None = the shipped ones): per turn its line, what the linker reads of it before it is placed, what the
    window keeps of it afterwards (with the parent chosen for it) and the topic state it was ranked in."""
    cfg = SegmenterConfig(linker_weights=weights)
    pool = ChatPool(chat_id=f"irc-{f.name}")
    out = []
    turns = [ln for ln in f.lines if ln.kind != "system"]
    for k, ln in enumerate(turns):
        msg = irc.to_message(f, ln)
        vec = None if vectors is None else vectors[k]
        lm = link_msg(msg, features(msg, vec, pool))
        hints = threads(pool, lm)
        recent = {m.message_id for m in pool.window[-WINDOW:]}
        hints = Threads({m: t for m, t in hints.topic_of.items() if m in recent}, hints.sender_topic, hints.addressee_topics)
        pool, _ = step(pool, msg, vec, cfg)
        out.append((ln, lm, pool.window[-1], hints))
    return out


def examples(
    f: irc.IrcFile, vectors: np.ndarray | None, window: int = WINDOW, weights: str | None = None
) -> list[Example]:
    parents: dict[int, set[int]] = {}
    for a, b in f.gold_links:
        parents.setdefault(max(a, b), set()).add(min(a, b))
    msgs = link_msgs(f, vectors, weights)
    out = []
    for k, (ln, lm, _, hints) in enumerate(msgs):
        if ln.idx < f.cutoff or ln.idx not in parents:
            continue
        lo = max(0, k - window)
        win = [kept for _, _, kept, _ in msgs[lo:k]]
        cos = None if vectors is None else vectors[lo:k] @ vectors[k]
        ids = [line.idx for line, _, _, _ in msgs[lo:k]] + [ln.idx]
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


async def embed(files: list[irc.IrcFile], embedder) -> dict[str, np.ndarray | None]:
    out: dict[str, np.ndarray | None] = {}
    for f in files:
        texts = [ln.text for ln in f.lines if ln.kind != "system"]
        out[f.name] = None if embedder is None else np.asarray(await embedder.embed(texts), dtype=np.float64)
    return out


def build(files: list[irc.IrcFile], vectors: dict[str, np.ndarray | None], weights: str | None) -> dict[str, list[Example]]:
    """Examples without vectors, and with them when there are vectors, the segmenter running with ``weights``."""
    by_file: dict[str, list[Example]] = {}
    for f in files:
        exs = examples(f, None, weights=weights)
        if vectors.get(f.name) is not None:
            exs += examples(f, vectors[f.name], weights=weights)
        by_file[f.name] = exs
    return by_file


def to_weights(w: np.ndarray, files: list[irc.IrcFile], meta: dict[str, object]) -> LinkerWeights:
    return LinkerWeights(
        weights={name: round(float(v), 4) for name, v in zip(FEATURES, w, strict=True)},
        window=WINDOW,
        meta={"fitted_on": [f.name for f in files], **meta},
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.train_linker", description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--embedder", choices=["none", "minilm"], default="minilm")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=2, help="refits, each on examples the previous weights linked")
    ap.add_argument("--init", type=Path, default=None, help="weights for the first round (default: the shipped)")
    ap.add_argument("--cv", action="store_true", help="leave-one-file-out figures (last round)")
    ap.add_argument("--out", type=Path, default=None, help="write the weights here")
    args = ap.parse_args(argv)
    files = irc.read_irc_dir(args.data)
    vectors = asyncio.run(embed(files, irc.build_embedder(args.embedder)))
    report: dict[str, object] = {"files": len(files), "features": len(FEATURES)}
    current = str(args.init) if args.init else None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(max(1, args.rounds)):
            by_file = build(files, vectors, current)
            everything = [e for exs in by_file.values() for e in exs]
            w = fit(everything, args.l2)
            for variant in ("no-vector", "vector"):
                test = [e for e in everything if e.vec == (variant == "vector")]
                if test:
                    report[f"round{r + 1}_{variant}"] = score(files, predict(test, w))
            current = str(Path(tmp) / f"round{r + 1}.json")
            Path(current).write_text(to_weights(w, files, {}).model_dump_json())
            default_weights.cache_clear()
            print(json.dumps({k: v for k, v in report.items() if k.startswith(f"round{r + 1}")}), file=sys.stderr)
    if args.cv:
        for variant in ("no-vector", "vector"):
            links: dict[str, set[tuple[int, int]]] = {}
            for f in files:
                train = [e for name, exs in by_file.items() if name != f.name for e in exs]
                wf = fit(train, args.l2)
                links.update(predict([e for e in by_file[f.name] if e.vec == (variant == "vector")], wf))
            if links:
                report[f"cv_{variant}"] = score(files, links)
    print(json.dumps(report, indent=2))
    if args.out:
        init = str(args.init) if args.init else "the shipped weights"
        meta = {"l2": args.l2, "embedder": args.embedder, "rounds": args.rounds, "init": init, **report}
        args.out.write_text(to_weights(w, files, meta).model_dump_json(indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
