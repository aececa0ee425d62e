"""The memory-truth scorer on answers built by hand (questions and chats written for this test)."""

from __future__ import annotations

from bench.truth_score import headline, marked, report, score

CHANGED = {"qid": "q1", "type": "current_value", "question": "Where does the choir rehearse now?",
           "evidence": ["m9"], "stale": ["m2"], "answer": ["the old fire station"],
           "stale_values": [["St Anne's hall"]]}  # fmt: skip
NEAR_MISS = {"qid": "q2", "type": "abstention", "question": "What colour is Omar's kayak?", "near_miss": True}
ANSWERABLE = {"qid": "q3", "type": "who", "question": "Who leads the altos?", "evidence": ["m4"],
              "answer": ["Bea"]}  # fmt: skip


def _item(text: str, sources: list[str], note: str | None = None, speaker: str = "Ida") -> dict:
    return {"text": text, "speaker": speaker, "source_message_ids": sources, "note": note, "valid_to": None}


NEW = _item("choir rehearsals move to the old fire station from next week", ["m9"])
OLD = _item("choir rehearses at St Anne's hall", ["m2"])


def test_the_current_value_first_and_named_on_top():
    row = score(CHANGED, {"items": [NEW, OLD]})
    assert row["current_first"] and row["top1_value_changed"] and not row["stale_above"]
    assert row["r5"] and row["ev_rank"] == 1 and row["stale_rank"] == 2 and not row["top1_stale_value"]


def test_a_stale_value_on_top_is_counted_and_a_marked_one_is_told_apart():
    row = score(CHANGED, {"items": [OLD, NEW]})
    assert not row["current_first"] and row["stale_above"] and row["stale_above_unmarked"]
    assert row["top1_stale_value"] and not row["top1_value_changed"]
    noted = dict(OLD, note="superseded (said 2027-01-02) by: choir rehearsals move …")
    assert marked(noted)
    row = score(CHANGED, {"items": [noted, NEW]})
    assert row["stale_above"] and not row["stale_above_unmarked"] and row["current_first_marked_ok"]


def test_abstention_figures_split_near_misses_and_answerable_questions():
    rows = [
        score(NEAR_MISS, {"no_relevant_memory": True, "items": []}) | {"lang": "en"},
        score(ANSWERABLE, {"no_relevant_memory": True, "items": []}) | {"lang": "en"},
        score(CHANGED, {"items": [NEW, OLD]}) | {"lang": "zh"},
    ]
    rep = report(rows)
    s = rep["by_language"]["all"]
    assert s["abstention"] == {"precision": 0.5, "recall": 1.0, "f1": 0.667, "tp": 1, "fp": 1, "fn": 0}
    assert s["abstention_near_miss_recall"] == 1.0 and s["answerable_abstained"] == 0.5
    assert rep["by_language"]["zh"]["current_first"] == 1.0 and rep["by_language"]["en"]["current_first"] is None
    assert set(rep["by_type"]) == {"current_value", "who", "abstention"} and "en/who" in rep["by_language_type"]
    assert headline(s)["abst_f1"] == 0.667
