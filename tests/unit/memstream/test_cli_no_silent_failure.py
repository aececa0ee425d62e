"""The CLI never fails silently: a read of a data dir that is not there or of a chat it does not hold is an
error naming what exists (and creates nothing); input bytes that are not UTF-8 are dead-lettered, not stored
as replacement characters; deleting a chat or sender never seen needs --force; the deletion summary labels
each count on its own; a validation error is said in plain words."""

from __future__ import annotations

import json

import pytest

from memstream.cli import app
from memstream.cli_common import run_cli


def message(chat: str, mid: str, sender: str, text: str) -> dict:
    return {"chat_id": chat, "message_id": mid, "sender": sender, "ts": "2024-05-02T10:00:00+02:00", "text": text}


@pytest.fixture
def data(tmp_path, monkeypatch):
    """A data dir (BM25 only) holding two chats: 'garden' (mira, jonas) and 'book-club' (ines)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMSTREAM_DATA_DIR", raising=False)
    monkeypatch.setenv("MEMSTREAM_EMBEDDER", "none")
    rows = [message("garden", "g1", "mira", "The tomatoes need staking before the storm on Thursday."),
            message("garden", "g2", "jonas", "I will bring bamboo canes from the shed."),
            message("book-club", "b1", "ines", "Next month we read a novel about lighthouse keepers.")]  # fmt: skip
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert run_cli(app, ["ingest", "in.jsonl", "--data-dir", "d"]) == 0
    return tmp_path / "d"


def one_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", [
    ["query", "--chat", "garden", "tomatoes"],
    ["memories", "--chat", "garden"],
    ["export", "--chat", "garden", "--out", "garden.json"],
    ["topics", "--chat", "garden"],
    ["dead-letters"],
])  # fmt: skip
def test_a_read_of_a_data_dir_that_is_not_there_is_an_error_and_makes_nothing(data, tmp_path, capsys, command):
    capsys.readouterr()
    assert run_cli(app, [*command, "--data-dir", "dd"]) == 2  # a typo of "d"
    line = one_error(capsys)
    assert "no data dir at dd" in line
    assert not (tmp_path / "dd").exists() and not (tmp_path / "garden.json").exists()


@pytest.mark.parametrize("command", [
    ["query", "--chat", "gardn", "tomatoes", "--local"],
    ["memories", "--chat", "gardn"],
    ["export", "--chat", "gardn", "--out", "gardn.json"],
    ["topics", "--chat", "gardn"],
])  # fmt: skip
def test_a_read_of_an_unknown_chat_names_the_chats_there(data, tmp_path, capsys, command):
    capsys.readouterr()
    assert run_cli(app, [*command, "--data-dir", str(data)]) == 2
    line = one_error(capsys)
    assert "no chat 'gardn'" in line and "did you mean 'garden'" in line and "book-club" in line
    assert not (tmp_path / "gardn.json").exists()


def test_a_known_chat_still_answers(data, capsys):
    assert run_cli(app, ["query", "--chat", "garden", "Who brings the canes?", "--local", "--data-dir", str(data)]) == 0
    assert "bamboo" in capsys.readouterr().out


def test_lines_that_are_not_utf8_are_dead_lettered_and_the_rest_ingested(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMSTREAM_EMBEDDER", "none")
    good = json.dumps(message("cafe", "c2", "remy", "Two espressos and a croissant, please.")).encode()
    latin1 = json.dumps(message("cafe", "c1", "remy", "caf\u00e9 au lait"), ensure_ascii=False).encode("latin-1")
    (tmp_path / "mixed.jsonl").write_bytes(latin1[:-2] + b' \xff\xfe"}\n' + good + b"\n")
    assert run_cli(app, ["ingest", "mixed.jsonl", "--data-dir", "d"]) == 0
    err = capsys.readouterr().err
    assert "1 rejected to dead letters" in err and "memstream dead-letters" in err
    assert run_cli(app, ["dead-letters", "--data-dir", "d"]) == 0
    letters = capsys.readouterr().out
    assert "line 1: not UTF-8: byte 0xe9" in letters and "caf\\xe9 au lait" in letters
    assert run_cli(app, ["export", "--chat", "cafe", "--out", "cafe.json", "--data-dir", "d"]) == 0
    stored = json.loads((tmp_path / "cafe.json").read_text(encoding="utf-8"))
    assert [m["message_id"] for m in stored["messages"]] == ["c2"]
    assert "\ufffd" not in (tmp_path / "cafe.json").read_text(encoding="utf-8")


def test_deleting_a_sender_never_seen_needs_force(data, capsys):
    capsys.readouterr()
    assert run_cli(app, ["delete", "--chat", "garden", "--user", "dave", "--data-dir", str(data)]) == 2
    line = one_error(capsys)
    assert "no message of 'dave' in chat 'garden'" in line and "jonas, mira" in line and "--force" in line
    assert run_cli(app, ["delete", "--chat", "garden", "--user", "Mira", "--data-dir", str(data)]) == 2
    assert "did you mean 'mira'" in one_error(capsys)
    assert run_cli(app, ["delete", "--chat", "gardn", "--data-dir", str(data)]) == 2
    assert "no chat 'gardn'" in one_error(capsys)
    assert run_cli(app, ["delete", "--chat", "garden", "--user", "dave", "--force", "--data-dir", str(data)]) == 0
    assert "deleted dave's data in garden" in capsys.readouterr().err
    assert run_cli(app, ["delete", "--chat", "garden", "--user", "dave", "--data-dir", str(data)]) == 0  # ledgered


def test_the_deletion_summary_labels_each_count_and_adds_no_total(data, capsys):
    capsys.readouterr()
    assert run_cli(app, ["delete", "--chat", "garden", "--user", "jonas", "--data-dir", str(data)]) == 0
    said = " ".join(capsys.readouterr().err.split())
    assert said.startswith("deleted jonas's data in garden: messages 1 · memory records ")
    for label in ("graph nodes and edges", "log records", "cached vectors", "topics distilled again"):
        assert f" · {label} " in said
    assert "rows" not in said


def test_a_too_long_question_is_said_in_plain_words(data, capsys):
    capsys.readouterr()
    assert run_cli(app, ["query", "--chat", "garden", "x" * 112_500, "--local", "--data-dir", str(data)]) == 2
    assert one_error(capsys) == "error: query is too long: 112500 characters, at most 4000"
