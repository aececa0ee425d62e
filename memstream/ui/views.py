"""What the inspector shows, as pure functions of the schemas' models (no I/O, no HTML).

- :func:`timeline`: a chat's messages in time order, each with its topic in every segmentation version
  (version 1 = the stream), where a version moved it, and the topics with their states;
- :func:`memory_chains`: memory records grouped into version chains (``superseded_by`` links);
- :func:`list_ranks`: where each retrieved item stood in the BM25 and the kNN lists;
- :func:`graph_layout`: the graph around one entity, placed on rings for an SVG.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from schemas import ChatMessage, MemoryRecord, RetrievedItem, TopicSummary
from schemas.graph import EntityNode, RelationEdge
from schemas.segmentation import SegmentationVersion

CURRENT = ("active", "closed")  # the states of a chat's current view (agents/resegment.CURRENT_STATES)


# ---- timeline ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicView:
    topic: TopicSummary
    colour: int  # index into the palette: one colour per topic, kept across versions
    title: str | None = None  # the topic's title record, when distilled

    @property
    def label(self) -> str:
        return self.topic.title or self.title or f"topic {self.topic.topic_id[-6:]}"


@dataclass(frozen=True)
class Row:
    message: ChatMessage
    cells: list[str | None]  # the message's topic in each version column (None: in no topic there)
    moved: list[bool]  # this version put it in another topic than the version it was built on


@dataclass(frozen=True)
class Timeline:
    versions: list[SegmentationVersion]
    topics: dict[str, TopicView]
    rows: list[Row]
    current: dict[str, str] = field(default_factory=dict)  # message id -> its topic in the current view


def _main_topic(topics: Iterable[TopicSummary]) -> dict[str, str]:
    """Message id -> the earliest-started of the given topics that lists it."""
    out: dict[str, str] = {}
    for t in sorted(topics, key=lambda t: (t.started_at, t.topic_id)):
        for mid in t.message_ids:
            out.setdefault(mid, t.topic_id)
    return out


def _in_force(earlier: SegmentationVersion, made: SegmentationVersion) -> bool:
    if earlier.status == "active":
        return True
    return earlier.rolled_back_at is not None and earlier.rolled_back_at > made.created_at


def version_columns(topics: list[TopicSummary], versions: list[SegmentationVersion]) -> list[dict[str, str]]:
    """Each version's assignment of messages to topics. Version 1: the streaming topics. Version N: the
    topics N made, and for the other messages the assignment of the version it was built on (the newest
    earlier one in force when N was made, else version 1), minus the topics N superseded."""
    made: dict[int, list[TopicSummary]] = {}
    for t in topics:
        made.setdefault(t.segmentation_version, []).append(t)
    columns: list[dict[str, str]] = []
    for i, v in enumerate(versions):
        own = _main_topic(made.get(v.version, []))
        if i == 0:
            columns.append(own)
            continue
        base = next((columns[j] for j in range(i - 1, 0, -1) if _in_force(versions[j], v)), columns[0])
        dropped = set(v.superseded_topic_ids)
        kept = {m: t for m, t in base.items() if t not in dropped}
        columns.append({**kept, **own})
    return columns


def topic_titles(records: Iterable[MemoryRecord]) -> dict[str, str]:
    """Topic id -> the text of its title record (the live version when there is one)."""
    out: dict[str, str] = {}
    for r in sorted(records, key=lambda r: (r.valid_to is None, r.valid_from)):  # live ones last: they win
        if r.kind == "title" and r.topic_id:
            out[r.topic_id] = r.text
    return out


def pairing(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """The best one-to-one pairing of ``after``'s topics with ``before``'s (most shared messages first), as in
    the segmentation diff: a message is *moved* when its new topic is not paired with its old one."""
    overlap: dict[tuple[str, str], int] = {}
    for mid, new in after.items():
        if mid in before:
            overlap[(new, before[mid])] = overlap.get((new, before[mid]), 0) + 1
    out: dict[str, str] = {}
    taken: set[str] = set()
    for (new, old), _ in sorted(overlap.items(), key=lambda kv: (-kv[1], kv[0])):
        if new not in out and old not in taken:
            out[new] = old
            taken.add(old)
    return out


def timeline(messages: list[ChatMessage], topics: list[TopicSummary], versions: list[SegmentationVersion],
             titles: dict[str, str] | None = None) -> Timeline:  # fmt: skip
    versions = sorted(versions, key=lambda v: v.version)
    ordered = sorted(topics, key=lambda t: (t.started_at, t.topic_id))
    views = {t.topic_id: TopicView(t, i, (titles or {}).get(t.topic_id)) for i, t in enumerate(ordered)}
    columns = version_columns(ordered, versions) if versions else [_main_topic(ordered)]
    current = _main_topic(t for t in ordered if t.state in CURRENT)
    pairs = [{}] + [pairing(columns[i - 1], columns[i]) for i in range(1, len(columns))]
    rows = []
    for m in sorted(messages, key=lambda m: (m.ts, m.message_id)):
        cells = [col.get(m.message_id) for col in columns]
        moved = [i > 0 and cells[i] is not None and pairs[i].get(cells[i]) != cells[i - 1] for i in range(len(cells))]
        rows.append(Row(m, cells, moved))
    return Timeline(versions=versions, topics=views, rows=rows, current=current)


# ---- memory records and their versions -----------------------------------------------------------------


@dataclass(frozen=True)
class Chain:
    """One memory through its versions, newest first. ``live``: its newest version is valid now."""

    versions: list[MemoryRecord]

    @property
    def head(self) -> MemoryRecord:
        return self.versions[0]

    @property
    def live(self) -> bool:
        return self.head.valid_to is None


KIND_ORDER = ("fact", "decision", "task", "qa", "summary", "title")


def memory_chains(records: list[MemoryRecord]) -> list[Chain]:
    """Follow ``superseded_by`` from every record nobody supersedes; a record superseded by one that is not
    in the list (deleted) ends its chain. Chains in order of kind, then of their first version's time."""
    by_id = {r.memory_id: r for r in records}
    successors = {r.superseded_by for r in records if r.superseded_by in by_id}
    chains = []
    for root in (r for r in records if r.memory_id not in successors):
        seq, seen = [root], {root.memory_id}
        while seq[-1].superseded_by in by_id and seq[-1].superseded_by not in seen:
            nxt = by_id[seq[-1].superseded_by]
            seq.append(nxt)
            seen.add(nxt.memory_id)
        chains.append(Chain(list(reversed(seq))))

    def order(c: Chain) -> tuple:
        kind = str(c.head.kind)
        return (KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), c.versions[-1].valid_from)

    return sorted(chains, key=order)


# ---- retrieval: per-list ranks -------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRanks:
    rank: int  # 1-based, in the answer
    item: RetrievedItem
    lists: dict[str, int | None]  # list name -> 1-based rank there (None: not in it)


def list_ranks(items: Sequence[RetrievedItem], lists: dict[str, Sequence[str]]) -> list[ItemRanks]:
    """Where each answered item stood in each single-signal list (doc ids, best first)."""
    where = {name: {doc_id: i + 1 for i, doc_id in enumerate(ids)} for name, ids in lists.items()}
    return [ItemRanks(i + 1, it, {name: pos.get(it.item_id) for name, pos in where.items()})
            for i, it in enumerate(items)]  # fmt: skip


def strategy_mix(trace_detail: dict) -> list[tuple[str, float]]:
    """The (strategy, weight) pairs of the routed trace's ``classify`` step."""
    return [(str(s[0]), float(s[1])) for s in trace_detail.get("strategies") or [] if len(s) == 2]


# ---- graph around an entity ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Placed:
    node: EntityNode
    x: float
    y: float


@dataclass(frozen=True)
class GraphView:
    centre: EntityNode
    nodes: list[Placed]
    edges: list[RelationEdge]
    width: int
    height: int

    def at(self, entity_id: str) -> Placed | None:
        return next((p for p in self.nodes if p.node.entity_id == entity_id), None)


def busiest(entities: list[EntityNode], edges: list[RelationEdge]) -> EntityNode | None:
    """The entity with the most relations (live ones first), the natural place to start."""
    if not entities:
        return None
    degree: dict[str, float] = {}
    for e in edges:
        for x in (e.subject_id, e.object_id):
            degree[x] = degree.get(x, 0) + (1.0 if e.valid_to is None else 0.5)
    return max(entities, key=lambda n: (degree.get(n.entity_id, 0), n.type == "person", -n.first_seen.timestamp()))


def graph_layout(centre: EntityNode, nodes: list[EntityNode], edges: list[RelationEdge],
                 width: int = 640, height: int = 420) -> GraphView:  # fmt: skip
    """The centre in the middle and its neighbours on one ring (two when crowded), in edge order."""
    cx, cy = width / 2, height / 2
    others = [n for n in nodes if n.entity_id != centre.entity_id]
    first_edge = {}
    for i, e in enumerate(edges):
        for x in (e.subject_id, e.object_id):
            first_edge.setdefault(x, i)
    others.sort(key=lambda n: (first_edge.get(n.entity_id, len(edges)), n.name))
    placed = [Placed(centre, cx, cy)]
    rings = [others] if len(others) <= 10 else [others[::2], others[1::2]]
    for r_i, ring in enumerate(rings):
        rx, ry = (width / 2 - 90) * (1 - 0.35 * r_i), (height / 2 - 40) * (1 - 0.35 * r_i)
        for i, n in enumerate(ring):
            a = 2 * math.pi * i / max(1, len(ring)) - math.pi / 2 + 0.3 * r_i
            placed.append(Placed(n, round(cx + rx * math.cos(a), 1), round(cy + ry * math.sin(a), 1)))
    return GraphView(centre=centre, nodes=placed, edges=edges, width=width, height=height)
