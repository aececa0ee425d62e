"""The README's one-command scripts run as written: ``bash ops/demo.sh`` (the demo on the embedded default) and
``bash ops/look.sh PORT`` (demo data served with the inspector). ``ops/test.sh`` is what CI itself runs.

The scripts install first (``ops/install.sh``); here the suite already runs inside that install, so
``MEMSTREAM_SKIP_INSTALL=1`` keeps the running venv as it is (reinstalling it under a running test would be
unsafe), and everything after the install step runs for real."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from memstream.devservers import free_port

ROOT = Path(__file__).resolve().parents[3]
ENV = {**os.environ, "MEMSTREAM_SKIP_INSTALL": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_demo_and_look_scripts_run_as_the_readme_says(tmp_path):
    data = tmp_path / "demo"
    done = subprocess.run(["bash", "ops/demo.sh", "--data-dir", str(data), "--embedder", "none"], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "小王现在住在哪里" in done.stdout and "杭州" in done.stdout

    port = free_port()
    proc = subprocess.Popen(["bash", "ops/look.sh", str(port)], cwd=ROOT, env={**ENV, "MEMSTREAM_LOOK_DIR": str(data)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
    try:
        deadline, page = time.monotonic() + 300, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                page = httpx.get(f"http://127.0.0.1:{port}/ui", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        assert page is not None and page.status_code == 200, proc.poll()
        assert "inspector" in page.text.lower()
        assert "team-alpha" in httpx.get(f"http://127.0.0.1:{port}/ui/chats", timeout=10).text  # the demo's chats
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def test_compose_secrets_writes_a_private_password_once(tmp_path):
    """``bash ops/compose-secrets.sh`` (README, docker compose): run from a copy so the checkout's .env is untouched."""
    (tmp_path / "ops").mkdir()
    script = tmp_path / "ops" / "compose-secrets.sh"
    script.write_bytes((ROOT / "ops" / "compose-secrets.sh").read_bytes())
    for _ in range(2):  # the second run keeps the first password
        done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    env = tmp_path / ".env"
    lines = [line for line in env.read_text().splitlines() if line.startswith("ELASTIC_PASSWORD=")]
    assert len(lines) == 1 and len(lines[0]) > len("ELASTIC_PASSWORD=") + 20
    assert env.stat().st_mode & 0o777 == 0o600
