"""Every ``memstream …`` command in README.md's code blocks runs as written on a fresh data dir.

Each code block gets a fresh data dir and working directory holding ``chat.jsonl`` (the bundled demo chat:
team-alpha, with bob, a launch date and a change of plan), ingested first. Optional parts in brackets are
run too where they are concrete (``[--user bob]``; ``read|write`` -> the first; ``[--key ID]``, a
placeholder, is left out); an example value that stands for something the reader has (a key id) is
replaced by the real one. A command passes when it exits 0 with no traceback. The few commands not run
here are in ``NOT_RUN`` with the reason; a test checks each still names a README command.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
from importlib import resources
from pathlib import Path

import pytest

from memstream.cli import app
from memstream.cli_common import run_cli

README = Path(__file__).resolve().parents[3] / "README.md"
NOT_RUN = {  # command prefix -> why it is not run here
    "memstream serve": "serves until stopped; the API is tested in tests/api and tests/pipeline/test_api.py",
    "memstream bench ": "a benchmark (minutes); docs/BENCHMARKS.md reproduces them",
    "memstream ingest ../shared/data/": "a whole shared data set (minutes); the readers are tested in test_formats.py",
}
EXAMPLE_KEY_ID = "3f2a9c01be77"  # `memstream keys revoke 3f2a9c01be77`: stands for a key id from `keys list`


def readme_blocks() -> list[list[str]]:
    """The ``memstream …`` lines of each fenced code block, in order."""
    blocks, current, inside = [], [], False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if inside and current:
                blocks.append(current)
            current, inside = [], not inside
        elif inside and line.startswith("memstream "):
            current.append(line)
    return blocks


def as_run(line: str) -> list[str]:
    """The argv a README line runs: comment dropped, concrete optional groups kept, placeholders left out."""

    def group(m: re.Match) -> str:
        words = m.group(1).split()
        if any(w.isupper() or w in ("C", "U", "E") for w in words[1:]):
            return ""  # a placeholder such as [--key ID]
        return " " + " ".join(w.split("|")[0] for w in words)

    line = re.sub(r"\s\[([^\[\]]+)\]", group, line)
    return shlex.split(line, comments=True)[1:]


def skipped(line: str) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if line.startswith(prefix)), None)


def key_id(data_dir: Path) -> str:
    from memstream.keys import KeyStore

    store = KeyStore(data_dir / "keys.db")
    asyncio.run(store.open())
    try:
        return store.list_keys()[0].key_id
    finally:
        asyncio.run(store.close())


BLOCKS = readme_blocks()


def test_the_readme_shows_commands_and_every_exception_names_one():
    lines = [line for block in BLOCKS for line in block]
    assert len(lines) >= 20
    for prefix in NOT_RUN:
        assert any(line.startswith(prefix) for line in lines), f"NOT_RUN names no README command: {prefix}"


def test_optional_groups_and_placeholders():
    assert as_run("memstream delete --chat team-alpha [--user bob]   # now") == [
        "delete", "--chat", "team-alpha", "--user", "bob"]  # fmt: skip
    assert as_run("memstream keys audit --chat a [--key ID] [--action read|write] [--json]") == [
        "keys", "audit", "--chat", "a", "--action", "read", "--json"]  # fmt: skip
    assert as_run("""memstream keys create --name ops --scope admin --chat '*'   # admin""")[-1] == "*"


@pytest.mark.parametrize("block", range(len(BLOCKS)), ids=lambda i: BLOCKS[i][0][:60])
def test_readme_block_runs(block, tmp_path, monkeypatch, capsys):
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    shutil.copy(Path(str(resources.files("memstream") / "data" / "demo_chat.jsonl")), work / "chat.jsonl")
    monkeypatch.chdir(work)
    monkeypatch.setenv("MEMSTREAM_DATA_DIR", str(data))
    monkeypatch.delenv("MEMSTREAM_EMBEDDER", raising=False)
    assert run_cli(app, ["ingest", "chat.jsonl"]) == 0
    failures = []
    for line in BLOCKS[block]:
        if skipped(line):
            continue
        argv = [key_id(data) if a == EXAMPLE_KEY_ID else a for a in as_run(line)]
        capsys.readouterr()
        status = run_cli(app, argv)
        err = capsys.readouterr().err
        if status != 0 or "Traceback" in err:
            failures.append(f"{line}\n  -> exit {status}: {err.strip()[-400:]}")
    assert not failures, "\n".join(failures)
