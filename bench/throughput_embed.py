"""The raw embedding rate and the int8 model's agreement with fp32, on LoCoMo turns.

``python -m bench.throughput_embed --data FILE [--limit N]`` prints, per embedder variant (torch fp32 via
sentence-transformers, ONNX fp32, ONNX int8), messages embedded per second (model loaded and warmed up first,
no cache) and the cosine of each vector to the torch fp32 vector of the same text.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

VARIANTS = ("minilm-fp32", "onnx-fp32", "minilm")  # torch fp32, ONNX fp32, ONNX int8 (the default)


def locomo_turns(path: Path, limit: int | None = None) -> list[str]:
    """Every turn text of a LoCoMo file, in conversation order (``limit`` = the first N)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    texts: list[str] = []
    for conv in data:
        c = conv["conversation"]
        for key in sorted((k for k in c if k.startswith("session_") and isinstance(c[k], list)),
                          key=lambda k: int(k.split("_")[1])):  # fmt: skip
            texts.extend(str(t.get("text", "")) for t in c[key] if str(t.get("text", "")).strip())
    return texts[:limit] if limit else texts


def raw_embedder(variant: str, batch: int = 64) -> Any:
    """The uncached model of ``variant`` (see :data:`VARIANTS`)."""
    from backends.embed.embedder import MiniLMEmbedder
    from backends.embed.onnx import OnnxMiniLMEmbedder

    if variant == "minilm-fp32":
        return MiniLMEmbedder(batch)
    if variant == "onnx-fp32":
        return OnnxMiniLMEmbedder(batch, precision="fp32")
    if variant == "minilm":
        return OnnxMiniLMEmbedder(batch, precision="int8")
    raise ValueError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")


async def embed_rate(
    embedder: Any, texts: list[str], *, chunk: int = 512, repeats: int = 1
) -> tuple[dict, np.ndarray]:
    """({msgs_per_s, msgs_per_cpu_s}, vectors): the model is loaded and warmed up outside the timing; texts are
    fed in chunks of ``chunk`` as an ingest batch would; the best of ``repeats`` passes counts. Messages per
    CPU-second (this process, every thread) is the figure least disturbed by other load on the machine."""
    await embedder.embed(texts[: min(len(texts), 32)])  # load + warm-up
    best, vectors = {"msgs_per_s": 0.0, "msgs_per_cpu_s": 0.0}, np.zeros((0, 0), dtype=np.float32)
    for _ in range(max(1, repeats)):
        cpu0, t0 = time.process_time(), time.perf_counter()
        parts = [await embedder.embed(texts[i : i + chunk]) for i in range(0, len(texts), chunk)]
        rate = len(texts) / max(time.perf_counter() - t0, 1e-9)
        if rate > best["msgs_per_s"]:
            cpu_rate = len(texts) / max(time.process_time() - cpu0, 1e-9)
            best = {"msgs_per_s": round(rate, 1), "msgs_per_cpu_s": round(cpu_rate, 1)}
            vectors = np.concatenate(parts, axis=0)
    return best, vectors


def agreement(vectors: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Row-wise cosine of two sets of L2-normalised vectors: mean, 1st percentile, minimum."""
    cos = np.sum(vectors * reference, axis=1)
    return {"mean": round(float(cos.mean()), 4), "p1": round(float(np.percentile(cos, 1)), 4),
            "min": round(float(cos.min()), 4)}  # fmt: skip


async def compare(texts: list[str], variants: tuple[str, ...] = VARIANTS, batch: int = 64,
                  repeats: int = 1) -> dict[str, dict]:  # fmt: skip
    """Per variant: msgs_per_s, msgs_per_cpu_s and cosine_to_fp32 (against the torch fp32 model's vectors)."""
    out: dict[str, dict] = {}
    reference: np.ndarray | None = None
    for variant in ("minilm-fp32", *[v for v in variants if v != "minilm-fp32"]):
        if variant not in variants and reference is not None:
            continue
        rates, vectors = await embed_rate(raw_embedder(variant, batch), texts, repeats=repeats)
        if variant == "minilm-fp32":
            reference = vectors
        if variant in variants:
            assert reference is not None
            out[variant] = {**rates, "cosine_to_fp32": agreement(vectors, reference)}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo/locomo10_dev.json"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)
    texts = locomo_turns(args.data, args.limit)
    result = asyncio.run(compare(texts, batch=args.batch, repeats=args.repeats))
    print(json.dumps({"texts": len(texts), "batch": args.batch, **result}, indent=2))


if __name__ == "__main__":
    main()
