"""``memstream bench reliability --out DIR``: the reliability suite (:mod:`bench.reliability`) -> reliability.json."""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
from pathlib import Path
from typing import Annotated

import typer


def run_reliability(out_dir: Path, *, n_fuzz: int, kills: int, rates: list[int], seconds: float, seed: int) -> dict:
    from bench import reliability as R
    from bench.sensitive_gen import generate, score

    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    result: dict = {"seed": seed, "embedder": "none", "cores": __import__("os").cpu_count()}
    with tempfile.TemporaryDirectory(prefix="memstream-reliability-") as tmp:
        work = Path(tmp)
        data = work / "serve"
        keys = {"admin": R.make_key(data, "--name", "admin", "--scope", "admin", "--chat", "*"),
                "leak0": R.make_key(data, "--name", "leak0", "--scope", "read", "--scope", "write",
                                    "--scope", "delete", "--chat", "leak0")}
        server = R.Server(data).start()
        try:
            with R.httpx.Client(base_url=server.url, headers={"X-API-Key": keys["admin"]}, timeout=60) as client:
                for c in range(7):  # something to read during the load test
                    client.post("/v1/messages", json={"messages": [R.message(f"load{c}", i) for i in range(80)],
                                                      "flush": True})
            result["fuzz"] = asyncio.run(R.run_fuzz(server, n_fuzz, keys["admin"], seed))
            result["load"] = [asyncio.run(R.run_load(server, rps, seconds, keys["admin"])) for rps in rates]
            result["leaks"] = R.probe_leaks(server, keys)
            result["fuzz"]["crashes"] += not server.alive()
        finally:
            server.stop()
        result["kills"] = {"ingest": R.kill_ingest(work, kills, rng), "serve": R.kill_serve(work, kills, rng),
                           "kafka_worker": R.kill_kafka_worker(work, kills, rng)}
        result["deleted_returned"] = R.deleted_after_replay(work)["deleted_returned"]
    result["sensitive"] = score(generate(n_per_kind=200, seed=seed))
    (out_dir / "reliability.json").write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    return result


def bench_reliability(
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    fuzz: Annotated[int, typer.Option(help="Generated bad inputs.", min=1)] = 10_000,
    kills: Annotated[int, typer.Option(help="SIGKILLs of ingest and of serve.", min=1)] = 5,
    rates: Annotated[str, typer.Option(help="Load steps, requests/s (comma-separated).")] = "50,100,200",
    seconds: Annotated[float, typer.Option(help="Seconds per load step (at most 60).", min=1, max=60)] = 60,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 1,
) -> None:
    """Fuzz, kill, load and probe a real `memstream serve` on loopback -> OUT/reliability.json."""
    from rich.console import Console

    steps = [int(r) for r in rates.split(",") if r.strip()]
    result = run_reliability(out_dir, n_fuzz=fuzz, kills=kills, rates=steps, seconds=seconds, seed=seed)
    summary = {k: result[k] for k in ("fuzz", "kills", "leaks", "deleted_returned")}
    summary["load"] = [{k: v for k, v in step.items() if k != "error_kinds"} for step in result["load"]]
    Console().print_json(json.dumps(summary, default=str))
    Console(stderr=True).print(f"wrote {out_dir / 'reliability.json'}")


def register(bench_app: typer.Typer) -> None:
    bench_app.command("reliability")(bench_reliability)
