"""Compare two segmentations of the same chat messages: what stayed, split, merged, moved (pure).

Topics are compared as sets of message ids. Each message's *main* topic is the earliest-started topic that
lists it (soft members belong to several topics); old and new topics linked by a message they share as main
topic form one group, classified as unchanged / modified / split / merge / reshaped / new / dropped (see
:class:`schemas.segmentation.TopicChange`). Agreement is the one-to-one overlap and VI of the benchmark
metrics (:mod:`agents.seg_metrics`) over the messages present in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agents.seg_metrics import components, variation_of_information
from schemas.segmentation import ChangeKind, SegmentationDiff, TopicChange

__all__ = ["TopicSet", "diff_segmentations", "main_topics"]


@dataclass(frozen=True)
class TopicSet:
    """A topic as its id and member message ids (soft members included)."""

    topic_id: str
    message_ids: tuple[str, ...]


def main_topics(topics: Sequence[TopicSet]) -> dict[str, str]:
    """Message id -> main topic id; ``topics`` must be in start order (the first listing a message wins)."""
    owner: dict[str, str] = {}
    for t in topics:
        for m in t.message_ids:
            owner.setdefault(m, t.topic_id)
    return owner


def diff_segmentations(old: Sequence[TopicSet], new: Sequence[TopicSet]) -> SegmentationDiff:
    """The change from ``old`` to ``new`` (both in start order), group by group, with agreement figures.

    Topics present on both sides with the same members are ``unchanged``; the others are grouped by the
    messages they share (main topics computed among the changed topics only).
    """
    old_of, new_of = main_topics(old), main_topics(new)
    common = [m for m in new_of if m in old_of]
    unmatched = {frozenset(t.message_ids): t.topic_id for t in reversed(new)}
    changes: list[TopicChange] = []
    rest_old: list[TopicSet] = []
    for t in old:
        twin = unmatched.pop(frozenset(t.message_ids), None)
        if twin is None:
            rest_old.append(t)
        else:
            changes.append(
                TopicChange(kind="unchanged", old=[t.topic_id], new=[twin], messages=len(t.message_ids))
            )
    rest_new = [t for t in new if unmatched.get(frozenset(t.message_ids)) == t.topic_id]
    changes += _changes(rest_old, rest_new)
    counts: dict[str, int] = {}
    for c in changes:
        counts[c.kind] = counts.get(c.kind, 0) + 1
    pairs = [(old_of[m], new_of[m]) for m in common]
    moved = _moved(pairs)
    return SegmentationDiff(
        messages=len(set(old_of) | set(new_of)),
        topics_before=len(old),
        topics_after=len(new),
        counts=counts,
        moved_messages=moved,
        one_to_one=round(100.0 * (len(pairs) - moved) / len(pairs), 2) if pairs else 100.0,
        vi=round(_vi(common, old_of, new_of), 2),
        changes=changes,
    )


def _changes(old: Sequence[TopicSet], new: Sequence[TopicSet]) -> list[TopicChange]:
    old_of, new_of = main_topics(old), main_topics(new)
    common = [m for m in new_of if m in old_of]
    groups = _groups(old, new, [(old_of[m], new_of[m]) for m in common])
    old_sets = {t.topic_id: frozenset(t.message_ids) for t in old}
    new_sets = {t.topic_id: frozenset(t.message_ids) for t in new}
    group_of = {f"o:{o}": i for i, (olds, _) in enumerate(groups) for o in olds}
    pairs_of: list[list[tuple[str, str]]] = [[] for _ in groups]
    for m in common:
        pairs_of[group_of[f"o:{old_of[m]}"]].append((old_of[m], new_of[m]))
    changes: list[TopicChange] = []
    for (olds, news), pairs in zip(groups, pairs_of, strict=True):
        messages = len({m for t in news for m in new_sets[t]} | {m for t in olds for m in old_sets[t]})
        kind = _kind(olds, news, old_sets, new_sets)
        changes.append(TopicChange(kind=kind, old=olds, new=news, messages=messages, moved=_moved(pairs)))
    return changes


def _groups(
    old: Sequence[TopicSet], new: Sequence[TopicSet], links: list[tuple[str, str]]
) -> list[tuple[list[str], list[str]]]:
    """Connected components of the old/new bipartite graph, in order of first appearance."""
    nodes = [f"o:{t.topic_id}" for t in old] + [f"n:{t.topic_id}" for t in new]
    roots = components(nodes, [(f"o:{o}", f"n:{n}") for o, n in links])
    comps: dict[str, tuple[list[str], list[str]]] = {}
    for node in [f"n:{t.topic_id}" for t in new] + [f"o:{t.topic_id}" for t in old]:
        olds, news = comps.setdefault(roots[node], ([], []))
        (olds if node.startswith("o:") else news).append(node[2:])
    return list(comps.values())


def _kind(olds: list[str], news: list[str], old_sets: dict, new_sets: dict) -> ChangeKind:
    if not olds:
        return "new"
    if not news:
        return "dropped"
    if len(olds) == 1 and len(news) == 1:
        return "unchanged" if old_sets[olds[0]] == new_sets[news[0]] else "modified"
    if len(olds) == 1:
        return "split"
    return "merge" if len(news) == 1 else "reshaped"


def _moved(pairs: list[tuple[str, str]]) -> int:
    """Messages not covered by the best one-to-one pairing of old and new topics."""
    if not pairs:
        return 0
    from scipy.optimize import linear_sum_assignment

    rows = {o: i for i, o in enumerate(dict.fromkeys(o for o, _ in pairs))}
    cols = {n: j for j, n in enumerate(dict.fromkeys(n for _, n in pairs))}
    table = np.zeros((len(rows), len(cols)), dtype=np.int64)
    for o, n in pairs:
        table[rows[o], cols[n]] += 1
    r, c = linear_sum_assignment(table, maximize=True)
    return len(pairs) - int(table[r, c].sum())


def _vi(common: list[str], old_of: dict[str, str], new_of: dict[str, str]) -> float:
    if len(common) <= 1:
        return 100.0
    index = {m: i for i, m in enumerate(common)}

    def clusters(owner: dict[str, str]) -> list[set[int]]:
        by: dict[str, set[int]] = {}
        for m in common:
            by.setdefault(owner[m], set()).add(index[m])
        return list(by.values())

    return variation_of_information({"chat": clusters(old_of)}, {"chat": clusters(new_of)})
