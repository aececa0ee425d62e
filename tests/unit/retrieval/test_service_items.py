"""Uniform retrieval builds only the items it shows: the same ones, in the same order, as rendering every hit
and then dropping the covered ones."""

from __future__ import annotations

from datetime import UTC, datetime

from retrieval.protocols import Doc, Hit
from retrieval.render import drop_covered
from retrieval.service import first_uncovered, to_item

T = datetime(2024, 5, 1, tzinfo=UTC)


def hit(i: int, sources: list[str], kind: str = "turn") -> Hit:
    doc = Doc(doc_id=f"d{i}", chat_id="c", kind=kind, text=f"text {i}", ts=T, source_message_ids=sources)
    return Hit(doc=doc, score=1.0 / (i + 1), scores={"bm25": float(i)})


def test_first_uncovered_is_drop_covered_of_every_item_cut_to_k():
    hits = [hit(0, ["m1", "m2"]), hit(1, ["m1"], "fact"), hit(2, []), hit(3, ["m2", "m3"]), hit(4, ["m3"]),
            hit(5, ["m1", "m2", "m3"], "summary"), hit(6, ["m4"]), hit(7, []), hit(8, ["m4", "m5"])]  # fmt: skip
    for k in range(1, len(hits) + 2):
        want = drop_covered([to_item(h) for h in hits])[:k]
        got = first_uncovered(hits, k)
        assert got == want, k
    assert [it.item_id for it in first_uncovered(hits, 10)] == ["d0", "d2", "d3", "d6", "d7", "d8"]
