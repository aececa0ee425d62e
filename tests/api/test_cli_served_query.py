"""``memstream query`` asks a running ``memstream serve`` of its data dir (memstream/served.py): the same
answer as in its own process, the announcement gone when the server stops, and the process answering
itself when the server is gone or uses another embedder. A server that refuses the key (or wants one) ends
the command: answering from disk would step around the keys."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest

from memstream import served
from memstream.settings import Settings
from tests.live_server import child_env, ingested, memstream_cmd, running_server

TEXTS = ["I moved to Hangzhou last spring.", "Nice! How is the weather there?", "Rainy, but I love the lake.",
         "Do you still play the violin?", "Yes, every Sunday with a quartet."]  # fmt: skip


@pytest.fixture
def data(tmp_path) -> Path:
    return ingested(tmp_path, TEXTS)


def query(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    cmd = memstream_cmd("query", "--chat", "c1", *args, "--data-dir", str(data), "--json")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=child_env(**env))


def asked(url: str) -> int:
    """How many retrievals the server answered (its /metrics)."""
    text = httpx.get(url + "/metrics", timeout=10).text
    return int(float(next(ln.split()[-1] for ln in text.splitlines() if ln.startswith("memstream_retrieve_total"))))


def answer(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-800:]
    out = json.loads(proc.stdout)
    out.pop("trace", None)  # timings
    return {k: v for k, v in out.items() if k != "latency_ms"}


def test_a_running_server_answers_and_says_the_same(data):
    here = answer(query(data, "Where does ann live?", "--local"))
    with running_server(data) as url:
        told = served.find(data)
        assert told is not None and told.url == url and told.embedder == "none"
        there = query(data, "Where does ann live?")
        assert answer(there) == here and any("Hangzhou" in it["text"] for it in here["items"])
        assert asked(url) == 1
        bad = query(data, "   ")  # the server's 422, said as the CLI says an error
        assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr
        assert answer(query(data, "Where does ann live?", "--local")) == here
        assert answer(query(data, "Where does ann live?", "--embedder", "minilm"))["items"]
        assert asked(url) == 1  # neither went to the server: asked to answer here, or with another model
    assert served.find(data) is None and not (data / "run" / "serve.json").exists()  # gone with the server
    assert answer(query(data, "Where does ann live?")) == here  # answered here again


def make_key(data: Path, chat: str) -> str:
    made = subprocess.run(memstream_cmd("keys", "create", "--name", "k", "--scope", "read", "--chat", chat,
                                        "--data-dir", str(data)), capture_output=True, text=True, timeout=120,
                          env=child_env())  # fmt: skip
    assert made.returncode == 0, made.stderr
    return made.stdout.split()[-1]


def refused(proc: subprocess.CompletedProcess) -> str:
    """The one error line of a command the server's refusal ended (nothing answered from disk)."""
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout[-400:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "answering here" not in proc.stderr, proc.stderr
    return lines[0]


def test_a_server_that_wants_a_key_ends_the_command_without_one(data):
    with running_server(data, env={"MEMSTREAM_SERVE__AUTH": "required"}):  # no key exists: every request is refused
        line = refused(query(data, "Where does ann live?"))
    assert "wants an API key" in line and "--api-key" in line and "--local" in line


def test_a_key_refused_for_the_chat_ends_the_command(data):
    other = make_key(data, "another-chat")  # a real key, for a chat that is not c1
    with running_server(data) as url:
        line = refused(query(data, "Where does ann live?", "--api-key", other))
        assert f"{url} refused the key: 403" in line
        line = refused(query(data, "Where does ann live?", "--api-key", "msk_000000000000_" + "x" * 30))
        assert "refused the key: 401" in line
    assert answer(query(data, "Where does ann live?", "--local"))["items"]  # --local still reads the data dir


def test_a_question_the_server_finds_invalid_is_said_in_plain_words(data):
    with running_server(data):
        proc = query(data, "y" * 5000)
    assert proc.returncode == 2 and proc.stderr.strip() == "error: query is too long: 5000 characters, at most 4000"


def test_an_unknown_chat_asked_of_a_server_is_an_error(data):
    with running_server(data):
        proc = subprocess.run(memstream_cmd("query", "--chat", "c2", "Where does ann live?", "--data-dir", str(data)),
                              capture_output=True, text=True, timeout=300, env=child_env())  # fmt: skip
    assert proc.returncode == 2 and "no chat 'c2'" in proc.stderr and "c1" in proc.stderr, proc.stderr


def test_a_copied_data_dir_does_not_ask_the_original_server(data, tmp_path):
    import shutil

    with running_server(data):
        copy = tmp_path / "copy"
        shutil.copytree(data, copy)  # its run/serve.json names the original, whose server is alive
        assert served.find(data) is not None and served.find(copy) is None


def test_stale_foreign_and_silent_announcements_are_ignored(tmp_path):
    import socket
    import threading

    with served.announce(tmp_path, "0.0.0.0", 1, "none", "t0k") as path:
        told = served.find(tmp_path)
        assert told == served.Served("http://127.0.0.1:1", os.getpid(), "none", "t0k")
        body = json.loads(path.read_text(encoding="utf-8"))
        for change in ({"pid": 2**22 + 1}, {"url": "http://10.1.2.3:8080"}, {"data_dir": "/elsewhere"}):
            path.write_text(json.dumps(body | change), encoding="utf-8")
            assert served.find(tmp_path) is None, change  # no such process / not loopback / another data dir
        path.write_text("{not json", encoding="utf-8")
        assert served.find(tmp_path) is None
    assert path.exists()  # not this process's announcement any more: left alone
    with socket.socket() as sock:  # accepts, then says something that is not HTTP, or nothing at all
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]

        def talk() -> None:
            for reply in (b"SSH-2.0-OpenSSH\r\n", None):
                conn, _ = sock.accept()
                if reply:
                    conn.sendall(reply)
                    conn.close()
                else:
                    threading.Event().wait(2)
                    conn.close()

        threading.Thread(target=talk, daemon=True).start()
        server = served.Served(f"http://127.0.0.1:{port}", os.getpid(), None, "t0k")
        assert served.ask(server, "/v1/retrieve", {}, "msk_x") is None  # not HTTP
        assert served.ask(server, "/v1/retrieve", {}, None, timeout=0.5) is None  # silent
    assert served.ask(served.Served("http://127.0.0.1:1", 1, None, "t"), "/v1/retrieve", {}, None) is None


def test_an_answer_without_the_announced_token_is_not_taken(data):
    with running_server(data) as url:
        told = served.find(data)
        impostor = served.Served(url, told.pid, told.embedder, "another-token")
        payload = {"chat_id": "c1", "query": "Where does ann live?"}
        assert served.ask(impostor, "/v1/retrieve", payload, None) is None
        answer = served.ask(told, "/v1/retrieve", payload, None)
        assert answer is not None and answer.ok and served.is_retrieval_response(answer.body)
    assert not served.is_retrieval_response("{}") and not served.is_retrieval_response("<html>")


@pytest.mark.parametrize("env", [{}, {"MEMSTREAM_DATA_DIR": "{tmp}"}, {"MEMSTREAM_DATA_DIR": ""},
                                 {"memstream_data_dir": "{tmp}"}])  # fmt: skip
def test_the_data_dir_is_the_settings_one(tmp_path, monkeypatch, env):
    for key in [k for k in os.environ if k.upper() == served.DATA_DIR_ENV]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value.format(tmp=tmp_path))
    assert served.data_dir_of(None) == Settings().data_dir
    assert served.data_dir_of(tmp_path / "x") == tmp_path / "x"
    assert served.url_of("::", 8080) == "http://[::1]:8080" and served.url_of("10.0.0.2", 80) == "http://10.0.0.2:80"


def test_settings_that_change_an_answer_keep_the_question_here(monkeypatch):
    server = served.Served("http://127.0.0.1:1", os.getpid(), "minilm", "t")
    for key in [k for k in os.environ if k.upper().startswith("MEMSTREAM_")]:
        monkeypatch.delenv(key)
    assert set(served.ANSWER_SETTINGS) <= set(Settings.model_fields)
    monkeypatch.setenv("MEMSTREAM_TEST_REDIS_URL", "redis://x")  # not a setting: no effect
    monkeypatch.setenv("MEMSTREAM_LOG_LEVEL", "INFO")
    assert served.same_settings(server, None) and served.same_settings(server, "minilm")
    assert not served.same_settings(server, "none")
    monkeypatch.setenv("memstream_embedder", "none")  # as the settings read it: any case
    assert not served.same_settings(server, None)
    monkeypatch.delenv("memstream_embedder")
    for key in ("MEMSTREAM_RETRIEVAL__RRF_K", "MEMSTREAM_STORE_URL", "MEMSTREAM_LLM__BASE_URL"):
        monkeypatch.setenv(key, "1")
        assert not served.same_settings(server, None), key
        monkeypatch.delenv(key)


def test_odd_pids_in_the_announcement_are_no_server(tmp_path):
    with served.announce(tmp_path, "127.0.0.1", 1, "none", "t") as path:
        body = json.loads(path.read_text(encoding="utf-8"))
        for pid in (0, -1, 10**30):
            path.write_text(json.dumps(body | {"pid": pid}), encoding="utf-8")
            assert served.find(tmp_path) is None, pid


def test_chat_text_is_printed_as_written(tmp_path):
    """Square brackets in chat text are not rich markup: "[/quote]" crashed query and memories."""
    rows = [{"chat_id": "c2", "message_id": "m1", "sender": "carol", "ts": "2024-03-01T09:00:00Z",
             "text": "My forum signature ends with [/quote] and [bold red]green[/] in it."}]  # fmt: skip
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    assert subprocess.run(memstream_cmd("ingest", str(src), "--data-dir", str(data), "--embedder", "none"),
                          capture_output=True, timeout=300, env=child_env()).returncode == 0  # fmt: skip
    for args in (["query", "--chat", "c2", "forum signature", "--local"], ["memories", "--chat", "c2"]):
        proc = subprocess.run(memstream_cmd(*args, "--data-dir", str(data)), capture_output=True, text=True,
                              timeout=300, env=child_env(COLUMNS="400"))  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-600:]
        assert "[/quote]" in proc.stdout and "[bold red]green[/]" in proc.stdout, proc.stdout
