"""Progress bars of the stages on stderr (off when stderr is not a terminal)."""

from __future__ import annotations

import sys


def progress_bars():
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}
    disable = None if sys.stderr.isatty() else True

    def progress(stage: str, n: int, lag: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(desc=f"{stage:12}", unit="rec", disable=disable, file=sys.stderr)
        bar.total = bar.n + n + lag
        bar.update(n)

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return progress, close
