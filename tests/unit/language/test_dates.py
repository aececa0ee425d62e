from datetime import UTC, datetime

import pytest

from language.time.dates import annotate_dates, find_dates

REF = datetime(2024, 3, 4, 9, 39, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went hiking on Friday.", "I went hiking on Friday (on 2024-03-01)."),
        ("We will meet on Friday.", "We will meet on Friday (on 2024-03-08)."),
        # an explicit date after the weekday is the date: no guess from the tense ("decided")
        ("We decided to launch on Friday March 8.", "We decided to launch on Friday March 8."),
        ("Let's do it Friday, 8 March.", "Let's do it Friday, 8 March."),
    ],
)
def test_weekday_resolution(text, expected):
    assert annotate_dates(text, find_dates(text, REF)) == expected
