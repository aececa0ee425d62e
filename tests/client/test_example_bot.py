"""docs/example_bot.py, run as a user would (a subprocess reading chat lines) against a real memstream serve."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memstream.client import Client
from tests.client.test_client import CHAT
from tests.live_server import child_env, running_server

ROOT = Path(__file__).parents[2]


def test_the_example_bot_reads_the_context_before_it_answers(tmp_path):
    with running_server(tmp_path / "data") as url:
        with Client(url) as ms:
            ms.add_messages(CHAT, flush=True)
        lines = "alice: @memo where does Wang live now?\nbob: nice weather today\nbob: @memo who is a Martian?\n"
        done = subprocess.run([sys.executable, str(ROOT / "docs" / "example_bot.py"), "--chat", "team", "--url", url],
                              input=lines, capture_output=True, text=True, env=child_env(), timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        replies = done.stdout.strip().splitlines()
        assert len(replies) == 2 and replies[0].startswith("memo: From memory (2024-03-03)")
        assert "Hangzhou" in replies[0] and "don't remember" in replies[1]
        with Client(url) as ms:
            said = [m for m in ms.export("team")["messages"] if m["sender"] == "memo"]
        assert len(said) == 2 and all(m["reply_to"] for m in said)  # the answers are in memory too
