"""The inspector in a real browser: headless Chromium (driven by Playwright) on the demo data behind a real
``memstream serve``; runs queries, checks what the page shows, and takes the screenshots (saved in docs/ with
``MEMSTREAM_UPDATE_SCREENSHOTS=1``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.live_server import child_env, memstream_cmd, running_server

DOCS = Path(__file__).parents[2] / "docs"
WIDTH, HEIGHT = 1440, 1000


def chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
    path = chromium()
    if path is None:
        pytest.skip("no Chromium on this machine: `bash ops/browser.sh` installs Debian's (needs root and apt)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


def memstream(*args: str) -> str:
    done = subprocess.run(memstream_cmd(*args), capture_output=True, text=True, env=child_env(), timeout=600,
                          cwd=Path(__file__).parents[2])  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory, browser):
    """`memstream demo`'s data, plus a second segmentation version of team-alpha (so versions show)."""
    data = tmp_path_factory.mktemp("ui") / "demo"
    memstream("demo", "--data-dir", str(data))
    memstream("resegment", "--chat", "team-alpha", "--since", "2024-01-01", "--set", "threshold=2.5",
              "--reason", "finer topics", "--data-dir", str(data))  # fmt: skip
    with running_server(data, embedder=None) as url:
        yield url, data


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}, device_scale_factor=1)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


def ask(page, query: str) -> None:
    page.fill("#query", query)
    page.click("#ask button[type=submit]")
    page.wait_for_function("document.querySelector('#trace .trace') && document.body.dataset.busy === '0'")


def test_the_inspector_shows_a_chat_and_the_routed_trace_of_a_query(demo, page, tmp_path):
    url, _ = demo
    # the README's screenshots are written into docs/ only when asked for (a test run leaves the tree as it was)
    shots = DOCS if os.environ.get("MEMSTREAM_UPDATE_SCREENSHOTS") == "1" else tmp_path
    page.goto(f"{url}/ui#chat=team-alpha")
    page.wait_for_selector("#timeline table.timeline")
    page.wait_for_selector("#graph svg.graph")
    page.wait_for_selector("#memories table.memories")
    assert page.input_value("#chat") == "team-alpha"
    assert page.locator("#chat option").all_inner_texts() == ["dm-alice", "team-alpha"]

    # the timeline: every message, coloured by topic, with both segmentation versions and the moves
    assert page.locator("#timeline tr.msg").count() == 21
    assert page.locator("#timeline th.vcol").all_inner_texts()[1].startswith("v2")
    assert page.locator("#timeline td.cell.moved").count() > 0
    assert page.locator("#timeline .legend .badge.superseded").count() >= 1
    assert "Segmentation versions and their diff" in page.inner_text("#timeline")
    # memory records with their versions: 小王 moved from Beijing to Hangzhou
    beijing = page.locator("#memories tr.mem.old", has_text="北京朝阳区").first
    assert "→" in beijing.inner_text() and "北京" in (beijing.get_attribute("title") or "")
    assert page.locator("#memories tr.mem:not(.old)", has_text="杭州").count() >= 1

    ask(page, "When is the Atlas launch?")
    trace = page.inner_text("#trace")
    assert "query type: temporal_reasoning" in trace and "answered" in trace
    assert "bm25 rank" in trace and "knn rank" in trace and "March 11" in trace
    tokens = int(page.inner_text("#trace .tokens").split()[0])
    assert 0 < tokens <= 1500
    page.hover("#trace table.ranks tbody tr >> nth=0")  # hovering an item lights up its source messages
    assert page.locator("#timeline tr.msg.hl").count() >= 1
    page.mouse.move(0, 0)
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / "inspector.png"), full_page=True)
    page.locator("#trace").screenshot(path=str(shots / "inspector-trace.png"))

    page.click("#graph .entities button:text-is('小王')")
    page.wait_for_function("document.querySelector('#graph .entities button.on')?.textContent === '小王'")
    assert page.locator("#graph svg .edge.invalid").count() >= 1  # lives_in Beijing, invalidated
    assert "杭州西湖区" in page.inner_text("#graph")
    page.locator("#graph").screenshot(path=str(shots / "inspector-graph.png"))
    assert all((shots / f"inspector{s}.png").stat().st_size > 1000 for s in ("", "-trace", "-graph"))

    ask(page, "What is Alice's blood type?")
    assert page.locator("#trace .badge.abstain").count() == 1
    assert "reason:" in page.inner_text("#trace")


def wait_for_keys(url: str, within_s: float = 10.0) -> None:
    """A key created by the CLI counts once the server's key cache refreshes (``AuthGate.ttl``, 1 s)."""
    deadline = time.monotonic() + within_s
    while httpx.get(f"{url}/ui/chats").status_code != 401:
        assert time.monotonic() < deadline, "the server never started asking for the new key"
        time.sleep(0.1)


def test_the_inspector_respects_api_keys(demo, page):
    url, data = demo
    token = memstream("keys", "create", "--name", "ui-test", "--scope", "read", "--chat", "dm-alice",
                      "--data-dir", str(data)).strip().split()[-1]  # fmt: skip
    wait_for_keys(url)
    page.goto(f"{url}/ui#chat=team-alpha")
    page.wait_for_function("document.querySelector('#status').textContent.includes('API key')")
    assert "API key" in page.inner_text("#chat") + page.inner_text("#status")
    page.fill("#key", token)
    page.click("#keyform button")
    page.wait_for_selector("#timeline table.timeline")
    assert page.locator("#chat option").all_inner_texts() == ["dm-alice"]  # only the chat the key reaches
    assert "dentist" in page.inner_text("#timeline")
    denied = httpx.get(f"{url}/ui/chats/team-alpha/timeline", headers={"Authorization": f"Bearer {token}"})
    assert denied.status_code == 403 and "team-alpha" not in page.inner_text("#timeline")
    assert httpx.get(f"{url}/ui/chats/dm-alice/memories").status_code == 401
