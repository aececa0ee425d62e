from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from language.text import (
    LazyTokens,
    count_tokens,
    extract_keywords,
    fts_query,
    has_cjk,
    stem,
    tokenize,
    tokenize_lines,
)


def test_latin_tokens_lowercase_split_stopwords_and_numbers():
    assert tokenize("Hello, WORLD! The 3 cats and 2023-05-08") == [
        "hello",
        "world",
        "3",
        "cat",
        "2023",
        "05",
        "08",
    ]


def test_possessives_and_contractions():
    assert tokenize("Caroline's dog") == ["carolin", "dog"]
    assert tokenize("I don't know") == ["know"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["move", "moves", "moved", "moving"], "mov"),
        (["meeting", "meetings"], "meet"),
        (["run", "running"], "run"),
        (["stop", "stopped", "stops"], "stop"),
        (["city", "cities"], "city"),
        (["study", "studied", "studies"], "study"),
        (["box", "boxes"], "box"),
        (["string", "strings"], "string"),
    ],
)
def test_stemmer_conflates_inflections(words, expected):
    assert {stem(w) for w in words} == {expected}


def test_stemmer_leaves_short_and_special_words():
    for word in ["bus", "need", "speed", "falling", "class", "3pm", "café"]:
        assert stem(word) in {word, "fall"}


def test_full_width_is_folded():
    assert tokenize("ＡＢＣ１２３") == ["abc123"]


def test_chinese_words_plus_bigrams():
    tokens = tokenize("我下个月要搬到杭州了")
    assert "杭州" in tokens and "下个月" in tokens and "搬到" in tokens
    assert "我下" in tokens and "个月" in tokens  # bigrams
    assert "了" not in tokens and "我" not in tokens  # function words dropped
    assert tokens.count("杭州") == 1  # a bigram equal to a jieba word is not emitted twice


def test_query_and_doc_tokenised_identically():
    doc = set(tokenize("Melanie: 我下个月要搬到杭州了"))
    assert set(tokenize("杭州")) <= doc
    assert set(tokenize("Where is Melanie moving?")) - doc == {"mov"}


def test_single_cjk_char_run_and_mixed_script():
    assert tokenize("好") == ["好"]
    assert tokenize("用iPhone15拍") == ["用", "iphone15", "拍"]


def test_has_cjk():
    assert has_cjk("hello 世界") and has_cjk("カタカナ") and not has_cjk("hello, world")


def test_fts_query_quotes_and_dedupes():
    assert fts_query("cats and cat, dogs") == '"cat" OR "dog"'
    assert fts_query("the of and ?!") == ""
    assert fts_query("") == ""


def test_fts_query_is_safe_for_fts5_syntax():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5 (body)")
    db.execute("INSERT INTO t (body) VALUES ('near col or and not')")
    for hostile in ['NEAR(a b) "x', "col:value AND NOT *", "a OR b)", "^start -minus +plus"]:
        expr = fts_query(hostile)
        db.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,)).fetchall()  # must not raise


def test_count_tokens_approximation():
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("杭州很好") == 4
    assert count_tokens("internationalization") == 4
    assert count_tokens("hi, there!") == 4
    assert count_tokens("12345") == 2
    text = "The quick brown fox jumps over the lazy dog. " * 10
    assert 90 <= count_tokens(text) <= 130  # ~100 real BPE tokens
    assert count_tokens(text) == count_tokens(text)


def test_a_long_text_of_lines_counts_what_one_pass_over_it_counts():
    """A long multi-line text is counted line by line (each line cached): the same count as one regex pass,
    whatever sits at the line breaks (numbers, words, CJK, symbols, blank lines, a line break in a run)."""
    import random

    from language.text import _COUNT_RE

    def one_pass(text: str) -> int:
        return sum((len(m.group()) + 2) // 3 if m.lastgroup == "num" else (len(m.group()) + 4) // 5
                   if m.lastgroup == "word" else 1 for m in _COUNT_RE.finditer(text))  # fmt: skip

    rng = random.Random(7)
    parts = ["2023", "05", "Caroline:", "internationalization", "杭州很好", "!!", "—", "é", "x1", "\n", "\n\n", " ", "\t"]
    for _ in range(300):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(40, 200)))
        assert count_tokens(text) == one_pass(text)
    context = "## direct\n2023-05-07\n" + "\n".join(f"13:{i:02d} Melanie: line {i} of the day, 12345 words" for i in range(20))
    assert len(context) > 256 and count_tokens(context) == one_pass(context)


def test_extract_keywords():
    kw = extract_keywords("Li and Caroline went hiking in Yosemite in 2023; 我下个月要搬到杭州了")
    assert {"li", "caroline", "hiking", "yosemite", "杭州", "下个月"} <= kw
    assert not kw & {"and", "in", "2023", "我", "了"}
    assert "went" in kw  # non-stopword latin of length >= 3
    assert extract_keywords("it is on") == set()


def test_extract_keywords_joins_a_two_character_word_jieba_cuts_apart():
    # jieba's dictionary does not know the café's name and cuts it into two lone characters
    assert "禾木" in extract_keywords("楼下新开的那家禾木咖啡不错")
    # lone characters that are a clause of short words, not one word
    assert extract_keywords("他说会来") == set()
    assert extract_keywords("我们从这里走") == {"这里"}


@pytest.mark.parametrize(
    "text",
    [
        "2023-05-01 went to a LGBTQ support group\n2023-05-07 painted a sunrise; the lake at dawn\nCaroline",
        "2024-03-02 老家在成都，喜欢吃火锅\n2024-03-09 搬到上海了\n小李",
        "Café naïve ﬁne\n北京 Beijing trip\n\n2024 ｆｕｌｌ-width ＡＢＣ 東京",
        "single line, no break",
    ],
)
def test_tokenize_lines_is_tokenize_of_the_whole_text(text):
    assert tokenize_lines(text) == tokenize(text) == tokenize(text.replace("\n", " "))


def test_lazy_tokens_answer_as_the_full_token_set_and_load_jieba_only_for_cjk_words():
    """A word list of English and Chinese answers membership exactly as ``set(tokenize(text))``, whichever
    kind of word is asked first; an English word alone never loads jieba (the CLI's start-up budget)."""
    text = "what when who 什么 什么时候 谁 哪里 ｶﾀｶﾅ favourite Ｆｕｌｌ don't running"
    full = set(tokenize(text))
    probes = [*full, "what", "zzz", "full", "什", "时候", "カタカナ", "run", "dont", ""]
    for first in ("what", "什么"):
        lazy = LazyTokens(text)
        assert (first in lazy) == (first in full)
        assert [p in lazy for p in probes] == [p in full for p in probes]
    script = (
        "import sys\n"
        "from retrieval.router.query import keywords\n"
        "print(keywords('When did Caroline go to the support group?', ['Caroline']), 'rjieba' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['support', 'group'] False"
