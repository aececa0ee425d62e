"""Every ``memstream …`` command in README.md's code blocks runs as written on a fresh data dir.

Each code block gets a fresh data dir and working directory holding ``examples/chat.jsonl`` (the sample chat
the README ingests: team-alpha, with bob, a launch date and a change of plan), ingested first. Optional parts in brackets are
run too where they are concrete (``[--user bob]``; ``read|write`` -> the first; ``[--key ID]``, a
placeholder, is left out); an example value that stands for something the reader has (a key id) is
replaced by the real one. A command passes when it exits 0 with no traceback. The few commands not run
here are in ``NOT_RUN`` with the reason; a test checks each still names a README command.

The ``curl`` lines of the code blocks run too, against a live ``memstream serve`` of such a data dir, with a
real key for the ``msk_…`` placeholder: each must get a 200 and a retrieval answer.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from memstream.cli import app
from memstream.cli_common import run_cli

README = Path(__file__).resolve().parents[3] / "README.md"
EXAMPLE = README.parent / "examples" / "chat.jsonl"  # the README's `memstream ingest examples/chat.jsonl`
NOT_RUN = {  # command prefix -> why it is not run here
    "memstream serve": "serves until stopped; the API is tested in tests/api and tests/pipeline/test_api.py",
    "memstream bench ": "a benchmark (minutes); docs/BENCHMARKS.md reproduces them",
    "memstream ingest ../shared/data/": "a whole shared data set (minutes); the readers are tested in test_formats.py",
}
EXAMPLE_KEY_ID = "3f2a9c01be77"  # `memstream keys revoke 3f2a9c01be77`: stands for a key id from `keys list`


def readme_blocks(command: str = "memstream") -> list[list[str]]:
    """The ``command …`` lines of each fenced code block, in order."""
    blocks, current, inside = [], [], False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if inside and current:
                blocks.append(current)
            current, inside = [], not inside
        elif inside and line.startswith(command + " "):
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
    (work / "examples").mkdir(parents=True)
    shutil.copy(EXAMPLE, work / "examples" / "chat.jsonl")
    monkeypatch.chdir(work)
    monkeypatch.setenv("MEMSTREAM_DATA_DIR", str(data))
    monkeypatch.delenv("MEMSTREAM_EMBEDDER", raising=False)
    assert run_cli(app, ["ingest", "examples/chat.jsonl"]) == 0
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


CURLS = [line for block in readme_blocks("curl") for line in block]


def test_the_readme_has_a_curl_example():
    assert CURLS and all("localhost:8080" in line for line in CURLS)


@pytest.mark.parametrize("line", CURLS, ids=lambda line: line[:60])
def test_readme_curl_gets_an_answer_from_a_live_server(line, tmp_path):
    from tests.live_server import child_env, memstream_cmd, running_server

    data = tmp_path / "data"
    for args in (["ingest", str(EXAMPLE), "--embedder", "none"],
                 ["keys", "create", "--name", "readme", "--scope", "read", "--chat", "team-alpha"]):  # fmt: skip
        made = subprocess.run(memstream_cmd(*args, "--data-dir", str(data)), capture_output=True, text=True,
                              timeout=300, env=child_env())  # fmt: skip
        assert made.returncode == 0, made.stderr[-800:]
    token = made.stdout.split()[-1]
    with running_server(data) as url:
        argv = [a.replace("msk_…", token).replace("localhost:8080", url) for a in shlex.split(line)]
        proc = subprocess.run([*argv, "--silent", "--show-error", "--noproxy", "*", "--write-out", "\n%{http_code}"],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    body, status = proc.stdout.rsplit("\n", 1)
    assert status == "200", f"{line}\n  -> {status}: {body[:400]}"
    answer = json.loads(body)
    assert answer["items"] and "launch" in answer["context"].lower()
