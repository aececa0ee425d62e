"""The inspector's pure parts: views over the schemas' models, and the HTML they render to."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.ui import html, views
from schemas import ChatMessage, MemoryRecord, RetrievedItem, TopicSummary
from schemas.graph import EntityNode, RelationEdge
from schemas.segmentation import SegmentationVersion

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def message(mid: str, minutes: float, text: str = "hello", **kw) -> ChatMessage:
    return ChatMessage(chat_id="c", message_id=mid, sender="ann", ts=at(minutes), text=text, **kw)


def topic(tid: str, mids: list[str], version: int = 1, state: str = "closed", start: float = 0) -> TopicSummary:
    return TopicSummary(chat_id="c", topic_id=tid, state=state, message_ids=mids, participants=["ann"],
                        started_at=at(start), last_active_at=at(start + 1), segmentation_version=version)  # fmt: skip


def version(n: int, status: str = "active", superseded=(), new=(), rolled_back_at=None) -> SegmentationVersion:
    return SegmentationVersion(chat_id="c", version=n, status=status, superseded_topic_ids=list(superseded),
                               new_topic_ids=list(new), created_at=at(100 * n), rolled_back_at=rolled_back_at)  # fmt: skip


def test_a_split_marks_only_the_messages_that_left_their_group():
    msgs = [message(str(i), i) for i in range(6)]
    topics = [topic("A", ["0", "1", "2", "3"], state="superseded"), topic("B", ["4", "5"], start=4),
              topic("A1", ["0", "1", "2"], 2), topic("A2", ["3"], 2, start=3)]  # fmt: skip
    tl = views.timeline(msgs, topics, [version(1), version(2, superseded=["A"], new=["A1", "A2"])], {"A1": "Lunch"})
    assert [r.cells for r in tl.rows] == [["A", "A1"]] * 3 + [["A", "A2"], ["B", "B"], ["B", "B"]]
    assert [r.moved[1] for r in tl.rows] == [False, False, False, True, False, False]  # A1 is paired with A
    assert tl.current["0"] == "A1" and tl.current["4"] == "B"
    assert tl.topics["A1"].label == "Lunch" and tl.topics["A2"].label == "topic A2"


def test_a_version_builds_on_the_newest_one_in_force_when_it_was_made():
    topics = [topic("A", ["0", "1", "2"], state="superseded"), topic("X", ["0", "1"], 2, state="rolled_back"),
              topic("Y", ["2"], 2, state="rolled_back", start=2), topic("Z", ["0"], 3)]  # fmt: skip
    v2 = version(2, "rolled_back", ["A"], ["X", "Y"], rolled_back_at=at(250))  # rolled back before v3 (at 300)
    cols = views.version_columns(topics, [version(1), v2, version(3, superseded=["A"], new=["Z"])])
    assert cols[1] == {"0": "X", "1": "X", "2": "Y"}
    assert cols[2] == {"0": "Z"}  # built on v1, whose topic A it superseded: the others are in no topic


def record(mid: str, minutes: float, kind: str = "fact", valid_to=None, superseded_by=None, topic_id=None, v=1):
    return MemoryRecord(memory_id=mid, chat_id="c", kind=kind, text=f"text of {mid}", valid_from=at(minutes),
                        valid_to=None if valid_to is None else at(valid_to), superseded_by=superseded_by,
                        version=v, source_message_ids=["0"], source_event_id="e", topic_id=topic_id)  # fmt: skip


def test_memory_versions_are_chained_newest_first():
    records = [record("s", 0, "summary"), record("a1", 1, valid_to=5, superseded_by="a2"),
               record("a2", 5, valid_to=9, superseded_by="a3", v=2), record("a3", 9, v=3),
               record("d", 2, valid_to=3, superseded_by="gone")]  # fmt: skip
    chains = views.memory_chains(records)
    assert [[r.memory_id for r in c.versions] for c in chains] == [["a3", "a2", "a1"], ["d"], ["s"]]
    assert chains[0].live and not chains[1].live
    titles = views.topic_titles([record("t1", 0, "title", 4, topic_id="T"), record("t2", 4, "title", topic_id="T")])
    assert titles == {"T": "text of t2"}


def test_ranks_per_list_and_the_strategy_mix():
    items = [RetrievedItem(item_id=i, kind="turn", text=i, timestamp=T0, score=1.0, source_message_ids=["0"])
             for i in ("x", "y")]  # fmt: skip
    ranked = views.list_ranks(items, {"bm25": ["y", "q", "x"], "knn": ["x"]})
    assert [(r.rank, r.lists) for r in ranked] == [(1, {"bm25": 3, "knn": 1}), (2, {"bm25": 1, "knn": None})]
    assert views.strategy_mix({"strategies": [["temporal", 0.7], ["factual", 0.3]]}) == [("temporal", 0.7),
                                                                                         ("factual", 0.3)]


def node(eid: str, name: str, kind: str = "person") -> EntityNode:
    return EntityNode(entity_id=eid, chat_id="c", name=name, key=name.lower(), type=kind, first_seen=T0)


def edge(eid: str, s: EntityNode, o: EntityNode, pred: str, valid_to=None) -> RelationEdge:
    return RelationEdge(edge_id=eid, chat_id="c", subject_id=s.entity_id, predicate=pred, object_id=o.entity_id,
                        subject_name=s.name, object_name=o.name, text=f"{s.name} {pred} {o.name}", valid_from=T0,
                        valid_to=valid_to, source_message_ids=["0"], source_event_id="e")  # fmt: skip


def test_the_graph_around_the_busiest_entity_renders_live_and_invalidated_edges():
    wang, bj, hz = node("w", "Wang"), node("b", "Beijing", "place"), node("h", "Hangzhou", "place")
    edges = [edge("1", wang, bj, "lives_in", valid_to=at(5)), edge("2", wang, hz, "lives_in"),
             edge("3", wang, wang, "mentions")]  # fmt: skip
    assert views.busiest([bj, wang, hz], edges) == wang
    g = views.graph_layout(wang, [wang, bj, hz], edges)
    assert g.at("w").x == g.width / 2 and g.at("b") and g.at("h")
    svg = html.graph_svg(g)  # a self-relation draws nothing wrong (it used to divide by zero)
    assert svg.count('class="edge invalid"') == 1 and svg.count('class="edge"') == 2
    assert "lives_in (until 03-01)" in svg


def test_everything_from_the_data_is_escaped():
    evil = "<script>alert(1)</script>"
    tl = views.timeline([message("m\"1", 0, evil)], [topic("T", ['m"1'])], [version(1)])
    page = html.timeline_html(tl)
    assert "<script>" not in page and "&lt;script&gt;" in page and 'id="msg-m&quot;1"' in page
    chains = views.memory_chains([record("r", 0).model_copy(update={"text": evil})])
    assert "<script>" not in html.memories_html(chains, {"0": message("0", 0, evil)})
    assert html.chat_list([], None).startswith("<option") and "&lt;" in html.chat_list([evil], evil)
