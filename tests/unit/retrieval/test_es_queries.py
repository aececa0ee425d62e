"""Shapes of the Elasticsearch store's requests and parsing of its responses, without a server."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest

from backends.es import mapping as M
from backends.es import queries as Q
from language.text import tokenize
from retrieval.fusion import rrf
from retrieval.protocols import SearchQuery
from schemas import ChatMessage, MemoryKind, MemoryRecord, TopicSummary

T0 = datetime(2024, 3, 4, 9, 30, tzinfo=timezone(timedelta(hours=8)))


def query(**kw) -> SearchQuery:
    return SearchQuery(**{"chat_id": "team-alpha", "text": "When is the launch?", "vector": [0.6, 0.8], **kw})


def chat_terms(node) -> list[str]:
    """Every chat_id term filter anywhere in a request body."""
    found = []
    if isinstance(node, dict):
        if "term" in node and "chat_id" in node["term"]:
            found.append(node["term"]["chat_id"])
        for value in node.values():
            found += chat_terms(value)
    elif isinstance(node, list):
        for value in node:
            found += chat_terms(value)
    return found


# ---- ids, mappings, sources ----------------------------------------------------------------------


def test_ids_are_derived_bounded_and_chat_scoped():
    assert M.es_id("A", "m1") == M.es_id("A", "m1") != M.es_id("B", "m1")
    assert M.es_id("A", "x" * 600) != M.es_id("A", "x" * 599) and len(M.es_id("A", "x" * 600)) == 32
    assert M.turn_doc_id("A", "m1") == "turn:A:m1"


def test_index_templates():
    t = M.index_template("ms", "docs", 384)
    assert t["name"] == "ms-docs" and t["index_patterns"] == ["ms-docs-v*"]
    mappings = t["template"]["mappings"]
    assert mappings["dynamic"] == "strict"
    props = mappings["properties"]
    assert props["tokens"]["analyzer"] == "whitespace"
    assert props["vector"] == {
        "type": "dense_vector", "index": True, "similarity": "cosine", "index_options": {"type": "hnsw"}, "dims": 384,
    }  # fmt: skip
    for field in ("doc_id", "chat_id", "kind", "speaker", "topic_id", "source_message_ids"):
        assert props[field] == {"type": "keyword"}
    assert props["ts"] == props["valid_to"] == {"type": "date"}
    assert "dims" not in M.index_template("ms", "docs", None)["template"]["mappings"]["properties"]["vector"]
    for kind in M.INDEX_KINDS:
        assert "chat_id" in M.index_template("ms", kind, 8)["template"]["mappings"]["properties"]


def test_turn_source_round_trips_to_the_doc_and_indexes_the_sqlite_tokens():
    m = ChatMessage(
        chat_id="A", message_id="m7", sender="bob", sender_name="Bob", ts=T0, text="我会在周四前写好发布说明"
    )
    src = M.turn_source(m, None, 5)
    assert "vector" not in src and src["seq"] == 5 and src["sender"] == "bob"
    assert src["tokens"].split() == tokenize(f"Bob {T0:%Y-%m-%d} {m.text}")
    doc = M.doc_from_source(json.loads(json.dumps(src)))
    assert (doc.doc_id, doc.kind, doc.speaker, doc.ts, doc.source_message_ids) == (
        "turn:A:m7",
        "turn",
        "Bob",
        T0,
        ["m7"],
    )
    assert M.turn_source(m, [1.0, 0.0], 5)["vector"] == [1.0, 0.0]
    msg = M.message_source(m, 5)
    assert ChatMessage.model_validate(json.loads(json.dumps(msg["message"]))) == m


def test_memory_sources():
    r = MemoryRecord(
        memory_id="k1", chat_id="A", kind=MemoryKind.TASK, text="Bob writes the notes", speaker="Bob", subject="bob",
        valid_from=T0, source_message_ids=["m7"], source_event_id="ev", entities=["notes"],
    )  # fmt: skip
    doc = M.memory_doc_source(r, None, 1)
    assert (doc["doc_id"], doc["kind"], doc["sender"], doc["subject"], doc["valid_to"]) == (
        "k1", "task", "Bob", "bob", None,
    )  # fmt: skip
    assert doc["tokens"].split() == tokenize("Bob writes the notes Bob")
    assert M.doc_from_source(doc).entities == ["notes"]
    mem = M.memory_source(r, 1)
    assert MemoryRecord.model_validate(json.loads(json.dumps(mem["record"]))) == r
    assert mem["valid_from_epoch"] == T0.timestamp()
    topic = TopicSummary(chat_id="A", topic_id="t", state="closed", message_ids=[], participants=[],
                         started_at=T0, last_active_at=T0)  # fmt: skip
    assert TopicSummary.model_validate(M.topic_source(topic, 2)["topic"]) == topic


# ---- queries -------------------------------------------------------------------------------------


def test_filters():
    f = Q.build_filters(query())
    assert f == {
        "bool": {
            "filter": [{"term": {"chat_id": "team-alpha"}}],
            "must_not": [{"exists": {"field": "valid_to"}}],
        }
    }
    since, until = datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 3, 2)  # naive = UTC, as SQLite
    f = Q.build_filters(query(kinds=["fact", "turn"], since=since, until=until, include_superseded=True))
    assert "must_not" not in f["bool"]
    assert f["bool"]["filter"][1:] == [
        {"terms": {"kind": ["fact", "turn"]}},
        {"range": {"ts_epoch": {"gte": since.timestamp(), "lte": until.replace(tzinfo=UTC).timestamp()}}},
    ]
    with pytest.raises(ValueError):
        Q.chat_filter("")


def test_bm25_query_is_the_or_of_distinct_tokens_within_the_filters():
    body = Q.build_bm25_query(query(text="Pizza pizza PIZZA party 杭州西湖"))
    should = [c["term"]["tokens"] for c in body["bool"]["should"]]
    assert should == list(dict.fromkeys(tokenize("Pizza pizza PIZZA party 杭州西湖")))
    assert should[:2] == ["pizza", "party"] and "杭州" in should
    assert body["bool"]["minimum_should_match"] == 1
    assert body["bool"]["filter"] == [Q.build_filters(query())]
    assert Q.build_bm25_query(query(text="the ? of")) is None  # stopwords only: no query, no match-all
    long = Q.build_bm25_query(query(text=" ".join(f"w{i}" for i in range(200))))
    assert len(long["bool"]["should"]) == Q.MAX_QUERY_TERMS


def test_knn_always_sets_k_num_candidates_and_the_filter():
    knn = Q.build_knn(query(k=7))
    assert knn["field"] == "vector" and knn["query_vector"] == [0.6, 0.8]
    assert knn["k"] == 7 and knn["num_candidates"] >= knn["k"] and knn["filter"] == Q.build_filters(query())
    assert Q.build_knn(query(k=7), 40)["k"] == 40
    assert Q.build_knn(query(k=9000))["num_candidates"] == Q.MAX_NUM_CANDIDATES
    assert Q.build_knn(query(vector=None)) is None


def test_searches_sort_ties_by_insertion_and_skip_the_big_fields():
    for body in (Q.build_bm25_search(query(), 12), Q.build_knn_search(query(), 12)):
        assert body["size"] == 12 and body["sort"] == [{"_score": "desc"}, {"seq": "asc"}]
        assert body["_source"] == {"excludes": ["tokens", "vector"]}
    assert Q.build_knn_search(query(), 12)["knn"]["k"] == 12
    assert (
        Q.build_bm25_search(query(text="?"), 5) is None and Q.build_knn_search(query(vector=None), 5) is None
    )


def test_rrf_retriever():
    r = Q.build_rrf_retriever(query(k=30, candidates=20, rrf_k=10))["rrf"]
    assert r["rank_window_size"] == 30 and r["rank_constant"] == 10
    standard, knn = r["retrievers"]
    assert standard == {"standard": {"query": Q.build_bm25_query(query())}}
    assert knn["knn"]["k"] == 30 and knn["knn"]["num_candidates"] >= 30
    assert (
        Q.build_rrf_retriever(query(vector=None)) is None and Q.build_rrf_retriever(query(text="?")) is None
    )


def test_similar_knn_excludes_turns_and_closed_versions():
    body = Q.build_similar_knn("A", [1.0, 0.0], 10, "bob")
    flt = body["knn"]["filter"]["bool"]
    assert flt["filter"] == [{"term": {"chat_id": "A"}}, {"term": {"subject": "bob"}}]
    assert flt["must_not"] == [{"term": {"kind": "turn"}}, {"exists": {"field": "valid_to"}}]
    assert body["knn"]["k"] == body["size"] == 10
    assert len(Q.build_similar_knn("A", [1.0], 3, None)["knn"]["filter"]["bool"]["filter"]) == 1


def test_chat_queries():
    q = Q.build_chat_query("A", terms={"speaker": ["bob", "Bob"]}, exclude={"kind": ["turn"]}, live_only=True)
    assert q == {"bool": {
        "filter": [{"term": {"chat_id": "A"}}, {"terms": {"speaker": ["bob", "Bob"]}}],
        "must_not": [{"terms": {"kind": ["turn"]}}, {"exists": {"field": "valid_to"}}],
    }}  # fmt: skip
    window = Q.build_chat_query("A", since=T0)["bool"]["filter"][1]
    assert window == {"range": {"ts_epoch": {"gte": T0.timestamp()}}}


def test_every_request_is_filtered_by_chat():
    q = query(kinds=["fact"])
    bodies = [Q.build_bm25_search(q, 5), Q.build_knn_search(q, 5), Q.build_similar_knn("team-alpha", [1.0], 5, None),
              Q.build_chat_query("team-alpha")]  # fmt: skip
    for body in bodies:
        assert set(chat_terms(body)) == {"team-alpha"}
    knn_leg = Q.build_rrf_retriever(q)["rrf"]["retrievers"][1]["knn"]
    assert chat_terms(knn_leg["filter"]) == ["team-alpha"]  # inside knn.filter, not only around it
    assert chat_terms(Q.build_rrf_retriever(q)["rrf"]["retrievers"][0]) == ["team-alpha"]


# ---- results -------------------------------------------------------------------------------------

# as returned by the rrf retriever with explain=true (Elasticsearch 8.15 / noida-db 0.2.3)
EXPLAINED = {
    "value": 0.0325,
    "description": "rrf score: [0.032522473] computed for initial ranks [2, 1] with rankConstant: [60] as sum of "
    "[1 / (rank + rankConstant)] for each query",
    "details": [
        {"value": 2, "description": "rrf score: [0.016129032], for rank [2] in query at index [0] computed as "
         "[1 / (2 + 60)], for matching query with score: ", "details": [{"value": 0.2876, "description": "sum of:"}]},
        {"value": 1, "description": "rrf score: [0.016393442], for rank [1] in query at index [1] computed as "
         "[1 / (1 + 60)], for matching query with score: ", "details": [{"value": 0.9, "description": "knn(...)"}]},
    ],
}  # fmt: skip
NOT_IN_BM25 = {
    "value": 0.016,
    "description": "rrf score: [0.016129032] computed for initial ranks [0, 2] with rankConstant: [60] ...",
    "details": [
        {"value": 0.0, "description": "rrf score: [0], result not found in query at index [0]", "details": []},
        {"value": 2, "description": "rrf score: [0.016129032], for rank [2] in query at index [1] computed as "
         "[1 / (2 + 60)], for matching query with score: ", "details": [{"value": 0.75, "description": "knn"}]},
    ],
}  # fmt: skip


def test_parse_rrf_explanation():
    assert Q.parse_rrf_explanation(EXPLAINED) == [(2, 0.2876), (1, 0.9)]
    assert Q.parse_rrf_explanation(NOT_IN_BM25) == [None, (2, 0.75)]
    for bad in (
        {},
        {"description": "sum of:", "details": [{}, {}]},
        {**EXPLAINED, "details": EXPLAINED["details"][:1]},
    ):
        with pytest.raises(ValueError):
            Q.parse_rrf_explanation(bad)


def test_server_scores_match_client_fusion():
    scores = Q.scores_from_legs(Q.parse_rrf_explanation(EXPLAINED), 60)
    assert scores == {"bm25": 0.2876, "bm25_rank": 2.0, "cosine": pytest.approx(0.8), "knn_rank": 1.0,
                      "rrf": 1 / 62 + 1 / 61}  # fmt: skip
    assert Q.scores_from_legs([None, (3, 1.0)], 10) == {"cosine": 1.0, "knn_rank": 3.0, "rrf": 1 / 13}
    # the same ranking fused client-side gives the same scores and order, ties included
    bm25 = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    knn = [("d", 0.9), ("b", 0.8), ("e", 0.5)]
    client = Q.fuse_legs(bm25, knn, 10, 60)
    assert [(d, s) for d, s, _ in client] == rrf([["a", "b", "c"], ["d", "b", "e"]], k=60)
    assert client[0] == ("b", 1 / 62 + 1 / 62, {"bm25": 2.0, "bm25_rank": 2.0, "cosine": 0.8, "knn_rank": 2.0,
                                                "rrf": 1 / 62 + 1 / 62})  # fmt: skip
    # ties (a: BM25 rank 1 only, d: kNN rank 1 only) resolve as fusion.rrf does: the BM25 leg first
    shuffled = [(d, sc) for d, _, sc in reversed(client)]
    assert [d for d, _ in sorted(shuffled, key=lambda p: Q.rrf_order_key(p[1]))] == [d for d, _, _ in client]
    assert Q.fuse_legs(bm25, [], 2, 60) == [("a", 1 / 61, {"bm25": 3.0, "bm25_rank": 1.0, "rrf": 1 / 61}),
                                             ("b", 1 / 62, {"bm25": 2.0, "bm25_rank": 2.0, "rrf": 1 / 62})]  # fmt: skip


def test_cosine_from_score():
    assert (
        Q.cosine_from_score(1.0) == 1.0
        and Q.cosine_from_score(0.5) == 0.0
        and Q.cosine_from_score(0.0) == -1.0
    )


# ---- the store's URL (no I/O) --------------------------------------------------------------------


def test_store_from_url():
    pytest.importorskip("elasticsearch")
    from backends.es.store import ESStore

    s = ESStore.from_url("es://127.0.0.1:9200?prefix=ms2&rrf=client", 384)
    assert (
        s.hosts == ["http://127.0.0.1:9200"] and s.prefix == "ms2" and s.rrf_mode == "client" and s.dim == 384
    )
    assert s.alias("docs") == "ms2-docs"
    s = ESStore.from_url("es+https://u:p@a:9200,b:9200")
    assert (
        s.hosts == ["https://u:p@a:9200", "https://u:p@b:9200"]
        and s.rrf_mode == "auto"
        and s.prefix == "memstream"
    )
    for bad in ("es://", "es://h:1?nope=1", "http://h:1", "es://h:1?rrf=maybe"):
        with pytest.raises(ValueError):
            ESStore.from_url(bad)
    with pytest.raises(RuntimeError):
        _ = s.es  # not bootstrapped


def test_unit_vectors():
    rows, dim = M.unit_vectors(np.array([[3.0, 4.0], [0.0, 0.0]]), 2, None)
    assert dim == 2 and rows[0] == pytest.approx([0.6, 0.8]) and rows[1] is None  # zero: not stored
    assert M.unit_vectors(np.array([1.0, 0.0]), 1, 2)[0] == [[1.0, 0.0]]
    for bad, n in ((np.zeros((2, 2)), 1), (np.zeros((1, 3)), 1)):
        with pytest.raises(ValueError):
            M.unit_vectors(bad, n, 2)


def test_rrf_unsupported_errors():
    assert Q.rrf_unsupported(403, "current license is non-compliant for [Reciprocal Rank Fusion (RRF)]")
    assert Q.rrf_unsupported(400, "parsing_exception: Unknown key for a START_OBJECT in [retriever].")
    assert not Q.rrf_unsupported(400, "failed to parse date field [ts]")
    assert not Q.rrf_unsupported(503, "rrf: no shard available")


def test_hits_from_responses():
    src = M.turn_source(ChatMessage(chat_id="A", message_id="m1", sender="u", ts=T0, text="pizza"), None, 1)
    other = {**src, "doc_id": "turn:A:m2"}
    [h] = Q.leg_hits([{"_score": 0.75, "_source": src}], "knn")
    assert h.score == 0.5 and h.scores == {"cosine": 0.5, "knn_rank": 1.0} and h.doc.doc_id == "turn:A:m1"
    fused = Q.fused_hits([{"_score": 2.0, "_source": src}], [{"_score": 1.0, "_source": other},
                                                            {"_score": 0.9, "_source": src}], 5, 60)  # fmt: skip
    assert [(x.doc.doc_id, x.score) for x in fused] == [("turn:A:m1", 1 / 61 + 1 / 62), ("turn:A:m2", 1 / 61)]
    server = Q.rrf_hits(
        [{"_source": other, "_explanation": NOT_IN_BM25}, {"_source": src, "_explanation": EXPLAINED}], 60
    )
    assert [x.doc.doc_id for x in server] == ["turn:A:m1", "turn:A:m2"]
    assert server[1].scores == {"cosine": 0.5, "knn_rank": 2.0, "rrf": 1 / 62}
