"""Patterns compiled on first use (language/lazy_re.py): they answer as ``re.compile`` would, and the extraction
modules load without compiling their rules."""

from __future__ import annotations

import copy
import pickle
import re
import subprocess
import sys

from language.extract.screen import needs, screened
from language.lazy_re import LazyPattern, lazy

TEXTS = ["Ann moved to Paris in 2021", "ann MOVED to paris", "no move here", "", "移居巴黎 moved to Rome, moved to Oslo"]


def test_a_lazy_pattern_answers_as_the_compiled_one():
    src, flags = r"(?i)\bmoved? to (?P<city>[A-Z]\w+)", re.ASCII
    want, got = re.compile(src, flags), lazy(src, flags)
    assert "_compiled" not in got.__dict__ and got.pattern == src  # nothing compiled yet
    for text in TEXTS:
        assert [m.span() for m in got.finditer(text)] == [m.span() for m in want.finditer(text)]
        assert (got.search(text) and got.search(text).span()) == (want.search(text) and want.search(text).span())
        assert got.findall(text) == want.findall(text) and got.split(text) == want.split(text)
        assert got.sub("<\\g<city>>", text) == want.sub("<\\g<city>>", text) and got.subn("", text) == want.subn("", text)
        assert bool(got.match(text)) == bool(want.match(text)) and bool(got.fullmatch(text)) == bool(want.fullmatch(text))
    assert (got.flags, got.groups, got.groupindex) == (want.flags, want.groups, want.groupindex)
    assert got.compiled is got.compiled and isinstance(got.compiled, re.Pattern)
    assert "search" in vars(got)  # from now on the compiled pattern's own method, no __getattr__ call
    assert copy.deepcopy(got) is got and copy.copy(got) is got
    again = pickle.loads(pickle.dumps(got))
    assert again.pattern == src and again.search("moved to Oslo")["city"] == "Oslo"
    fresh = lazy(src, flags)
    assert needs(fresh) == needs(want)  # what a screen reads off it
    assert [m.span() for m in screened(lazy(src, flags)).finditer(TEXTS[0])] == [m.span() for m in want.finditer(TEXTS[0])]


def test_the_extraction_modules_load_without_compiling_their_rules():
    script = (
        "import re, sys\n"
        "n = [0]\n"
        "real = re.compile\n"
        "def counting(*a, **k):\n"
        "    n[0] += 1\n"
        "    return real(*a, **k)\n"
        "re.compile = counting\n"
        "import language.extract.slots, language.extract.event_slots, language.time.rules, streams.sensitive\n"
        "import retrieval.router.slot_cues\n"
        "print(n[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert int(out) < 60, out  # 379 patterns compiled at import before; what is left is other modules'
    assert isinstance(lazy("x"), LazyPattern)
