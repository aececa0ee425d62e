"""The asker's first person read as their name (retrieval/router/asker.py), pure rewrite and lookup."""

from __future__ import annotations

from retrieval.router.asker import has_first_person, in_third_person


def test_the_first_person_becomes_the_askers_name():
    assert in_third_person("Where do I live now?", "Mia") == "Where does Mia live now?"
    assert in_third_person("When is my dentist appointment?", "Mia") == "When is Mia's dentist appointment?"
    assert in_third_person("Which gym am I at these days?", "Mia") == "Which gym is Mia at these days?"
    assert in_third_person("What did I tell Bo about my trip?", "Mia") == "What did Mia tell Bo about Mia's trip?"
    assert in_third_person("我现在住哪？", "小美") == "小美现在住哪？"
    assert in_third_person("我们周五去哪吃饭？", "小美") == "我们周五去哪吃饭？"  # 我们 is the group, not the asker
    assert in_third_person("Where was I living in 2020?", "Mia") == "Where was Mia living in 2020?"  # still past
    assert in_third_person("Who’s the person I’m meeting?", "Mia") == "Who’s the person Mia is meeting?"


def test_only_a_question_in_the_first_person_is_rewritten():
    assert has_first_person("Where do I live now?") and has_first_person("我的牙医约在哪天？")
    assert not has_first_person("Where does Mia live now?")
    assert not has_first_person("我们周五去哪？")
    assert not has_first_person("Is the iPhone mine?".replace("mine", "hers"))
