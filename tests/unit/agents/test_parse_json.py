"""``language.text.parse_json``: one parse per distinct payload of a frozen contract, shared by its readers,
emptied with the other text caches by a deletion; an invalid payload raises on every read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from language.text import clear_text_caches, parse_json, text_cache_entries
from schemas import ChatMessage
from streams.codec import DecodeError, decode, encode
from streams.topics import MEMORY_DECISIONS, RAW_MESSAGES


def message(text: str) -> ChatMessage:
    return ChatMessage(chat_id="c1", message_id="m1", sender="u1", ts=datetime(2024, 5, 1, tzinfo=UTC), text=text)


def test_the_same_payload_gives_the_same_object_and_a_deletion_empties_the_cache():
    payload = encode(message("I moved to Lisbon"))
    first = parse_json(ChatMessage, payload)
    assert first == message("I moved to Lisbon")
    assert parse_json(ChatMessage, "".join(payload)) is first  # an equal string read again: no new parse
    assert text_cache_entries() >= 1
    clear_text_caches()
    again = parse_json(ChatMessage, payload)
    assert again == first and again is not first


def test_an_invalid_payload_raises_every_time():
    for _ in range(2):
        with pytest.raises(ValidationError):
            parse_json(ChatMessage, '{"chat_id": "c1"}')
    for _ in range(2):
        with pytest.raises(DecodeError):
            decode(RAW_MESSAGES, '{"chat_id": "c1", "text": 3}')


def test_only_topics_read_twice_keep_their_decoded_records():
    assert RAW_MESSAGES.read_twice and not MEMORY_DECISIONS.read_twice
    payload = encode(message("see you at noon"))
    assert decode(RAW_MESSAGES, payload) is decode(RAW_MESSAGES, payload)


def test_a_long_payload_is_parsed_every_time_not_kept():
    from language.text import PARSE_CACHE_MAX_CHARS

    payload = encode(message("x" * (PARSE_CACHE_MAX_CHARS + 1)))
    clear_text_caches()
    first = parse_json(ChatMessage, payload)
    assert parse_json(ChatMessage, payload) == first and parse_json(ChatMessage, payload) is not first
    assert text_cache_entries() == 0
