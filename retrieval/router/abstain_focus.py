"""On which side of a swapped-person question its focus words are stated (pure): a feature group of the
abstention check (:mod:`retrieval.router.abstain`, ``COMPONENTS["other_subject"]``)."""

from __future__ import annotations

from retrieval.router.abstain_names import GENERIC
from retrieval.router.abstain_parts import EVERYONE, Spans, distinct, parts_memo
from retrieval.router.candidates import Cand
from retrieval.router.scoring import coverage

__all__ = ["focus_sides"]


def focus_sides(
    top: list[Cand],
    deep: list[Cand],
    names: list[str],
    participants: list[str],
    tokens: dict[str, set[str]],
    keys: dict[str, float],
    spans: Spans | None = None,
) -> dict[str, float]:
    """On which side the question's focus words (its keywords but the generic ones) are stated: about a named
    participant or only about someone else, in the top items and anywhere in the ranking (``deep``). A
    swapped-person question ("What did Caroline realise after her charity race?" when Melanie ran it) finds
    its rarest words only in the other person's items. Without one named participant of a chat of two or
    more, every item counts as the named side. ``spans``: the request's ``parts_memo``, when the caller has one.
    Pure."""
    focus = {k: w for k, w in keys.items() if k not in GENERIC} or dict(keys)
    total = sum(focus.values())
    rarest = max(focus, key=focus.get) if focus else None  # the question's most specific word, found or not
    named_set = {n.casefold() for n in names}
    attributed = bool(named_set) and len(distinct(participants)) >= 2
    spans_of = spans or parts_memo(participants, tokens)
    shared = named_set & {p.casefold() for p in participants} and EVERYONE or None  # both people's part

    def sides(cands: list[Cand]) -> tuple[set[str], set[str], float, float]:
        named, other = set(), set()
        best = [0.0, 0.0]
        for c in cands:
            for who, t, share in spans_of(c) if attributed else [("", tokens.get(c.doc_id, set()), 1.0)]:
                side = 0 if not attributed or who == shared or who.casefold() in named_set else 1
                (named if side == 0 else other).update(t)
                best[side] = max(best[side], coverage(focus, t) * share)
        return named, other, best[0], best[1]

    named, other, _, _ = sides(top)
    deep_named, _, deep_named_best, deep_other_best = sides(deep)
    if not focus:
        return {"focus_named_weighted": 1.0, "focus_other_only": 0.0, "rarest_named": 1.0, "rarest_other_only": 0.0,
                "deep_named_best": 0.0, "deep_other_best": 0.0, "deep_rarest_named": 1.0}  # fmt: skip
    return {
        "focus_named_weighted": sum(w for k, w in focus.items() if k in named) / total,
        "focus_other_only": sum(w for k, w in focus.items() if k in other and k not in named) / total,
        "rarest_named": float(rarest in named),
        "rarest_other_only": float(rarest in other and rarest not in named),
        "deep_named_best": deep_named_best,
        "deep_other_best": deep_other_best,
        "deep_rarest_named": float(rarest in deep_named),
    }
