"""The router's per-request and per-text memos give exactly what the unmemoised reads give."""

from __future__ import annotations

from datetime import UTC, datetime

from language.text import tokenize
from retrieval.protocols import Doc
from retrieval.router import abstain
from retrieval.router.abstain_parts import parts, parts_memo
from retrieval.router.candidates import Cand
from retrieval.router.classifier import _REFERENCE, CUES, QUERY_TYPES, cue_hits, rule_logits, time_cues
from retrieval.router.learned import rule_features
from retrieval.router.timeparse import parse_time

T = datetime(2024, 5, 1, tzinfo=UTC)
PEOPLE = ["Melanie", "Caroline", "caroline"]


def cand(i: str, text: str, speaker: str | None = None, kind: str = "turn") -> Cand:
    return Cand(doc=Doc(doc_id=i, chat_id="c", kind=kind, text=text, speaker=speaker, ts=T, source_message_ids=[i]))


CANDS = [
    cand("t1", "I ran a charity race. Your painting looks amazing!", "Melanie"),
    cand("t2", "Did you go to the support group?", "Caroline"),
    cand("s1", "Melanie: I ran a charity race. Caroline: I went to a support group. Melanie: Why?", kind="summary"),
    cand("q1", "Q: Melanie: How long have you painted? A: Caroline: Since I was 17", kind="qa"),
    cand("f1", "Caroline gave Melanie a painting of a sunset", "Melanie", kind="fact"),
    cand("f2", "Adopted a puppy", None, kind="fact"),
]


def test_parts_memo_is_parts_once_per_candidate():
    tokens = {c.doc_id: set(tokenize(c.doc.text)) for c in CANDS[:-1]}  # the last one has no tokens
    spans = parts_memo(PEOPLE, tokens)
    for c in CANDS:
        first = spans(c)
        assert first == parts(c, PEOPLE, tokens.get(c.doc_id, set()))
        assert spans(c) is first  # read once per request
    assert {who for who, _, _ in spans(CANDS[2])} == {"Melanie", "Caroline"}  # the asking part states nothing
    assert [who for who, _, _ in spans(CANDS[3])] == ["Caroline"]  # a Q&A pair: about the one who answers


def test_parts_kept_across_requests_follow_what_each_request_reads():
    """A later request's memo reuses the parts of an item read before only for the same text, kind, speaker,
    participants and tokens: a change in any of them reads the item afresh."""
    tokens = {c.doc_id: set(tokenize(c.doc.text)) for c in CANDS}
    variants = [
        (PEOPLE, tokens),
        (["Melanie", "Caroline"], tokens),  # another participant list
        (["Melanie", "Caroline"], {i: t - {"race"} for i, t in tokens.items()}),  # other tokens
        (["Melanie", "Jon"], tokens),
    ]
    for _ in range(2):  # the second pass is served from what the first kept
        for people, toks in variants:
            spans = parts_memo(people, toks)
            for c in CANDS:
                assert spans(c) == parts(c, people, toks.get(c.doc_id, set())), (people, c.doc_id)
    renamed = cand("t1", "I ran a charity race. Your painting looks amazing!", "Caroline")  # another speaker
    assert parts_memo(PEOPLE, tokens)(renamed) == parts(renamed, PEOPLE, tokens["t1"])
    assert parts_memo(PEOPLE, tokens)(renamed)[0][0] == "Caroline"


def test_focus_sides_and_evidence_read_the_shared_parts_alike():
    tokens = {c.doc_id: set(tokenize(c.doc.text)) for c in CANDS}
    keys = {"charity": 1.0, "race": 1.5, "paint": 2.0}
    for names in (["Caroline"], ["Melanie"], []):
        alone = abstain.focus_sides(CANDS[:3], CANDS, names, PEOPLE, tokens, keys)
        shared = abstain.focus_sides(CANDS[:3], CANDS, names, PEOPLE, tokens, keys, parts_memo(PEOPLE, tokens))
        assert alone == shared
        ev = abstain.evidence(CANDS[:3], names, PEOPLE, tokens, keys, 0.3, "What did Caroline paint?", deep=CANDS)
        named, other = 0.0, 0.0  # the attribution evidence, from the unmemoised ``about``
        if names:
            for rank, c in enumerate(CANDS[:3]):
                for who, cov in abstain.about(c, PEOPLE, keys, tokens[c.doc_id]):
                    if who.casefold() in {n.casefold() for n in names}:
                        named += cov / (1.0 + 0.3 * rank)
                    else:
                        other += cov / (1.0 + 0.3 * rank)
        assert (ev.about_named, ev.about_other) == (named, other)
        assert names == [] or named + other > 0
        assert {k: ev.features[k] for k in alone} == {k: round(float(v), 4) for k, v in alone.items()}


QUESTIONS = ["When did Melanie run the charity race?", "How many books has Anna read?",
             "What did Caroline do after she moved to Boston?", "What is her favourite food?",
             "他上个月去哪里了？", "Which one came first, the trip or the wedding?", "What happened in May 2023?"]  # fmt: skip


def _rule_logits_unmemoised(query: str) -> dict[str, float]:
    low = query.lower()
    scores = dict.fromkeys(QUERY_TYPES, 0.0)
    for qtype, cues in CUES.items():
        scores[qtype] = sum(w for pattern, w in cues if pattern.search(low) or pattern.search(query))
    tq = parse_time(query, _REFERENCE)
    scores["temporal_reasoning"] += 3.0 * bool(tq.asks_when or tq.asks_order) + 1.0 * bool(tq.relation)
    scores["temporal_reasoning"] += 1.0 * bool(tq.asks_latest) + 0.5 * bool(tq.windows)
    scores["multi_hop"] -= 1.0 * bool(tq.windows)
    return scores


def test_rule_cues_are_read_once_per_text_and_unchanged():
    for q in QUESTIONS:
        plain = _rule_logits_unmemoised(q)
        got = rule_logits(q)
        # the cue and time parts are the unmemoised ones (the shape rules add on top of both alike)
        assert {t: got[t] for t in ("temporal_reasoning", "factual_extraction")} == {
            t: plain[t] for t in ("temporal_reasoning", "factual_extraction")}, q  # fmt: skip
        assert cue_hits(q) is cue_hits(q) and time_cues(q) is time_cues(q)
        feats = rule_features(q)
        assert {f for f in feats if f.startswith("cue:")} == {f"cue:{t}:{i}" for t, i in cue_hits(q)}
        tq = parse_time(q, _REFERENCE)
        assert ("flag:asks_when" in feats) == bool(tq.asks_when) and ("flag:window" in feats) == bool(tq.windows)
        got["temporal_reasoning"] = -99.0  # a caller's dict is its own
        assert rule_logits(q)["temporal_reasoning"] == plain["temporal_reasoning"]
