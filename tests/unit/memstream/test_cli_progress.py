"""Progress of ingest/replay/resegment: bars with rate and ETA on a terminal, periodic lines otherwise."""

from __future__ import annotations

import io
import re

from memstream.cli_progress import progress_bars


def test_without_a_terminal_progress_is_periodic_lines_with_rate_and_eta():
    out = io.StringIO()
    progress, close = progress_bars(every=0.0, stream=out, tty=False)
    progress("segmenter", 256, 744)
    progress("segmenter", 256, 488)
    progress("distiller", 16, 4)
    close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[-1].startswith("done ")
    assert re.search(r"segmenter 512/1000 \(\d+/s, ETA \d+s\)", lines[1])
    assert "distiller 16/20" in lines[-1] and "segmenter 512/1000" in lines[-1]


def test_lines_are_rate_limited_and_nothing_is_printed_for_an_empty_run():
    out = io.StringIO()
    progress, close = progress_bars(every=3600.0, stream=out, tty=False)
    for _ in range(50):
        progress("indexer", 10, 0)
    assert out.getvalue() == ""  # within the interval: silent ...
    close()
    assert out.getvalue().splitlines() == [out.getvalue().strip()] and "indexer 500/500" in out.getvalue()
    quiet = io.StringIO()
    _, close = progress_bars(every=0.0, stream=quiet, tty=False)
    close()
    assert quiet.getvalue() == ""


def test_on_a_terminal_each_stage_gets_a_bar_with_rate_and_eta():
    out = io.StringIO()
    progress, close = progress_bars(stream=out, tty=True)
    progress("segmenter", 256, 744)
    progress("segmenter", 256, 488)
    close()
    text = out.getvalue()
    assert "segmenter" in text and "512/1000" in text and "rec/s" in text and "<" in text  # elapsed<ETA
