"""Fit the reply linker's weights (``agents/reply_linker_weights.json``) on annotated IRC files.

A conditional-logit ranking network (:mod:`bench.linker_fit`): for each annotated message, a softmax over its
candidates (the previous ``window`` turns and itself); the loss is the negative log of the probability mass
on the gold parents. ``--hidden H`` tanh units on top of the linear part (0: linear), ``--seeds`` networks
averaged. Every file is shown without vectors and, in the last round, the files with vectors (every
``--vector-every``-th, to bound the embedding cost) a second time with them, so one weight file serves chats
with and without an embedder. Rounds before the last read every ``--early-every``-th file.
Some features read the parents already chosen for earlier messages and the segmenter's topics, so the
examples come from the streaming segmenter running with a set of weights: round 1 uses ``--init`` (``zero``:
every weight 0, a uniform ranking, so nothing fitted elsewhere leaks in; default: the shipped weights), each
later round the weights the previous one fitted. The segmenter starts ``--warmup`` turns before a file's
first annotated line.

Settings are chosen on held-out data, never on the files a model was fitted on: the last round's ``--hidden``
values are compared (exact F1 + link F1, with vectors) by the IRC bench's own segmenter run on ``--dev DIR``
or, with ``--choose cv`` (the default when ``--cv K`` is given without ``--dev``), by K-fold
cross-validation by file on the training data (the linker alone, links of held-out files); both are reported
when both are asked for. ``--keep DIR`` also writes every setting's weights there. The weight file's ``meta``
records the command, the date, the git commit, a hash of the training files and these figures.

    python -m bench.train_linker --data TRAIN_DIR --dev DEV_DIR [--embedder minilm] [--embed-cache FILE]
        [--rounds 2] [--init FILE|zero] [--hidden 0 32] [--seeds 3] [--cv 3] [--choose dev|cv] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from agents.config import SegmenterConfig
from agents.reply_linker import FEATURES, LinkMsg, Threads, candidate_matrix, default_weights
from agents.segment_link import link_msg, threads
from agents.segment_signals import features
from agents.segmenter import ChatPool, step
from bench import irc
from bench.linker_fit import Params
from bench.linker_fit import fit as fit_network

WINDOW = 60
WARMUP = 100


@dataclass
class Example:
    file: str
    line: int
    ids: list[int]  # candidate line numbers, the message's own last
    x: np.ndarray  # float32, one row per candidate
    gold: np.ndarray  # bool per candidate
    vec: bool = False  # built with vectors


def turns_from(f: irc.IrcFile, warmup: int | None) -> list[irc.IrcLine]:
    """The file's turns the segmenter reads: all (``warmup`` None) or from ``warmup`` lines before the
    first annotated one."""
    start = 0 if warmup is None else f.cutoff - warmup
    return [ln for ln in f.lines if ln.kind != "system" and ln.idx >= start]


def link_msgs(
    f: irc.IrcFile, vectors: np.ndarray | None = None, weights: str | None = None, warmup: int | None = None
) -> list[tuple[irc.IrcLine, LinkMsg, LinkMsg, Threads]]:
    """The file's turns as the streaming segmenter sees them, running with the linker weights ``weights``
    (None = the shipped ones): per turn its line, what the linker reads of it before it is placed, what the
    window keeps of it afterwards (with the parent chosen for it) and the topic state it was ranked in."""
    cfg = SegmenterConfig(linker_weights=weights)
    pool = ChatPool(chat_id=f"irc-{f.name}")
    out = []
    for k, ln in enumerate(turns_from(f, warmup)):
        msg = irc.to_message(f, ln)
        vec = None if vectors is None else vectors[k]
        lm = link_msg(msg, features(msg, vec, pool))
        hints = threads(pool, lm)
        recent = {m.message_id for m in pool.window[-WINDOW:]}
        hints = Threads(
            {m: t for m, t in hints.topic_of.items() if m in recent},
            hints.sender_topic,
            hints.addressee_topics,
        )
        pool, _ = step(pool, msg, vec, cfg)
        out.append((ln, lm, pool.window[-1], hints))
    return out


def examples(
    f: irc.IrcFile,
    vectors: np.ndarray | None,
    window: int = WINDOW,
    weights: str | None = None,
    warmup: int | None = None,
) -> list[Example]:
    parents: dict[int, set[int]] = {}
    for a, b in f.gold_links:
        parents.setdefault(max(a, b), set()).add(min(a, b))
    msgs = link_msgs(f, vectors, weights, warmup)
    out = []
    for k, (ln, lm, _, hints) in enumerate(msgs):
        if ln.idx < f.cutoff or ln.idx not in parents:
            continue
        lo = max(0, k - window)
        win = [kept for _, _, kept, _ in msgs[lo:k]]
        cos = None if vectors is None else vectors[lo:k] @ vectors[k]
        ids = [line.idx for line, _, _, _ in msgs[lo:k]] + [ln.idx]
        x = candidate_matrix(lm, win, cos, hints).astype(np.float32)
        out.append(Example(f.name, ln.idx, ids, x, np.isin(ids, list(parents[ln.idx])), vectors is not None))
    return out


def fit(train: list[Example], hidden: int = 32, epochs: int = 8, wd: float = 1e-4, seeds: int = 1) -> Params:
    return fit_network(train, hidden, epochs, wd, seeds)


def predict(examples_: list[Example], params: Params) -> dict[str, set[tuple[int, int]]]:
    links: dict[str, set[tuple[int, int]]] = {}
    for e in examples_:
        links.setdefault(e.file, set()).add((e.line, e.ids[int(np.argmax(params.scores(e.x)))]))
    return links


def score(files: list[irc.IrcFile], links: dict[str, set[tuple[int, int]]]) -> dict[str, float]:
    """The benchmark's metrics for these links (conversations = their connected components), over the files
    that have links (a file without vectors has no vector examples)."""
    files = [f for f in files if f.name in links]
    parent = {name: dict(pairs) for name, pairs in links.items()}
    system = irc.link_system(files, lambda f, line, _: parent.get(f.name, {}).get(line.idx, line.idx))
    return irc.score(files, system)


async def embed(
    files: list[irc.IrcFile], embedder, warmup: int | None = None, every: int = 1
) -> dict[str, np.ndarray | None]:
    """Vectors of the turns :func:`turns_from` keeps, for every ``every``-th file (None for the others)."""
    out: dict[str, np.ndarray | None] = {}
    for k, f in enumerate(files):
        if embedder is None or k % every:
            out[f.name] = None
            continue
        texts = [ln.text for ln in turns_from(f, warmup)]
        out[f.name] = np.asarray(await embedder.embed(texts), dtype=np.float32)
    return out


def file_examples(
    f: irc.IrcFile, vectors: np.ndarray | None, weights: str | None, warmup: int | None = None
) -> list[Example]:
    """One file's examples without vectors, and again with them when it has vectors."""
    exs = examples(f, None, weights=weights, warmup=warmup)
    return exs + (examples(f, vectors, weights=weights, warmup=warmup) if vectors is not None else [])


def build(
    files: list[irc.IrcFile],
    vectors: dict[str, np.ndarray | None],
    weights: str | None,
    warmup: int | None = None,
    workers: int = 1,
) -> dict[str, list[Example]]:
    """Every file's examples, the segmenter running with ``weights`` (files spread over ``workers`` processes)."""
    args = [(f, vectors.get(f.name), weights, warmup) for f in files]
    return {f.name: exs for f, exs in zip(files, _map(file_examples, args, workers), strict=True)}


def _map(fn, args: list[tuple], workers: int) -> list:
    if workers <= 1:
        return [fn(*a) for a in args]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, *zip(*args, strict=True), chunksize=1))


def git_commit() -> str | None:
    """The checkout's commit (None outside a git work tree)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return out.stdout.strip() or None


def provenance(files: list[irc.IrcFile], data: Path, argv: list[str]) -> dict[str, object]:
    """What the weights were fitted on and how: file list hash (names and contents), command, date, commit."""
    h = hashlib.sha256()
    for f in files:
        for suffix in (".ascii.txt", ".annotation.txt"):
            path = data / f"{f.name}{suffix}"
            h.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return {
        "data": data.name
        if data.parent.name != "irc-disentanglement"
        else f"irc-disentanglement/{data.name}",
        "files_sha256": h.hexdigest(),
        "n_files": len(files),
        "command": "python -m bench.train_linker " + " ".join(argv),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": git_commit(),
    }


def write_weights(path: Path, params: Params, meta: dict[str, object] | None = None) -> str:
    path.write_text(params.to_weights(WINDOW, meta).model_dump_json(indent=2) + "\n")
    default_weights.cache_clear()
    return str(path)


def dev_scores(
    dev: list[irc.IrcFile], vectors: dict[str, np.ndarray | None], weights: str, workers: int = 1
) -> dict[str, dict]:
    """The IRC bench's memstream row on ``dev`` with these linker weights, with and without vectors."""
    cfg = SegmenterConfig(linker_weights=weights)
    out = {}
    for variant in ("no-vector", "vector"):
        if variant == "vector" and not any(v is not None for v in vectors.values()):
            continue
        vecs = [vectors.get(f.name) if variant == "vector" else None for f in dev]
        runs = _map(irc.segment_file, [(f, v, cfg) for f, v in zip(dev, vecs, strict=True)], workers)
        system = irc.Output({f.name: r[0] for f, r in zip(dev, runs, strict=True)},
                            {f.name: r[1] for f, r in zip(dev, runs, strict=True)})  # fmt: skip
        out[variant] = irc.score(dev, system)
    return out


def dev_key(scores: dict[str, dict]) -> float:
    row = scores.get("vector", scores["no-vector"])
    return row["exact_f1"] + row["link_f1"]


def cross_validate(files: list[irc.IrcFile], by_file: dict[str, list[Example]], k: int, **fit_kw) -> dict:
    """K folds by file: fitted on the other folds, links predicted for the held-out files, scored together
    (per variant: without and with vectors)."""
    links: dict[str, dict[str, set[tuple[int, int]]]] = {"no-vector": {}, "vector": {}}
    for i in range(k):
        held = {f.name for f in files[i::k]}
        params = fit([e for name, exs in by_file.items() if name not in held for e in exs], **fit_kw)
        for variant in links:
            test = [e for name in held for e in by_file.get(name, []) if e.vec == (variant == "vector")]
            links[variant].update(predict(test, params))
    return {v: score([f for f in files if f.name in ln], ln) for v, ln in links.items() if ln}


def cv_key(scores: dict[str, dict]) -> float:
    row = scores.get("vector", scores.get("no-vector", {}))
    return row.get("exact_f1", 0.0) + row.get("link_f1", 0.0)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.train_linker", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--data", type=Path, required=True, help="annotated IRC files to fit on (the train split)"
    )
    ap.add_argument(
        "--dev",
        type=Path,
        default=None,
        help="annotated IRC files to report on (and choose on, without --cv)",
    )
    ap.add_argument("--embedder", choices=["none", "minilm"], default="minilm")
    ap.add_argument("--embed-cache", type=Path, default=None, help="SQLite vector cache (e.g. under /tmp)")
    ap.add_argument("--file-every", type=int, default=1, help="fit on every N-th file only (time)")
    ap.add_argument("--vector-every", type=int, default=1, help="embed every N-th training file")
    ap.add_argument(
        "--warmup", type=int, default=None, help="turns before the first annotated line (default all)"
    )
    ap.add_argument(
        "--hidden", type=int, nargs="+", default=[32], help="tanh units; the first chains the rounds"
    )
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--wd", type=float, default=1e-4, help="weight decay")
    ap.add_argument("--seeds", type=int, default=1, help="networks averaged (an ensemble)")
    ap.add_argument(
        "--rounds", type=int, default=2, help="refits, each on examples the previous weights linked"
    )
    ap.add_argument(
        "--init", default=None, help="weights for round 1: a file, 'zero', or the shipped (default)"
    )
    ap.add_argument("--cv", type=int, default=0, help="K-fold CV figures by file (last round)")
    ap.add_argument("--choose", choices=["dev", "cv"], default=None, help="default: dev if --dev, else cv")
    ap.add_argument("--keep", type=Path, default=None, help="write every setting's weights to this folder")
    ap.add_argument("--early-every", type=int, default=1, help="rounds before the last use every N-th file")
    ap.add_argument("--workers", type=int, default=1, help="processes building examples")
    ap.add_argument("--out", type=Path, default=None, help="write the weights here")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    files = irc.read_irc_dir(args.data)[:: max(1, args.file_every)]
    dev = irc.read_irc_dir(args.dev) if args.dev else []
    embedder = irc.build_embedder(args.embedder, args.embed_cache)
    vectors: dict[str, np.ndarray | None] = {}  # embedded for the last round only
    dev_vectors: dict[str, np.ndarray | None] | None = None
    report: dict[str, object] = {"files": len(files), "features": len(FEATURES)}
    fit_kw = {"epochs": args.epochs, "wd": args.wd, "seeds": args.seeds}
    best: tuple[float, Params, str] | None = None
    choose = args.choose or ("dev" if dev or not args.cv else "cv")
    with tempfile.TemporaryDirectory() as tmp:
        current = (
            write_weights(Path(tmp) / "zero.json", Params(np.zeros(len(FEATURES))))
            if args.init == "zero"
            else args.init
        )
        for r in range(1, max(1, args.rounds) + 1):
            last = r == max(1, args.rounds)
            used = files if last else files[:: max(1, args.early_every)]
            if last:
                vectors = asyncio.run(embed(files, embedder, args.warmup, max(1, args.vector_every)))
            by_file = build(used, vectors, current, args.warmup, args.workers)
            everything = [e for exs in by_file.values() for e in exs]
            for hidden in args.hidden if last else args.hidden[:1]:
                tag = f"round{r}_h{hidden}"
                params = fit(everything, hidden, **fit_kw)
                for variant in ("no-vector", "vector"):
                    test = [e for e in everything if e.vec == (variant == "vector")]
                    if test:
                        report[f"{tag}_in-sample_{variant}"] = score(used, predict(test, params))
                key = None
                if args.cv and last:
                    report[f"{tag}_cv{args.cv}"] = cv = cross_validate(
                        used, by_file, args.cv, hidden=hidden, **fit_kw
                    )
                    key = cv_key(cv) if choose == "cv" else None
                path = write_weights(Path(tmp) / f"{tag}.json", params)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    write_weights(
                        args.keep / f"{tag}.json", params, {**provenance(files, args.data, argv), "tag": tag}
                    )
                if dev:
                    if dev_vectors is None:
                        dev_vectors = asyncio.run(embed(dev, embedder))
                    report[f"{tag}_dev"] = scores = dev_scores(dev, dev_vectors, path, args.workers)
                    key = dev_key(scores) if choose == "dev" else key
                if last and (best is None or (key or 0.0) > best[0]):
                    best = (key or 0.0, params, tag)
                if hidden == args.hidden[0]:
                    current = write_weights(Path(tmp) / f"round{r}_chain.json", params)
                print(json.dumps({k: v for k, v in report.items() if tag in k}), file=sys.stderr, flush=True)
        report["chosen"] = best[2] if best else None
    print(json.dumps(report, indent=2))
    if args.out and best is not None:
        meta = {**provenance(files, args.data, argv), "embedder": args.embedder, "hidden": args.hidden,
                "epochs": args.epochs, "wd": args.wd, "seeds": args.seeds, "rounds": args.rounds,
                "init": _init_note(args.init), "warmup": args.warmup, "vector_every": args.vector_every,
                "file_every": args.file_every, "early_every": args.early_every,
                "chosen_by": f"cv{args.cv} on train" if choose == "cv" else "dev" if dev else "the only setting",
                "dev": args.dev.name if args.dev else None, **report}  # fmt: skip
        write_weights(args.out, best[1], meta)
    return 0


def _init_note(init: str | None) -> object:
    """What round 1 ran with: 'zero', or the command and data of the weight file it read (its provenance)."""
    if init == "zero":
        return "zero"
    lw = default_weights(init)
    return {
        "file": init or "the shipped weights",
        **{k: lw.meta.get(k) for k in ("command", "data", "files_sha256", "commit", "init")},
    }


if __name__ == "__main__":
    sys.exit(main())
