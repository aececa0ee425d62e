"""How the router's notes name a slot: as a noun a reader would use, not the attribute key."""

from __future__ import annotations

import pytest

from retrieval.router.slot_step import slot_noun


@pytest.mark.parametrize(
    ("attribute", "noun"),
    [
        ("lives_in", "home"),
        ("works_at", "employer"),
        ("when", "time"),
        ("where", "place"),
        ("owner", "owner"),
        ("pet_name:cat", "pet's name (cat)"),
        ("favorite_food", "favourite food"),
        ("job", "job"),
    ],
)
def test_a_slot_reads_as_a_noun(attribute, noun):
    assert slot_noun(attribute) == noun
