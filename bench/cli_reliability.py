"""``memstream bench reliability --out DIR``: the reliability suite (:mod:`bench.reliability`) -> reliability.json."""

from __future__ import annotations

import asyncio
import json
import os
import random
import tempfile
from pathlib import Path
from typing import Annotated

import typer

STEPS = ("fuzz", "load", "leaks", "kills", "deletion", "sensitive")
LOAD_EMBEDDERS = ("default", "none")
# per load step: no 5xx, every request answered or refused (429) within 2 s, the answered ones' p95
LOAD_TARGETS = {"5xx": 0, "prompt_share": 1.0, "p95_answered_ms": 300}


def run_reliability(out_dir: Path, *, n_fuzz: int, kills: int, rates: list[int], seconds: float, seed: int,
                    steps: tuple[str, ...] = STEPS, workers: int = 1,
                    load_embedders: tuple[str, ...] = LOAD_EMBEDDERS) -> dict:  # fmt: skip
    """Run ``steps`` and write OUT/reliability.json; figures of steps not run are kept from an earlier file
    there (so the load step can be re-run alone when the machine is quiet). ``workers``: ``serve --workers``
    of the servers that are fuzzed, loaded and probed (the killed one runs one process). The load step runs
    ``rates`` on a server of its own per embedder of ``load_embedders`` (``default``: none named)."""
    from bench import reliability as R
    from bench.sensitive_gen import generate, score

    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "reliability.json"
    result: dict = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    result.update({"seed": seed, "embedder": "none", "cores": os.cpu_count(), "steps_run": list(steps),
                   "load_embedders": list(load_embedders)})  # fmt: skip

    def save() -> None:  # after every step: a step that fails later does not lose the others' figures
        path.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")

    with tempfile.TemporaryDirectory(prefix="memstream-reliability-") as tmp:
        work = Path(tmp)
        if "load" in steps:
            result["load"], result["load_targets"] = [], LOAD_TARGETS
            for name in load_embedders:
                data = work / f"load-{name}"
                result["load"] += R.load_steps(data, rates, seconds, workers, None if name == "default" else name)
                save()
        if {"fuzz", "leaks"} & set(steps):
            data = work / "serve"
            keys = {"admin": R.make_key(data, "--name", "admin", "--scope", "admin", "--chat", "*"),
                    "leak0": R.make_key(data, "--name", "leak0", "--scope", "read", "--scope", "write",
                                        "--scope", "delete", "--chat", "leak0")}  # fmt: skip
            server = R.Server(data, workers).start()
            try:
                if "fuzz" in steps:
                    from bench import fuzz_dates

                    result["fuzz"] = asyncio.run(R.run_fuzz(server, n_fuzz, keys["admin"], seed))
                    result["fuzz"]["dates"] = asyncio.run(fuzz_dates.run(server.url, keys["admin"]))
                    save()
                if "leaks" in steps:
                    result["leaks"] = R.probe_leaks(server, keys)
                    save()
                if "fuzz" in steps:
                    result["fuzz"]["crashes"] += not server.alive()
            finally:
                server.stop()
        if "kills" in steps:
            result["kills"] = {}
            for name, kill in (("ingest", R.kill_ingest), ("serve", R.kill_serve),
                               ("serve_workers", R.kill_serve_workers), ("kafka_worker", R.kill_kafka_worker)):
                result["kills"][name] = kill(work, kills, rng)
                save()
        if "deletion" in steps:
            from bench import reliability_delete as D

            result["deleted_returned"] = R.deleted_after_replay(work)["deleted_returned"]
            result["kill_during_delete"] = D.kill_during_delete(work / "kill-delete", max(20, kills), rng)
            save()
            result["byte_scan"] = D.byte_scan(work / "byte-scan")
    if "sensitive" in steps:
        result["sensitive"] = score(generate(n_per_kind=200, seed=seed))
    save()
    return result


def bench_reliability(
    out_dir: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("bench-out"),
    fuzz: Annotated[int, typer.Option(help="Generated bad inputs.", min=1)] = 10_000,
    kills: Annotated[int, typer.Option(help="SIGKILLs of ingest, of serve and of the Faust worker.", min=1)] = 5,
    rates: Annotated[str, typer.Option(help="Load steps, requests/s (comma-separated).")] = "50,100,200",
    seconds: Annotated[float, typer.Option(help="Seconds per load step (at most 60).", min=1, max=60)] = 60,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 1,
    workers: Annotated[int, typer.Option(help="`serve --workers` of the fuzzed/loaded/probed server (2, as served "
                                              "for load on 2 cores; 1 = a plain `serve`).", min=1, max=8)] = 2,
    steps: Annotated[str, typer.Option(help=f"Steps to run (comma-separated, of {','.join(STEPS)}); the others' "
                                            "figures are kept from OUT/reliability.json.")] = ",".join(STEPS),
    load_embedders: Annotated[str, typer.Option(help="The load step's servers, one per embedder (comma-separated; "
                                                     "`default`: none named).")] = ",".join(LOAD_EMBEDDERS),
) -> None:
    """Fuzz, kill, load and probe a real `memstream serve` on loopback -> OUT/reliability.json."""
    from rich.console import Console

    chosen = tuple(s.strip() for s in steps.split(",") if s.strip())
    if unknown := set(chosen) - set(STEPS):
        raise typer.BadParameter(f"unknown steps {sorted(unknown)}; choose from {', '.join(STEPS)}")
    rate_steps = [int(r) for r in rates.split(",") if r.strip()]
    embedders = tuple(e.strip() for e in load_embedders.split(",") if e.strip())
    result = run_reliability(out_dir, n_fuzz=fuzz, kills=kills, rates=rate_steps, seconds=seconds, seed=seed,
                             steps=chosen, workers=workers, load_embedders=embedders)  # fmt: skip
    summary = {k: result[k] for k in ("fuzz", "kills", "leaks", "deleted_returned", "sensitive") if k in result}
    if "kills" in summary:
        summary["kills"] = {k: {f: v for f, v in kill.items() if f not in ("kills", "tables")}
                            for k, kill in summary["kills"].items()}  # fmt: skip
    summary["load"] = [{k: v for k, v in step.items() if k != "error_kinds"} for step in result.get("load", [])]
    Console().print_json(json.dumps(summary, default=str))
    Console(stderr=True).print(f"wrote {out_dir / 'reliability.json'}")


def register(bench_app: typer.Typer) -> None:
    bench_app.command("reliability")(bench_reliability)
