"""``memstream bench locomo`` is never silent and ends short: each pass over the questions is announced and
reported by quarters on stderr, and stdout gets a small table of the main systems (the full result goes to
OUT/locomo.json), here on a two-conversation LoCoMo file written for the test."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

from rich.console import Console

from bench.locomo_progress import MAIN, QuestionProgress
from tests.live_server import child_env, memstream_cmd

ROOT = Path(__file__).resolve().parents[3]


def conversation(sample_id: str, a: str, b: str, sessions: list[tuple[str, list[tuple[str, str]]]], qa: list) -> dict:
    conv: dict = {"speaker_a": a, "speaker_b": b}
    for n, (when, turns) in enumerate(sessions, 1):
        conv[f"session_{n}_date_time"] = when
        conv[f"session_{n}"] = [{"speaker": who, "dia_id": f"D{n}:{i + 1}", "text": text}
                                for i, (who, text) in enumerate(turns)]  # fmt: skip
    return {"sample_id": sample_id, "conversation": conv, "qa": qa}


TINY = [
    conversation("conv-a", "Nora", "Ivo", [
        ("10:00 am on 3 June, 2023", [("Nora", "I started pottery classes on Tuesdays."),
                                      ("Ivo", "Nice, I adopted a grey cat called Pebble."),
                                      ("Nora", "My first bowl cracked in the kiln, sadly.")]),
        ("6:30 pm on 20 June, 2023", [("Ivo", "Pebble knocked my coffee over this morning."),
                                      ("Nora", "I am moving to Porto in August for work.")]),
    ], [{"question": "What is the name of Ivo's cat?", "evidence": ["D1:2"], "category": 4},
        {"question": "When does Nora move to Porto?", "evidence": ["D2:2"], "category": 2},
        {"question": "What class did Nora start and how did her first piece go?", "evidence": ["D1:1", "D1:3"],
         "category": 1},
        {"question": "What instrument does Ivo play?", "evidence": ["D1:2"], "category": 5}]),
    conversation("conv-b", "Lena", "Tom", [
        ("9:15 am on 1 July, 2023", [("Lena", "I ran my first half marathon on Sunday."),
                                     ("Tom", "Congrats! I am learning Spanish on an app.")]),
        ("8:00 pm on 12 July, 2023", [("Tom", "I booked a trip to Mexico for October."),
                                      ("Lena", "I signed up for a full marathon in Berlin.")]),
    ], [{"question": "What race did Lena run first?", "evidence": ["D1:1"], "category": 4},
        {"question": "When is Tom's trip to Mexico?", "evidence": ["D2:1"], "category": 2}]),
]  # fmt: skip


def test_each_pass_is_announced_and_reported_by_quarters():
    buf = io.StringIO()
    steps = QuestionProgress(Console(file=buf, width=200), passes=2, questions=8)
    for name in ("first", "second"):
        tick = steps.step(name)
        for _ in range(8):
            tick()
    lines = [line.strip() for line in buf.getvalue().splitlines()]
    assert lines[0] == "[1/2] first: 8 questions" and lines[5] == "[2/2] second: 8 questions"
    assert [line.split(" (")[0] for line in lines[1:5]] == ["first 2/8", "first 4/8", "first 6/8", "first 8/8"]


def test_bench_locomo_shows_progress_and_ends_with_a_table(tmp_path):
    data, out = tmp_path / "tiny.json", tmp_path / "out"
    data.write_text(json.dumps(TINY), encoding="utf-8")
    proc = subprocess.run(memstream_cmd("bench", "locomo", "--data", str(data), "--out", str(out), "--embedder", "none"),
                          capture_output=True, text=True, timeout=600, env=child_env(COLUMNS="100"), cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert "ingesting into main" in proc.stderr and "[1/" in proc.stderr and "routed 6/6" in proc.stderr
    assert f"wrote {out / 'locomo.json'}" in " ".join(proc.stderr.split())
    assert len(proc.stdout.splitlines()) < 25 and "{" not in proc.stdout, proc.stdout
    shown = [name for name in MAIN if f" {name} " in proc.stdout]
    assert shown[:2] == ["routed", "oracle-routed"] and "memstream-hybrid" in shown
    result = json.loads((out / "locomo.json").read_text(encoding="utf-8"))
    assert result["questions"] == 6 and "routed-without-abstention" in result["systems"]
