"""Fact vectors without a forward of their own, against the facts' own forwards: a retrieval proxy on LoCoMo.

    python -m bench.fact_vectors --data ../shared/data/locomo/locomo10_dev.json --out bench-out

LoCoMo is ingested with the default embedder; each live fact then gets its own text's vector (what the
pipeline stored before session 27) and the composed one of :func:`streams.stages.vectors.item_vectors` for
each weight of its speaker's name (0 = the sentence pooled in its turn's forward alone). For the questions
of categories 1-4, the chat's facts alone are ranked by cosine to the question: ``any@10`` is the share of
questions with a fact from an evidence turn in the top 10, overall and per conversation (each conversation is
a check of its own on a weight chosen over all five). Writes OUT/fact_vectors.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

import numpy as np

WEIGHTS = (0.0, 0.3, 0.5, 0.8)


async def measure(data: Path, weights: tuple[float, ...] = WEIGHTS) -> dict:
    from memstream.clients import build_clients
    from memstream.ops import ingest
    from memstream.settings import Settings
    from schemas import MemoryKind
    from streams.stages.vectors import item_vectors, shared_turn_vectors

    raw = json.loads(data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        clients = await build_clients(Settings(data_dir=Path(tmp), embedder="minilm"))
        try:
            await ingest(clients, data)
            facts = {c: [r for r in await clients.store.list_memories(c) if r.kind == MemoryKind.FACT]
                     for c in await clients.store.chats()}  # fmt: skip
            systems: dict[str, dict[str, np.ndarray]] = {"own": {}}
            for chat, records in facts.items():
                systems["own"][chat] = await clients.embedder.embed([r.text for r in records])
                for w in weights:
                    with shared_turn_vectors():
                        vecs = await item_vectors(clients, records, "sources", fact_name_weight=w)
                    systems.setdefault(f"sentence+{w}name", {})[chat] = vecs
            questions = [(conv["sample_id"], q["question"], set(q["evidence"])) for conv in raw for q in conv["qa"]
                         if q.get("category") in (1, 2, 3, 4) and q.get("evidence")]  # fmt: skip
            qv = await clients.embedder.embed([q for _, q, _ in questions], is_query=True)
        finally:
            await clients.close()
    out: dict = {"questions": len(questions), "facts": sum(len(v) for v in facts.values()), "systems": {}}
    for name, by_chat in systems.items():
        hits: dict[str, list[bool]] = {}
        for (chat, _, evidence), v in zip(questions, qv, strict=True):
            records, vecs = facts.get(chat, []), by_chat.get(chat)
            top = np.argsort(-(vecs @ v))[:10] if vecs is not None and len(records) else []
            cited = {m for i in top for m in records[i].source_message_ids}
            hits.setdefault(chat, []).append(bool(cited & evidence))
        every = [h for hs in hits.values() for h in hs]
        out["systems"][name] = {"any@10": round(float(np.mean(every)), 4),
                                "by_conversation": {c: round(float(np.mean(h)), 3) for c, h in hits.items()}}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo/locomo10_dev.json"))
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args.data))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fact_vectors.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    for name, s in result["systems"].items():
        print(f"{name:18} any@10={s['any@10']:.4f}  " + " ".join(f"{c}={v:.3f}" for c, v in s["by_conversation"].items()))


if __name__ == "__main__":
    main()
