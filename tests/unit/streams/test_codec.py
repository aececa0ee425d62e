import pytest

from schemas import ChatMessage
from schemas.messages import StreamControl
from streams.codec import DecodeError, decode, encode
from streams.topics import RAW_MESSAGES, TOPIC_SEGMENTS


def test_raw_topic_decodes_messages_and_controls():
    msg = ChatMessage(chat_id="c", message_id="1", sender="a", ts="2024-01-01T00:00:00Z", text="hi")
    assert decode(RAW_MESSAGES, encode(msg)) == msg
    ctl = StreamControl(control="flush", chat_id="c", at="2024-01-01T00:00:00Z")
    assert decode(RAW_MESSAGES, encode(ctl)) == ctl


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ("not json", "invalid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"chat_id": "c", "message_id": "1", "sender": "a", "text": "x"}', "ts"),
        ('{"chat_id": "c", "message_id": "1", "sender": "a", "text": "x", "ts": "2024-01-01T00:00:00"}',
         "time zone"),
        ('{"chat_id": "", "message_id": "1", "sender": "a", "text": "x", "ts": "2024-01-01T00:00:00Z"}',
         "chat_id"),
    ],
)
def test_bad_payloads_raise_decode_error_with_reason(payload, fragment):
    with pytest.raises(DecodeError) as exc:
        decode(RAW_MESSAGES, payload)
    assert fragment in str(exc.value)


def test_single_type_topic_rejects_wrong_model():
    with pytest.raises(DecodeError, match="TopicEvent invalid"):
        decode(TOPIC_SEGMENTS, '{"foo": 1}')
