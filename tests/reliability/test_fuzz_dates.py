"""The date sweep of the reliability fuzz (bench/fuzz_dates.py) against a live ``memstream serve``: questions
about years ago or ahead, asked with ``now`` and triggers in the first week of year 1 and the last of year
9999, never get a 5xx (``/v1/context`` with an asker used to overflow computing the asker's week)."""

from __future__ import annotations

import asyncio

from bench import fuzz_dates
from tests.live_server import running_server


def test_the_cases_cover_both_ends_of_the_calendar_on_both_endpoints():
    cases = fuzz_dates.date_cases()
    nows = {body["now"][:10] for _, body in cases}
    assert {"0001-01-01", "0001-01-08", "9999-12-31", "9999-12-24"} <= nows
    assert {path for path, _ in cases} == {"/v1/context", "/v1/retrieve"}
    context_with_asker = [b for p, b in cases if p == "/v1/context" and b.get("asker")]
    assert any(b.get("trigger_message_id") for b in context_with_asker)
    assert any(b["now"].startswith("0001-01-01T00:00:00+14:00") for b in context_with_asker)


def test_no_date_near_year_1_or_9999_gets_a_5xx(tmp_path):
    with running_server(tmp_path / "data") as url:
        result = asyncio.run(fuzz_dates.run(url))
    assert result["inputs"] == len(fuzz_dates.date_cases())
    assert result["5xx"] == 0 and result["hangs"] == 0, result["failed"]
    assert result["status"].get(200, 0) > result["inputs"] // 2  # answered, not merely refused
