"""Whom an item is about in a two-person chat: a line in no person that names neither participant is about
both (``EVERYONE``): evidence for whichever of the two is asked about, never against them."""

from __future__ import annotations

from datetime import UTC, datetime

from language.text import tokenize
from retrieval.protocols import Doc
from retrieval.router import abstain
from retrieval.router.abstain_parts import EVERYONE
from retrieval.router.candidates import Cand
from retrieval.router.query import keywords
from retrieval.router.scoring import keyword_weights

T = datetime(2024, 5, 1, tzinfo=UTC)
PAIR = ["Odile", "Remy"]


def cand(i: str, text: str, speaker: str | None, kind: str = "turn") -> Cand:
    return Cand(doc=Doc(doc_id=i, chat_id="c", kind=kind, text=text, speaker=speaker, ts=T, source_message_ids=[i]))


def whom(c: Cand, people: list[str] = PAIR) -> list[str]:
    return [who for who, _, _ in abstain.parts(c, people, set(tokenize(c.doc.text)))]


def test_a_line_in_no_person_naming_no_one_is_about_both_people_of_a_two_person_chat():
    # a helper's confirmation, a landlord's notice: the two's shared affairs, whoever wrote them
    assert whom(cand("a", "Noted. Piano lesson moved to Saturday at 4.", "Remy")) == [EVERYONE]
    assert whom(cand("b", "The chimney sweep is booked for the 9th, morning.", "Remy")) == [EVERYONE]
    # a record distilled from such a line reads the same; one naming its writer is the writer's
    assert whom(cand("c", "Piano lesson moved to Saturday at 4.", "Remy", kind="fact")) == [EVERYONE]
    assert whom(cand("d", "Remy moved the piano lesson to Saturday.", "Remy", kind="fact")) == ["Remy"]
    # in the first person it stays the writer's; in the second person only, the other's
    assert whom(cand("e", "I sold my old kayak. It went fast.", "Remy")) == ["Remy"]
    assert whom(cand("f", "Your kayak looks brand new!", "Remy")) == ["Odile"]
    # a group chat keeps the writer
    assert whom(cand("g", "Noted. Piano lesson moved to Saturday at 4.", "Remy"), [*PAIR, "Zoe"]) == ["Remy"]


def _features(question: str, cands: list[Cand], names: list[str]) -> dict[str, float]:
    toks = {c.doc_id: set(tokenize(c.doc.text)) for c in cands}
    keys = keyword_weights(keywords(question, PAIR), toks)
    return abstain.evidence(cands, names, PAIR, toks, keys, 0.5, question).features


def test_a_shared_line_is_evidence_about_the_one_asked_and_a_first_person_one_is_not():
    shared = [cand("s", "Noted. Piano lesson moved to Saturday at 4.", "Remy")]
    f = _features("When is Odile's piano lesson now?", shared, ["Odile"])
    assert f["named_best_coverage"] > 0 and f["other_best_coverage"] == 0 and f["attribution"] < 0
    # the wrong-person question still finds the words only in the other person's own line
    own = [cand("o", "I adopted a greyhound from the shelter.", "Remy")]
    f = _features("What did Odile adopt from the shelter?", own, ["Odile"])
    assert f["named_best_coverage"] == 0 and f["other_best_coverage"] > 0 and f["attribution"] == 1.0
    assert f["rarest_other_only"] == 1.0


def test_supersession_reads_a_shared_line_as_its_writer_s():
    from retrieval.router.abstain_parts import parts_memo
    from retrieval.router.respond import _about

    c = cand("s", "Noted. Piano lesson moved to Saturday at 4.", "Remy")
    spans = parts_memo(PAIR, {"s": set(tokenize(c.doc.text))})
    assert _about(c, spans, PAIR) == {"Remy"}


def test_a_question_and_answer_pair_is_about_whose_affairs_the_question_asks_of():
    def qa(text: str) -> list[str]:
        return whom(cand("q", text, None, kind="qa"))

    # the answerer speaks of themself: theirs (the other asked "you")
    assert qa("Q: Odile: How long have you kept bees? A: Remy: Since I was twelve") == ["Remy"]
    # the asker asks of their own affairs and the answer is in no person: the asker's (a helper's confirmation)
    assert qa("Q: Odile: can we push my dentist visit to Friday? A: Remy: Done, Friday 10:00.") == ["Odile"]
    # the answer speaks to the asker: the asker's
    assert qa("Q: Odile: what's left on the loan? A: Remy: your balance is 3,200 now") == ["Odile"]
    # neither side in any person: the answerer's, as before
    assert qa("Q: Odile: which ferry was it? A: Remy: the early one to Skye") == ["Remy"]
    # 我 in the answer keeps the answerer's
    assert whom(cand("z", "Q: 小周: 你周末去哪了？ A: 阿梅: 我去爬山了", None, kind="qa"), ["小周", "阿梅"]) == ["阿梅"]
    assert whom(cand("y", "Q: 小周: 帮我把交水费的提醒挪到周五 A: 小助手: 已改到周五上午九点", None, kind="qa"),
                ["小周", "小助手"]) == ["小周"]


def test_a_summary_part_and_a_reported_line_read_as_a_turn_would():
    # a helper's part of a summary in no person is about both people, as its turn would be
    summary = cand("s", "Odile: can we move my piano lesson? Remy: Piano lesson moved to Saturday at 4.", None, "summary")
    assert whom(summary) == [EVERYONE]
    assert whom(cand("t", "Odile: I sold my kayak. Remy: I bought a canoe.", None, "summary")) == ["Odile", "Remy"]
    # the distiller's "Remy said ..." keeps who said a line that is not about them: the line is the two's
    assert whom(cand("r", "Remy said the boiler is fixed.", "Remy", kind="fact")) == [EVERYONE]
    assert whom(cand("m", "Remy说：小区周五停水", "Remy", kind="fact")) == [EVERYONE]
    # ... in a group chat too, where a line in no person from its writer stays theirs
    group = [*PAIR, "Zoe"]
    assert whom(cand("g", "Remy said the boiler is fixed.", "Remy", kind="fact"), group) == [EVERYONE]
    assert whom(cand("h", "The boiler is fixed.", "Remy", kind="fact"), group) == ["Remy"]
