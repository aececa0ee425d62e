import json
from datetime import UTC, datetime

from memstream.formats import parse_locomo_datetime, read_irc, read_jsonl, read_locomo


def test_locomo_datetime():
    assert parse_locomo_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_datetime("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)


def test_locomo_reader_keeps_order_and_session_time(tmp_path):
    conv = {"sample_id": "conv-x", "qa": [], "conversation": {
        "speaker_a": "A", "speaker_b": "B",
        "session_2_date_time": "10:00 am on 2 June, 2023",
        "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "later"}],
        "session_1_date_time": "9:00 am on 1 June, 2023",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                      {"speaker": "B", "dia_id": "D1:2", "text": "look", "blip_caption": "a red bike"}],
    }}
    path = tmp_path / "l.json"
    path.write_text(json.dumps([conv]))
    msgs = [p.message for p in read_locomo(path)]
    assert [m.message_id for m in msgs] == ["D1:1", "D1:2", "D2:1"]
    assert msgs[0].ts < msgs[1].ts < msgs[2].ts
    assert msgs[0].ts == datetime(2023, 6, 1, 9, 0, tzinfo=UTC)
    assert "a red bike" in msgs[1].text
    assert all(m.chat_id == "conv-x" for m in msgs)


def test_irc_reader_mentions_and_rollover(tmp_path):
    path = tmp_path / "2005-06-27_12.ascii.txt"
    path.write_text("[23:58] <bob> hello\n=== joe joined\n[23:59] <amy> bob: hi there\n[00:01] <bob> amy, yes\n")
    msgs = [p.message for p in read_irc(path)]
    assert [m.message_id for m in msgs] == ["0", "2", "3"]
    assert msgs[1].mentions == ["bob"] and msgs[2].mentions == ["amy"]
    assert msgs[2].ts > msgs[1].ts and msgs[2].ts.day == 28


def test_jsonl_reader_reports_bad_lines(tmp_path):
    path = tmp_path / "m.jsonl"
    good = {"chat_id": "c", "message_id": "1", "sender": "a", "ts": "2024-01-01T00:00:00Z", "text": "hi"}
    path.write_text(json.dumps(good) + "\n{broken\n\n" + json.dumps({**good, "ts": "yesterday"}) + "\n")
    parsed = list(read_jsonl(path))
    assert [p.message is not None for p in parsed] == [True, False, False]
    assert "line 2" in parsed[1].error and "line 4" in parsed[2].error
