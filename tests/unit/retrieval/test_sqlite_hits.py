"""The embedded store builds its hits without pydantic's ``model_construct``: each must be the hit
``model_construct`` would have made (same fields, fields set, extra and private state, equality, dumps)."""

from __future__ import annotations

from datetime import UTC, datetime

from backends.sqlite.search import _hit
from retrieval.protocols import Doc, Hit


def test_a_hit_is_what_model_construct_makes():
    assert not Hit.__pydantic_root_model__ and not Hit.__pydantic_post_init__  # what _hit relies on
    assert Hit.model_config.get("extra") != "allow" and not Hit.__private_attributes__
    doc = Doc(doc_id="turn:c:m1", chat_id="c", kind="turn", text="violin lesson", speaker="ann",
              ts=datetime(2024, 1, 1, tzinfo=UTC), source_message_ids=["m1"])  # fmt: skip
    scores = {"bm25": 1.5, "bm25_rank": 1.0, "rrf": 0.09}
    fast, slow = _hit(doc, 0.09, scores), Hit.model_construct(doc=doc, score=0.09, scores=scores)
    assert fast == slow and fast.__dict__ == slow.__dict__
    assert fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__ == {"doc", "score", "scores"}
    assert fast.__pydantic_extra__ is slow.__pydantic_extra__ is None
    assert fast.__pydantic_private__ is slow.__pydantic_private__ is None
    assert fast.model_dump() == slow.model_dump() and fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_copy(update={"score": 2.0}).score == 2.0 and fast.score == 0.09  # still frozen
    try:
        fast.score = 3.0
    except Exception as exc:  # frozen, as model_construct's
        assert "frozen" in str(exc).lower()
    else:
        raise AssertionError("a hit must stay frozen")
