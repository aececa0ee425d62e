"""The CLI's one convention for a chat (``--chat``; the old positional form still works) and its errors:
a bad value is one line ``error: …`` with exit status 2, never a traceback."""

from __future__ import annotations

import json

import pytest

from memstream.cli import app
from memstream.cli_common import run_cli


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSTREAM_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("MEMSTREAM_EMBEDDER", "none")
    monkeypatch.chdir(tmp_path)
    rows = [{"chat_id": "c1", "message_id": f"m{i}", "sender": "alice", "ts": f"2024-03-04T09:3{i}:00+08:00",
             "text": text} for i, text in enumerate(["The launch is on Friday March 8.", "Bob writes the notes."])]
    (tmp_path / "chat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert run_cli(app, ["ingest", "chat.jsonl"]) == 0
    return tmp_path


@pytest.mark.parametrize("argv", [
    ["query", "launch"],  # no chat
    ["query", "--chat", "a/b", "launch"],  # not a chat id
    ["query", "--chat", "c1", "   "],  # blank question
    ["query", "--chat", "c1", "launch", "--k", "0"],
    ["memories", "a/b"],
    ["export", "c1", "--chat", "c2"],  # two different chats
    ["delete"],
    ["topics", "--chat", "a/b"],
    ["resegment", "--chat", "c1", "--since", "yesterday"],
    ["ingest", "missing.jsonl"],
    ["ingest", "--format", "xml", "chat.jsonl"],
    ["--log-level", "LOUD", "memories", "--chat", "c1"],
    ["no-such-command"],
])
def test_a_bad_value_is_one_error_line_and_status_2(data, capsys, argv):
    capsys.readouterr()
    assert run_cli(app, argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize(("new", "old"), [
    (["query", "--chat", "c1", "When is the launch?"], ["query", "c1", "When is the launch?"]),
    (["memories", "--chat", "c1"], ["memories", "c1"]),
])
def test_the_old_positional_chat_still_works_with_a_note(data, capsys, new, old):
    capsys.readouterr()
    assert run_cli(app, new) == 0
    first = capsys.readouterr()
    assert run_cli(app, old) == 0
    second = capsys.readouterr()
    assert "launch" in first.out.lower() and second.out == first.out
    assert "deprecated" in second.err and "deprecated" not in first.err


def test_export_takes_the_chat_as_an_option(data):
    assert run_cli(app, ["export", "--chat", "c1", "--out", "c1.json"]) == 0
    exported = json.loads((data / "c1.json").read_text(encoding="utf-8"))
    assert exported["chat_id"] == "c1" and [m["message_id"] for m in exported["messages"]] == ["m0", "m1"]
