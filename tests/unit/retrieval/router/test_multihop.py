"""Multi-hop decisions: aggregation questions, second-hop bridges, person focus (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from language.text import tokenize
from retrieval.protocols import Doc
from retrieval.router.candidates import Cand, SearchSpec
from retrieval.router.multihop import (
    MultiHopConfig,
    bridge_queries,
    is_aggregation,
    join,
    person_focus,
    second_hop_specs,
)
from retrieval.router.query import analyse

T = datetime(2024, 3, 1, tzinfo=UTC)
PEOPLE = ["Caroline", "Melanie"]


def cand(i: str, text: str, speaker: str | None, entities: list[str] = ()) -> Cand:
    return Cand(doc=Doc(doc_id=i, chat_id="c", kind="fact", text=text, speaker=speaker, ts=T + timedelta(days=len(i)),
                        source_message_ids=[i], entities=list(entities)))  # fmt: skip


def toks(cands: list[Cand]) -> dict[str, set[str]]:
    return {c.doc_id: set(tokenize(c.doc.text)) for c in cands}


@pytest.mark.parametrize(
    ("query", "expected"),
    [("How many times did Nate win a tournament?", True), ("What are all the cities Tim visited?", True),
     ("他去过哪些城市？", True), ("这个月我们开了几次会？", True), ("Which books has Melanie read?", True),
     ("Where did Caroline move from?", False), ("他在哪家公司上班？", False), ("When did Jon open the studio?", False)],
)  # fmt: skip
def test_aggregation_questions(query, expected):
    assert is_aggregation(query) is expected


def test_bridges_carry_what_the_first_hop_added():
    qa = analyse("Where did Caroline move from 4 years ago?", PEOPLE, T)
    top = [cand("a", "Caroline has known these friends since moving from her home country.", "Caroline"),
           cand("b", "Melanie moved the piano to the attic.", "Melanie"),  # someone else: no bridge from it
           cand("c", "Caroline keeps a hand-painted bowl from Sweden.", "Caroline", ["Sweden"])]
    tokens = toks(top + [cand(f"x{i}", "Caroline friends are great", "Caroline") for i in range(5)])
    got = bridge_queries(top, qa, tokens, MultiHopConfig(bridges=3, bridge_terms=2))
    assert len(got) == 2 and all(q.startswith("Caroline ") for q in got)
    assert set(got[0].split()[1:]) == set(tokenize("home country"))  # rare terms it added, not 'friends'
    assert "friend" not in got[0] and "piano" not in " ".join(got)
    assert got[1].split()[1] == "sweden"  # a linked entity comes first
    assert bridge_queries(top, qa, tokens, MultiHopConfig(bridges=0)) == []


def test_second_hop_specs_only_when_asked_for_and_the_wide_collect_for_sets():
    base = SearchSpec(label="main", text="q", embed_text="q", k=80, candidates=40)
    qa = analyse("What books has Melanie read?", PEOPLE, T)
    top = [cand("a", "Melanie loved Charlotte's Web as a kid.", "Melanie")]
    cfg = MultiHopConfig()
    assert second_hop_specs(False, top, qa, toks(top), cfg, base) == []
    specs = second_hop_specs(True, top, qa, toks(top), cfg, base)
    labels = [s.label for s in specs]
    assert labels == ["hop0", "collect"]
    collect = specs[-1]
    assert collect.candidates == cfg.aggregate_k and "Melanie" in collect.text and "book" in collect.text
    assert specs[0].weight == cfg.bridge_weight and specs[0].text.startswith("Melanie ")


def test_join_keeps_the_head_and_takes_the_searches_in_turns():
    a, b, c, d, e, f = (cand(x, x, "Melanie") for x in "abcdef")
    scored = [(a, 3.0), (b, 2.0), (c, 1.0), (d, 0.5)]
    got = join(scored, [[b, e, c], [f, e]], keep=2)
    assert [x.doc_id for x, _ in got] == ["a", "b", "e", "f", "c", "d"]
    scores = [s for _, s in got]
    assert scores == sorted(scores, reverse=True)
    assert join(scored, [[a, b]], keep=2) == scored  # nothing new
    a2 = cand("a2", "a again", "Melanie").doc.model_copy(update={"source_message_ids": ["a"]})
    dup = [(a, 3.0), (Cand(doc=a2), 2.5), (b, 2.0), (c, 1.0)]
    assert [x.doc_id for x, _ in join(dup, [[e]], keep=2)] == ["a", "a2", "b", "e", "c"]  # a2 repeats a


def test_person_focus_lowers_the_other_person_and_raises_focal_items():
    scored = [(cand("a", "Caroline read a novel about art.", "Caroline"), 1.0),
              (cand("b", "Melanie painted the lake.", "Melanie"), 0.9),
              (cand("c", "Melanie read two books this summer.", "Melanie"), 0.75)]  # fmt: skip
    qa = analyse("What books has Melanie read?", PEOPLE, T)
    got = person_focus(scored, qa, penalty=0.5, focal_bonus=0.2)
    assert [c.doc_id for c, _ in got] == ["c", "b", "a"]
    both = analyse("What do Caroline and Melanie both like?", PEOPLE, T)
    assert [c.doc_id for c, _ in person_focus(scored, both, 0.5, 0.0)] == ["a", "b", "c"]  # two named: no focus
