"""What ``memstream bench locomo`` says while it runs and when it ends.

A run ingests the file twice, then asks every question once per system (a dozen passes): each pass is announced
as it starts and reports each quarter of its questions on stderr, so a long run is never silent. At the end a
short table of the main figures; the full result stays in ``OUT/locomo.json``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# the systems of the closing table, in its order (the rest are ablations: in locomo.json)
MAIN = ("routed", "routed-heldout-router", "oracle-routed", "memstream-hybrid", "bm25-only", "embedding-only",
        "raw-turns-only", "add-only")  # fmt: skip
COLUMNS = ("R@10", "R@5", "multi-hop", "temporal", "tokens", "p95 ms")
CAPTION = ("R@k: turn recall_all@k over categories 1-4; multi-hop, temporal: R@10 of categories 1 and 2; tokens: "
           "context size; p95: retrieval latency")  # fmt: skip


class QuestionProgress:
    """Announces each pass over the questions and each ``1/parts`` of it on ``console`` (stderr)."""

    def __init__(self, console, passes: int, questions: int, parts: int = 4) -> None:
        self.console, self.passes, self.questions, self.parts = console, passes, questions, parts
        self.done = 0

    def step(self, name: str) -> Callable[[], None]:
        """Start pass ``name``; the returned function is called after each question."""
        self.done += 1
        if self.console:
            self.console.print(f"[{self.done}/{self.passes}] {name}: {self.questions} questions", highlight=False)
        every = max(1, -(-self.questions // self.parts))
        start, asked = time.perf_counter(), [0]

        def tick() -> None:
            asked[0] += 1
            n = asked[0]
            if self.console and (n % every == 0 or n == self.questions):
                self.console.print(f"    {name} {n}/{self.questions} ({time.perf_counter() - start:.0f}s)",
                                   highlight=False)  # fmt: skip

        return tick


def summary_rows(result: dict) -> list[tuple[str, ...]]:
    """The closing table's rows: each main system's recall, context size and latency (categories 1-4)."""
    rows = []
    for name in MAIN:
        s = result["systems"].get(name)
        if s is None:
            continue
        o, c = s["overall"], s["by_category"]
        rows.append((name, f"{o['turn_recall_all@10']:.3f}", f"{o['turn_recall_all@5']:.3f}",
                     f"{c['1']['turn_recall_all@10']:.3f}", f"{c['2']['turn_recall_all@10']:.3f}",
                     f"{o['context_tokens_mean']:.0f}", f"{o['latency_ms_p95']:.1f}"))  # fmt: skip
    return rows
