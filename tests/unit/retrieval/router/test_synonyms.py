"""A question's keywords said in other words (retrieval.router.synonyms), read by the abstention check."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from language.text import tokenize, word_forms
from retrieval.protocols import Doc
from retrieval.router.abstain_parts import parts
from retrieval.router.candidates import Cand
from retrieval.router.synonyms import aliases_of, expand, synonym_bar, with_synonyms

T = datetime(2025, 2, 3, tzinfo=UTC)


def cand(i: str, text: str, speaker: str | None, kind: str = "turn") -> Cand:
    return Cand(doc=Doc(doc_id=i, chat_id="c", kind=kind, text=text, speaker=speaker, ts=T, source_message_ids=[i]))


def test_word_forms_pair_each_token_with_the_word_as_written():
    assert ("injur", "injured") in word_forms("Was Owen injured?")
    assert all(w.isalpha() for _, w in word_forms("paid £15 on the 3rd, Sean's cousin"))  # no numbers
    assert ("房租", "房租") in word_forms("房东说房租要涨")


def test_aliases_are_the_item_words_as_close_as_the_bar_to_a_keyword():
    v = {"work": np.array([1.0, 0.0]), "job": np.array([0.8, 0.6]), "pint": np.array([0.0, 1.0])}
    got = aliases_of(["work"], {"work": "work"}, [("job", "job"), ("pint", "pint")], v, 0.7)
    assert got == {"job": frozenset({"work"})}
    assert aliases_of(["work"], {"work": "work"}, [("job", "job")], v, 0.9) == {}
    tokens = {"a": {"job", "council"}, "b": {"pint"}}
    assert expand(tokens, got) == {"a": {"job", "council", "work"}, "b": {"pint"}}


def test_one_relation_never_stands_for_another():
    # sister and brother sit as close as synonyms in a word model; a question about a brother is not answered
    # by news of a sister (mum and mother are one person)
    v = {"brother": np.array([1.0, 0.0]), "sister": np.array([0.95, 0.31]), "mum": np.array([0.0, 1.0]),
         "mother": np.array([0.1, 0.99]), "舅舅": np.array([0.6, 0.8]), "叔叔": np.array([0.62, 0.78])}
    assert aliases_of(["brother"], {"brother": "brother"}, [("sister", "sister")], v, 0.7) == {}
    assert aliases_of(["mum"], {"mum": "mum"}, [("mother", "mother")], v, 0.7) == {"mother": frozenset({"mum"})}
    assert aliases_of(["舅舅"], {"舅舅": "舅舅"}, [("叔叔", "叔叔")], v, 0.7) == {}


def test_a_part_of_a_summary_keeps_the_keyword_its_synonym_stands_for():
    # "Sean's got a new job" is about Sean; read by keywords only it said nothing of "work"
    c = cand("s", "Joe: Sean's got a new job at the council. Callum: nice, first round is on him", None, "summary")
    aliases = {"job": frozenset({"work"})}
    toks = expand({"s": set(tokenize(c.doc.text))}, aliases)["s"]
    got = {who: t for who, t, _ in parts(c, ["Joe", "Callum", "Sean"], toks, aliases)}
    assert "work" in got["Joe"] and "work" not in got["Callum"]


@pytest.mark.parametrize(("question", "line", "found"), [
    ("Where does Sean work now?", "Sean got a new job at the council", True),
    ("Was Owen injured?", "physio says the sprain keeps him out two weeks", True),
    ("What instrument is Kofi learning?", "Kofi started piano lessons", True),
    ("What colour is Mina's bike?", "Mina bought a second-hand bike from Lars", False),
])  # fmt: skip
async def test_minilm_reads_a_synonym_and_not_a_neighbour(minilm, question, line, found):
    keys = [k for k in tokenize(question) if k not in ("sean", "owen", "kofi", "mina", "now")]
    texts = {"a": line}
    aliases = await with_synonyms(minilm, keys, question, texts, {"a": set(tokenize(line))})
    tokens = expand({"a": set(tokenize(line))}, aliases)
    assert all(k in tokens["a"] for k in keys) is found


async def test_no_bar_no_synonyms(minilm):
    assert synonym_bar(None) is None and synonym_bar(minilm) is not None
    assert await with_synonyms(None, ["work"], "Where does Sean work?", {"a": "new job"}, {"a": {"new", "job"}}) == {}


async def test_an_english_model_reads_no_chinese_synonyms(minilm):
    # MiniLM's vectors of any two Chinese words are close: "球队" would have been found in every line
    line = "我下周去杭州出差"
    aliases = await with_synonyms(minilm, ["球队"], "他最喜欢哪支球队？", {"a": line}, {"a": set(tokenize(line))})
    assert aliases == {}
