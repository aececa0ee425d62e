"""Segmentation metrics, computed exactly as the IRC disentanglement benchmark does (Kummerfeld et al.,
ACL 2019, ``tools/evaluation/conversation-eval.py`` and ``graph-eval.py``), plus shift P/R/F, Pk and WindowDiff
for TIAGE.

Clusters are given per file (``{file: [set(line numbers)]}``) and pooled over files: VI is computed on the
contingency table of all files together and normalised by ``log2`` of the total number of messages; the
one-to-one overlap is a maximum-weight matching of system to gold clusters; exact match counts clusters that
are identical, ignoring single-message clusters on both sides. Links are ``(message, antecedent)`` pairs, a
self-link ``(i, i)`` marking a conversation start. Every score is a percentage (0-100).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

import numpy as np

Clusters = Mapping[str, list[set[int]]]
Links = Mapping[str, set[tuple[int, int]]]

H = TypeVar("H", bound=Hashable)


def parse_links(lines: Iterable[str]) -> set[tuple[int, int]]:
    """Annotation lines ``i j -``: the larger number is the message, the other its antecedent; a line
    naming one message (or the same one twice) is a self-link."""
    pairs: set[tuple[int, int]] = set()
    for line in lines:
        nums = [int(tok) for tok in line.split() if tok != "-"]
        if not nums:
            continue
        source = max(nums)
        nums.remove(source)
        if not nums or nums == [source]:
            pairs.add((source, source))
        else:
            pairs.update((source, n) for n in nums)
    return pairs


def components(nodes: Iterable[H], edges: Iterable[tuple[H, H]]) -> dict[H, H]:
    """Union-find: every node (edge ends included) -> one representative of its connected component."""
    parent: dict[H, H] = {}

    def find(x: H) -> H:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for node in nodes:
        find(node)
    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
    return {node: find(node) for node in list(parent)}


def clusters_from_links(links: Iterable[tuple[int, int]], cutoff: int | None = None) -> list[set[int]]:
    """Connected components of the link graph, keeping messages ``>= cutoff`` (default: the smallest
    linked message, i.e. the first annotated line); earlier lines only connect."""
    links = list(links)
    roots = components((), links)
    if cutoff is None:
        cutoff = min((max(a, b) for a, b in links), default=0)
    groups: dict[int, set[int]] = {}
    for node, root in roots.items():
        if node >= cutoff:
            groups.setdefault(root, set()).add(node)
    return sorted(groups.values(), key=min)


def _check_same_points(gold: Clusters, auto: Clusters) -> None:
    if set(gold) != set(auto):
        raise ValueError(
            f"files differ: gold-only {set(gold) - set(auto)}, auto-only {set(auto) - set(gold)}"
        )
    for name in gold:
        g = set().union(*gold[name]) if gold[name] else set()
        a = set().union(*auto[name]) if auto[name] else set()
        if g != a:
            raise ValueError(f"{name}: the set of lines does not match ({len(g ^ a)} differ)")


def _contingency(gold: Clusters, auto: Clusters) -> tuple[list[np.ndarray], list[int], list[int]]:
    tables, asizes, gsizes = [], [], []
    for name in sorted(gold):
        where = {m: j for j, c in enumerate(gold[name]) for m in c}
        table = np.zeros((len(auto[name]), len(gold[name])), dtype=np.int64)
        for i, cluster in enumerate(auto[name]):
            for m in cluster:
                table[i, where[m]] += 1
        tables.append(table)
        asizes += [len(c) for c in auto[name]]
        gsizes += [len(c) for c in gold[name]]
    return tables, asizes, gsizes


def variation_of_information(gold: Clusters, auto: Clusters) -> float:
    """``100 * (1 - VI / log2 n)``, pooled over files."""
    _check_same_points(gold, auto)
    tables, asizes, gsizes = _contingency(gold, auto)
    total = float(sum(asizes))
    if total <= 1:
        return 100.0
    h_joint = mutual = 0.0
    ra_all = [np.asarray([len(c) for c in auto[n]]) for n in sorted(gold)]
    cg_all = [np.asarray([len(c) for c in gold[n]]) for n in sorted(gold)]
    for table, ra, cg in zip(tables, ra_all, cg_all, strict=True):
        for i, j in zip(*np.nonzero(table), strict=True):
            p = table[i, j] / total
            h_joint -= p * math.log2(p)
            mutual += p * math.log2(table[i, j] * total / (ra[i] * cg[j]))
    return 100.0 - 100.0 * (h_joint - mutual) / math.log2(total)


def one_to_one(gold: Clusters, auto: Clusters) -> float:
    """Percentage of messages covered by the best one-to-one pairing of system and gold clusters."""
    from scipy.optimize import linear_sum_assignment

    _check_same_points(gold, auto)
    tables, asizes, _ = _contingency(gold, auto)
    overlap = 0
    for table in tables:
        if table.size:
            rows, cols = linear_sum_assignment(table, maximize=True)
            overlap += int(table[rows, cols].sum())
    total = sum(asizes)
    return 100.0 * overlap / total if total else 100.0


def prf(matched: int, n_auto: int, n_gold: int) -> tuple[float, float, float]:
    p = 100.0 * matched / n_auto if n_auto else 0.0
    r = 100.0 * matched / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if matched else 0.0
    return p, r, f


def exact_match(gold: Clusters, auto: Clusters, skip_single: bool = True) -> tuple[float, float, float]:
    """P/R/F of clusters reproduced exactly (single-message clusters ignored on both sides)."""
    n_gold = n_auto = matched = 0
    for name in gold:
        g = {frozenset(c) for c in gold[name] if not (skip_single and len(c) == 1)}
        a = {frozenset(c) for c in auto.get(name, []) if not (skip_single and len(c) == 1)}
        n_gold, n_auto, matched = n_gold + len(g), n_auto + len(a), matched + len(g & a)
    return prf(matched, n_auto, n_gold)


def link_prf(gold: Links, auto: Links) -> tuple[float, float, float]:
    """P/R/F of ``(message, antecedent)`` pairs, self-links included, pooled over files."""
    n_gold = sum(len(v) for v in gold.values())
    n_auto = sum(len(v) for v in auto.values())
    matched = sum(len(gold[name] & auto.get(name, set())) for name in gold)
    return prf(matched, n_auto, n_gold)


def shift_prf(gold: list[bool], pred: list[bool]) -> tuple[float, float, float]:
    """P/R/F of the positive (topic shift) label."""
    if len(gold) != len(pred):
        raise ValueError("gold and predictions differ in length")
    matched = sum(1 for g, p in zip(gold, pred, strict=True) if g and p)
    return prf(matched, sum(pred), sum(gold))


def _boundary_windows(ref: str, hyp: str, k: int) -> list[tuple[int, int]]:
    if len(ref) != len(hyp):
        raise ValueError("reference and hypothesis differ in length")
    k = max(1, min(k, len(ref)))
    return [(ref[i : i + k].count("1"), hyp[i : i + k].count("1")) for i in range(len(ref) - k + 1)]


def pk(ref: str, hyp: str, k: int) -> float:
    """Beeferman's Pk as NLTK defines it (``nltk.metrics.segmentation.pk``): over every window of ``k``
    positions of the boundary strings (``"1"`` = a boundary), the share where one side has a boundary and
    the other none. A fraction (0 = perfect)."""
    windows = _boundary_windows(ref, hyp, k)
    return sum((r > 0) != (h > 0) for r, h in windows) / len(windows) if windows else 0.0


def windowdiff(ref: str, hyp: str, k: int) -> float:
    """WindowDiff (Pevzner and Hearst) as NLTK defines it: the share of windows of ``k`` positions whose
    boundary counts differ. A fraction (0 = perfect)."""
    windows = _boundary_windows(ref, hyp, k)
    return sum(r != h for r, h in windows) / len(windows) if windows else 0.0


def half_mean_segment(ref: str) -> int:
    """The usual ``k``: half the mean reference segment length, rounded (NLTK's default), for a boundary
    string between ``len(ref) + 1`` units; at least 1."""
    return max(1, round((len(ref) + 1) / (2 * (ref.count("1") + 1))))
