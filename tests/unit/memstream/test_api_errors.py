"""Validation errors in plain words (memstream/api_errors.py), from the errors pydantic really raises for the
request contracts: what was wrong, with the number that was too big, never pydantic's "items after validation"."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memstream.api_errors import field_name, plain, plain_all
from schemas import ChatMessage, RetrieveRequest


def errors_of(model, **fields) -> list[dict]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(fields)
    return caught.value.errors()


@pytest.mark.parametrize(("fields", "said"), [
    ({"query": "x" * 112_500}, "query is too long: 112500 characters, at most 4000"),
    ({"query": "   "}, "query is blank"),
    ({"query": ""}, "query is empty"),
    ({"query": "q", "k": "5"}, "k must be a whole number (a JSON integer, not in quotes)"),
    ({"query": "q", "k": 0}, "k must be at least 1"),
    ({"query": "q", "token_budget": 10**6}, "token_budget must be at most 32000"),
    ({"query": "q", "mode": "fast"}, "mode must be one of 'hybrid', 'bm25', 'embedding' or 'routed'"),
    ({"query": "q", "now": "soon"}, "now must be a date and time with a zone (ISO 8601, e.g. 2024-05-01T09:30:00+08:00)"),
    ({"query": "q", "colour": "red"}, "colour is not a known field"),
    ({"query": "q", "kinds": ["poem"]}, "kinds[0] must be one of 'turn', 'fact', 'summary', 'qa', 'task', 'decision', "
                                        "'title' or 'profile'"),
])  # fmt: skip
def test_retrieve_request_errors_in_plain_words(fields, said):
    errors = errors_of(RetrieveRequest, chat_id="c", **fields)
    assert plain(errors[0]) == said
    assert "after validation" not in said and "Input should" not in said


def test_a_list_that_is_too_long_counts_items_and_a_validator_keeps_its_own_words():
    errors = errors_of(ChatMessage, chat_id="a/b", message_id="m", sender="s", ts="2024-01-01T00:00:00Z", text="t",
                       mentions=["x"] * 300)  # fmt: skip
    assert plain_all(errors) == "chat_id: must not contain '/' or control characters; mentions is too long: 300 " \
                                "items, at most 256"


def test_missing_fields_and_more_errors_than_are_said():
    errors = errors_of(ChatMessage)
    said = plain_all(errors, limit=2)
    assert said.startswith("chat_id is missing; message_id is missing") and said.endswith(f"(and {len(errors) - 2} more)")


def test_where_an_error_is():
    assert field_name(("body", "messages", 3, "text")) == "messages[3].text"
    assert field_name(("query",)) == "query"
    assert field_name(()) == "the request"


def test_a_body_that_is_not_a_json_object_says_to_send_json():
    said = plain({"type": "model_attributes_type", "loc": ("body",), "msg": "Input should be a valid dictionary"})
    assert said == "the request body must be a JSON object (sent with content-type: application/json)"
