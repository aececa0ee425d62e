"""TIAGE topic-shift benchmark (Xie et al., Findings of EMNLP 2021).

The data is ``{dialog_id: [[utterance, label], ...]}``: label ``"1"`` marks a topic shift at that turn, ``"0"``
none, and the first turn carries ``"-1"`` (not scored). Each dialogue is replayed through the segmenter as
a chat of two alternating speakers one minute apart, and a turn is predicted to shift the topic when the
segmenter puts it in a different topic than the previous turn (it opened a new one, or went back to an
older one).

``memstream`` runs the segmenter with its two-person shift model on (``dyadic_shift``: the learned model of
:mod:`agents.segment_shift`, fitted on ``anno_train.json`` by ``python -m bench.tiage_train``).
``content-threshold`` is the earlier rule: in such a chat every turn is an on-time continuation by someone
already talking, so same-user continuity, recency and the message-cue threshold adjustments are switched
off (:func:`dyadic`) and the content signals (semantic, entity) decide against ``shift_threshold``,
calibrated on a training file (``--train``, best F1 there; the defaults were calibrated that way on
``anno_train.json``). The baseline ``always-shift`` predicts a shift at every turn. Scores are percentages.

    python -m bench.tiage --data FILE --out OUT [--embedder none|minilm] [--train FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from agents.config import SegmenterConfig
from agents.seg_metrics import shift_prf
from agents.segmenter import ChatPool, step
from schemas import ChatMessage, TopicEventKind

SHIFT_THRESHOLD = {"none": 0.15, "vectors": 0.175}  # calibrated on anno_train.json (best F1)
_START = datetime(2021, 1, 1, tzinfo=UTC)

Dialogues = dict[str, list[tuple[str, str]]]


def read_tiage(path: Path) -> Dialogues:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {str(k): [(str(u), str(lab)) for u, lab in turns] for k, turns in raw.items()}


def dialog_messages(dialog_id: str, turns: list[tuple[str, str]]) -> list[ChatMessage]:
    return [
        ChatMessage(
            chat_id=f"tiage-{dialog_id}",
            message_id=f"{dialog_id}-{i}",
            sender="A" if i % 2 == 0 else "B",
            ts=_START + timedelta(minutes=i),
            text=text,
            platform="tiage",
        )
        for i, (text, _) in enumerate(turns)
    ]


def gold_labels(dialogues: Dialogues) -> list[bool]:
    return [lab == "1" for turns in dialogues.values() for _, lab in turns if lab != "-1"]


def dyadic(cfg: SegmenterConfig, threshold: float) -> SegmenterConfig:
    """``cfg`` for a two-person chat: only content decides, against ``threshold``."""
    off = ("w_user", "w_time", "threshold_question", "threshold_length", "threshold_known_sender")
    return cfg.model_copy(
        update={**dict.fromkeys(off, 0.0), "threshold": threshold, "adaptive_threshold": False}
    )


async def embed_all(dialogues: Dialogues, embedder) -> dict[str, np.ndarray] | None:
    if embedder is None:
        return None
    return {d: await embedder.embed([u for u, _ in turns]) for d, turns in dialogues.items()}


def predict(
    dialogues: Dialogues, vectors: dict[str, np.ndarray] | None, cfg: SegmenterConfig
) -> tuple[list[bool], int]:
    """Per scored turn: did it land in another topic than the previous turn? Also the number of turns."""
    shifts: list[bool] = []
    n = 0
    for dialog_id, turns in dialogues.items():
        pool, previous = ChatPool(chat_id=f"tiage-{dialog_id}"), None
        for i, (msg, (_, label)) in enumerate(zip(dialog_messages(dialog_id, turns), turns, strict=True)):
            pool, events = step(pool, msg, None if vectors is None else vectors[dialog_id][i], cfg)
            main = next(e for e in events if e.kind in (TopicEventKind.OPENED, TopicEventKind.EXTENDED))
            if label != "-1":
                shifts.append(main.topic_id != previous)
            previous = main.topic_id
            n += 1
    return shifts, n


def calibrate(dialogues: Dialogues, vectors, cfg: SegmenterConfig) -> float:
    """The shift threshold with the best F1 on a labelled set (a grid over the content-score range)."""
    gold = gold_labels(dialogues)
    grid = [round(0.025 * i, 3) for i in range(41)]
    return max(grid, key=lambda t: shift_prf(gold, predict(dialogues, vectors, dyadic(cfg, t))[0])[2])


def _scores(gold: list[bool], pred: list[bool]) -> dict[str, float]:
    p, r, f = shift_prf(gold, pred)
    return {"precision": round(p, 2), "recall": round(r, 2), "f1": round(f, 2)}


async def run_tiage(
    data: Path,
    out_dir: Path,
    embedder=None,
    cfg: SegmenterConfig | None = None,
    train: Path | None = None,
    shift_threshold: float | None = None,
) -> dict:
    """Score the segmenter on one TIAGE file; write ``tiage.json`` and ``tiage.png``."""
    cfg = cfg or SegmenterConfig()
    dialogues = read_tiage(data)
    gold = gold_labels(dialogues)
    source = "given" if shift_threshold is not None else "default"
    if shift_threshold is None and train is not None:
        tr = read_tiage(train)
        shift_threshold = calibrate(tr, await embed_all(tr, embedder), cfg)
        source = f"calibrated on {Path(train).name}"
    if shift_threshold is None:
        shift_threshold = SHIFT_THRESHOLD["none" if embedder is None else "vectors"]
    t0 = time.perf_counter()
    vectors = await embed_all(dialogues, embedder)
    t1 = time.perf_counter()
    pred, n = predict(dialogues, vectors, cfg.model_copy(update={"dyadic_shift": True}))
    t2 = time.perf_counter()
    content, _ = predict(dialogues, vectors, dyadic(cfg, shift_threshold))
    report = {
        "systems": {
            "memstream": _scores(gold, pred),
            "content-threshold": _scores(gold, content),
            "always-shift": _scores(gold, [True] * len(gold)),
        },
        "meta": {
            "dialogues": len(dialogues),
            "scored_turns": len(gold),
            "gold_shifts": sum(gold),
            "predicted_shifts": sum(pred),
            "embedder": getattr(embedder, "name", None) if embedder is not None else "none",
            "shift_threshold": shift_threshold,
            "threshold_source": source,
            "throughput": {
                "turns": n,
                "segmenter_msgs_per_s": round(n / (t2 - t1), 1) if t2 > t1 else None,
                "embed_msgs_per_s": round(n / (t1 - t0), 1) if embedder is not None and t1 > t0 else None,
            },
            "scale": "percent",
        },
    }
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tiage.json").write_text(json.dumps(report, indent=2))
    _plot(report, out_dir / "tiage.png")
    return report


def _plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ["precision", "recall", "f1"]
    fig, ax = plt.subplots(figsize=(6, 4))
    width = 0.8 / len(report["systems"])
    for i, (name, vals) in enumerate(report["systems"].items()):
        ax.bar([m + i * width for m in range(len(metrics))], [vals[m] for m in metrics], width, label=name)
    ax.set_xticks([m + 0.4 - width / 2 for m in range(len(metrics))], metrics)
    ax.set_ylim(0, 100)
    ax.set_ylabel("%")
    ax.set_title(f"TIAGE topic shift ({report['meta']['embedder']})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from bench.irc import build_embedder

    parser = argparse.ArgumentParser(prog="python -m bench.tiage", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a TIAGE json file (e.g. anno_dev.json)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embedder", choices=["none", "minilm"], default="none")
    parser.add_argument("--train", type=Path, default=None, help="calibrate the shift threshold on this file")
    args = parser.parse_args(argv)
    report = asyncio.run(run_tiage(args.data, args.out, build_embedder(args.embedder), train=args.train))
    for name, vals in report["systems"].items():
        print(f"{name:14} " + "  ".join(f"{k}={v:6.2f}" for k, v in vals.items()))
    print(json.dumps({k: report["meta"][k] for k in ("shift_threshold", "threshold_source", "throughput")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
