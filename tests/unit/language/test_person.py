"""The third-person rewrite of a chat line (``language.extract.person.to_third_person``): a dropped subject is
the speaker's, a gerund that names a thing is no dropped subject."""

from __future__ import annotations

from language.extract.person import to_third_person


def test_a_dropped_subject_is_the_speaker():
    assert to_third_person("Cooking dinner now", "Ines").text == "Ines is cooking dinner now"
    assert to_third_person("Packing boxes tonight, exhausted", "Ines").text.startswith("Ines is packing boxes")


def test_a_gerund_naming_a_thing_with_a_verb_of_its_own_is_left_as_said():
    # a bot's confirmation: the reminder moved, nobody is reading
    assert to_third_person("Reading reminder moved to 21:00.", "Pagebot").text == "Reading reminder moved to 21:00."
    assert to_third_person("Parking permit expired yesterday", "Ines").text == "Parking permit expired yesterday"
    assert to_third_person("Taking the bus is slower", "Ines").text == "Taking the bus is slower"
