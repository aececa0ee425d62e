"""``memstream bench throughput``: the pure parts, and the whole bench run tiny through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.throughput import _headline, judge
from bench.throughput_ingest import input_file, marginal_rss, short_input_file
from bench.throughput_profile import bucket, summarise

LOCOMO = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "locomo" / "locomo10_dev.json"
needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo dev set not at {LOCOMO}")
IRC = LOCOMO.parents[1] / "irc-disentanglement" / "dev"


def test_targets_pass_fail_and_unmeasured():
    got = judge({"ingest_msgs_per_s": 900.0, "ingest_vs_embed_only": 0.5, "cli_query_seconds": 1.5})
    assert got["ingest_msgs_per_s >= 800"] == {"value": 900.0, "bound": 800.0, "pass": True}
    assert got["ingest >= 0.8 x embed_only"]["pass"] is False
    assert got["cli query <= 1.5 s"]["pass"] is True  # the bound itself passes
    assert got["kafka (1 worker) >= embedded"] == {"value": None, "bound": 1.0, "pass": None}


def test_headline_keys_and_ratios_come_from_the_runs():
    lat = {m: {"p50": 1.0, "p95": 2.0, "p99": 3.0, "n": 4} for m in ("routed", "hybrid", "bm25")}
    r = {
        "embed_only": {"msgs_per_s": 200.0},
        "ingest": {"msgs_per_s": 100.0, "messages": 1000, "rss_base_mb": 100.0, "rss_peak_mb": 150.0},
        "ingest_no_embedder": {"msgs_per_s": 400.0},
        "replay": {"seconds": 2.0},
        "kafka": {"1": {"msgs_per_s": 120.0}, "2": {"error": "no Redis"}},
        "retrieval": {"locomo": lat, "large": None},
        "cli_query": {"median": 0.8},
    }
    _headline(r)
    assert r["ingest_msgs_per_s"] == 100.0 and r["embed_only_msgs_per_s"] == 200.0
    assert r["replay_msgs_per_s"] == 500.0 and r["kafka_msgs_per_s"] == {"1": 120.0, "2": None}
    assert r["ratios"] == {"ingest_vs_embed_only": 0.5, "kafka_1_vs_embedded": 1.2, "ingest_vs_embed_only_cpu": None,
                           "kafka_1_vs_embedded_cpu": None, "ingest_embedded_texts_per_msg": None}  # fmt: skip
    assert r["rss_mb_per_100k_msgs"] == 5000.0 and r["rss_growth_mb"] == 50.0  # 50 MB over 1,000 messages
    assert r["retrieval_ms"] == {"locomo": lat}
    assert r["targets"]["routed p95 <= 15 ms (LoCoMo size)"]["pass"] is True
    assert r["targets"]["routed p95 <= 30 ms (large chat)"]["pass"] is None
    r["ingest"] |= {"rss_mb_per_100k_msgs_marginal": 120.0, "msgs_per_cpu_s": 50.0, "embedded_texts": 2500}
    r["embed_only"]["msgs_per_cpu_s"] = 100.0
    _headline(r)  # the slope over the run's second half, when the run measured it
    assert r["rss_mb_per_100k_msgs"] == 120.0
    r["ingest_rss"] = {"rss_mb_per_100k_msgs_steady": 45.0, "rss_mb_per_100k_msgs_marginal": 130.0}
    _headline(r)  # the warm process's growth over its extra passes, measured in a run of its own
    assert r["rss_mb_per_100k_msgs"] == 45.0
    assert r["ratios"]["ingest_vs_embed_only_cpu"] == 0.5 and r["ratios"]["ingest_embedded_texts_per_msg"] == 2.5
    r["kafka"]["1"]["msgs_per_worker_cpu_s"] = 40.0
    _headline(r)  # one Kafka run: its messages per worker CPU-second against the ingest's
    assert r["ratios"]["kafka_1_vs_embedded_cpu"] == 0.8
    r["kafka_1_pairs"] = [{"embedded": 100.0, "kafka": 120.0, "ratio": 1.2, "ratio_cpu": 0.7},
                          {"embedded": 100.0, "kafka": 80.0, "ratio": 0.8, "ratio_cpu": 0.9},
                          {"embedded": 100.0, "kafka": None, "ratio": None, "ratio_cpu": None},
                          {"embedded": 90.0, "kafka": 81.0, "ratio": 0.9, "ratio_cpu": 0.8}]  # fmt: skip
    _headline(r)  # paired runs: their median ratio, an unmeasured pair left out
    assert r["ratios"]["kafka_1_vs_embedded"] == 0.9 and r["ratios"]["kafka_1_vs_embedded_cpu"] == 0.8
    assert r["targets"]["kafka (1 worker) >= embedded"] == {"value": 0.9, "bound": 1.0, "pass": False}


def test_marginal_rss_is_the_slope_over_the_second_half():
    warm = [(10, 300.0), (20, 320.0)]  # start-up growth: left out
    steady = [(x, 320.0 + 0.01 * (x - 20)) for x in range(30, 210, 10)]  # 0.01 MB per record
    got = marginal_rss(warm + steady, messages=100)  # 200 records for 100 messages: 2 records a message
    assert got == 2000.0  # 0.01 MB x 2 records x 100k messages
    assert marginal_rss(warm, messages=100) is None  # too few samples to tell


def test_peak_rss_is_the_run_processes_own_not_its_parents():
    """The bench parent holds big buffers; a run it starts must not report the parent's high-water mark
    (``ru_maxrss`` is carried across fork + exec on Linux)."""
    import resource
    import subprocess
    import sys

    ballast = b"x" * (300 * 2**20)  # touched pages: the parent's peak is now >= 300 MB
    parent_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = subprocess.run([sys.executable, "-c", "from bench.throughput_ingest import _peak_mb; print(_peak_mb())"],
                         capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[3])  # fmt: skip
    del ballast
    child = float(out.stdout)
    assert parent_peak >= 300
    assert 5 < child < parent_peak - 200


def test_profile_buckets_split_the_embedder_from_the_stages(tmp_path):
    loop = "MainThread;run (asyncio/runners.py:190);BaseEventLoop._run_once (asyncio/base_events.py:1922)"
    stage = "MainThread;_run_stage (streams/runner.py:82);ConsolidateStage.process (streams/stages/consolidate.py:52)"
    raw = tmp_path / "spy.txt"
    raw.write_text(
        f"thread (1): {stage};SQLiteStore.similar_memories (backends/sqlite/store.py:233) 3\n"
        f"thread (1): {stage};decide (agents/consolidator.py:10) 2\n"
        f"thread (1): {loop};select (selectors.py:468) 4\n"
        "thread (2): asyncio_0;_worker (concurrent/futures/thread.py:83);_encode (backends/embed/onnx.py:99);"
        "Session.run (onnxruntime/capi/x.py:1) 6\n"
        "thread (3): asyncio_1;_worker (concurrent/futures/thread.py:83);wait (threading.py:320) 50\n",
        encoding="utf-8",
    )
    got = summarise(raw)
    assert got["wall_samples"] == 9  # the event-loop thread is the clock
    assert got["wall_share"] == {"event loop idle (waiting for the embedder thread)": 0.444,
                                 "stage consolidate: store": 0.333, "stage consolidate": 0.222}  # fmt: skip
    assert got["embedder_threads_busy"] == {"embed: model forward": 0.667}  # the idle pool thread is left out
    assert bucket(["_encode (backends/embed/onnx.py:1)", "Tokenizer.encode_batch (x.py:1)"], "t: asyncio_0") == (
        "embed: tokenize"
    )


@needs_locomo
def test_input_interleaves_chats_and_can_split_sessions(tmp_path):
    shape = input_file(LOCOMO, tmp_path / "a.jsonl", messages=12)
    rows = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert shape == {"messages": 12, "chats": len({r["chat_id"] for r in rows})} and shape["chats"] > 1
    assert rows[0]["chat_id"] != rows[1]["chat_id"]  # live traffic of several chats, not one chat after another
    many = input_file(LOCOMO, tmp_path / "b.jsonl", messages=None, per_session=True)
    whole = input_file(LOCOMO, tmp_path / "c.jsonl", messages=None)
    assert many["messages"] == whole["messages"] and many["chats"] > 5 * whole["chats"]


@pytest.mark.skipif(not IRC.is_dir(), reason=f"IRC dev split not at {IRC}")
def test_short_input_interleaves_irc_files_as_chats(tmp_path):
    shape = short_input_file(IRC, tmp_path / "s.jsonl", messages=40)
    rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert shape["messages"] == len(rows) == 40 and shape["chats"] == len({r["chat_id"] for r in rows}) > 1
    assert rows[0]["chat_id"] != rows[1]["chat_id"] and all(r["text"].strip() for r in rows)
    assert shape["mean_chars"] == round(sum(len(r["text"]) for r in rows) / 40, 1) < 138  # IM-length lines


@needs_locomo
@pytest.mark.slow
def test_bench_throughput_runs_tiny_and_writes_every_figure(tmp_path):
    from bench.cli import bench_app

    out = tmp_path / "out"
    args = ["throughput", "--out", str(out), "--data", str(LOCOMO), "--messages", "30", "--large-docs", "200",
            "--questions", "4", "--kafka-workers", "1", "--cli-runs", "1", "--kafka-pairs", "2",
            "--short", str(IRC) if IRC.is_dir() else ""]  # fmt: skip
    res = CliRunner().invoke(bench_app, args)
    assert res.exit_code == 0, res.output
    r = json.loads((out / "throughput.json").read_text())
    assert r["input"]["messages"] == 30 and r["ingest"]["messages"] == 30
    for key in ("embed_only_msgs_per_s", "ingest_msgs_per_s", "ingest_msgs_per_s_no_embedder", "replay_msgs_per_s",
                "cli_query_seconds", "cli_query_served_seconds"):  # fmt: skip
        assert isinstance(r[key], float) and r[key] > 0, (key, r.get(key), r.get("ingest"), r.get("cli_query"))
    assert r["rss_mb_per_100k_msgs"] == r["ingest_rss"]["rss_mb_per_100k_msgs_steady"] >= 0  # 2 more passes of 30
    assert r["ingest_rss"]["messages"] == 30 and r["cli_query_served"]["served"] is True
    assert r["kafka_msgs_per_s"]["1"] > 0, r["kafka"]
    for size in ("locomo", "large"):
        for mode in ("routed", "hybrid", "bm25"):
            p = r["retrieval_ms"][size][mode]
            assert 0 < p["p50"] <= p["p95"] <= p["p99"] and p["n"] == 4
    assert r["retrieval"]["large"]["docs"] == 200
    if IRC.is_dir():  # the same ingest on short IM lines, beside the model's rate on them
        assert r["short_messages"]["input"]["messages"] == 30
        assert r["short_ingest_msgs_per_s"] > 0 and r["short_embed_only_msgs_per_s"] > 0
        assert r["ratios"]["short_ingest_vs_embed_only"] > 0
    else:
        assert "short_messages" not in r
    assert r["ratios"]["ingest_vs_embed_only"] == round(r["ingest_msgs_per_s"] / r["embed_only_msgs_per_s"], 3)
    pairs = r["kafka_1_pairs"]  # the main runs, then one embedded + Kafka pair run back to back
    assert len(pairs) == 2 and all(p["embedded"] > 0 and p["kafka"] > 0 for p in pairs), pairs
    assert all(p["ratio_cpu"] > 0 for p in pairs) and r["kafka"]["1"]["worker_cpu_seconds"] > 0  # /proc (Linux)
    assert r["ratios"]["kafka_1_vs_embedded_cpu"] == round(sum(p["ratio_cpu"] for p in pairs) / 2, 3)
    assert r["ratios"]["kafka_1_vs_embedded"] == round(sum(p["ratio"] for p in pairs) / 2, 3)
    assert all(isinstance(t["pass"], bool) for t in r["targets"].values())
    assert r["ingest"]["embedded_texts"] >= 30  # every message's text, plus what the stages derived


def test_timeline_summary_spreads_each_forward_over_its_seconds():
    from bench.throughput_timeline import summary

    events = [("stage", "segmenter", 0.1, 0.9, 256), ("forward", "m", 0.5, 1.75, 64),
              ("stage", "segmenter", 1.0, 1.5, 100), ("forward", "m", 1.8, 2.0, 8)]  # fmt: skip
    got = summary(events, 2.1)
    assert got["model_busy_per_s"] == [0.5, 0.95, 0.0] and got["model_busy_s"] == 1.45  # 0.75 + 0.2 in second 1
    assert got["stages"]["segmenter"] == {"seconds": 1.3, "records": 356, "first": 0.1, "last": 1.5}
    assert got["forwards"] == 2 and got["texts"] == 72


def test_timeline_of_a_real_ingest_times_every_stage_batch(tmp_path):
    from bench.throughput_timeline import main
    from tests.helpers import make_messages, write_jsonl

    data = write_jsonl(tmp_path / "in.jsonl", make_messages(3, 30))
    out = tmp_path / "events.json"
    got = main(["--data", str(data), "--data-dir", str(tmp_path / "d"), "--embedder", "none", "--out", str(out)])
    assert got["stages"]["segmenter"]["records"] == 93  # 90 messages and a flush per chat
    assert got["stages"]["indexer"]["records"] > 0 and got["model_busy_s"] == 0.0
    events = json.loads(out.read_text())
    assert events and all(e[2] <= e[3] <= got["wall_s"] + 1e-3 for e in events)  # wall_s: rounded to ms
