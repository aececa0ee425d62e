"""The memory-update benchmark's data generator: deterministic, held out, gold consistent with the chats."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime

import pytest

from bench import updates_templates as T
from bench.updates_gen import Dataset, generate, norm, sidecar_path, value_pool, write_dataset
from schemas import ChatMessage

CHATS = 40


@pytest.fixture(scope="module")
def tune() -> Dataset:
    return generate("tune", CHATS)


@pytest.fixture(scope="module")
def test_split() -> Dataset:
    return generate("test", CHATS)


def final_texts(ds: Dataset) -> dict[tuple[str, str], str]:
    """(chat, message id) -> the text after edits and retractions (the last line with that id)."""
    return {(m["chat_id"], m["message_id"]): m["text"] for m in ds.messages}


def first_texts(ds: Dataset) -> dict[tuple[str, str], dict]:
    out: dict[tuple[str, str], dict] = {}
    for m in ds.messages:
        out.setdefault((m["chat_id"], m["message_id"]), m)
    return out


def said(names: list[str], text: str) -> bool:
    return any(norm(n) in norm(text) for n in names)


def test_same_seed_same_data(tune):
    assert generate("tune", CHATS).model_dump() == tune.model_dump()
    assert generate("tune", 3).messages == [m for m in tune.messages if m["chat_id"] < "upd-tune-003"]


def test_default_is_200_chats_half_chinese():
    ds = generate("test")
    langs = Counter(q.lang for q in ds.questions)
    chats = {m["chat_id"] for m in ds.messages}
    assert ds.chats == len(chats) == 200
    assert sum(c.endswith("-zh") for c in chats) == 100
    assert 0.4 < langs["zh"] / sum(langs.values()) < 0.6
    assert Counter(m["chat_type"] for m in ds.messages).keys() == {"group", "private"}


def test_template_halves_are_disjoint():
    lists: list[list] = [v for fam in T.TEMPLATES.values() for lang in fam.values() for v in lang.values()]
    lists += [v for d in (*T.NOUNS.values(), *T.VALUES.values()) for v in d.values()]
    for table in (T.MEMBERS, T.OWNERS, T.ABSENT, T.EDITS, T.EDIT_NOUNS, T.RETRACTIONS, T.CANARIES, T.CANARY_REPLIES,
                  T.ABSENT_QUESTIONS, T.NEVER_QUESTIONS, T.REACTIONS):
        lists += list(table.values())
    lists += [T.CANARY_SYLLABLES, [tuple(f) for f in T.FILLER["en"]], [tuple(f) for f in T.FILLER["zh"]]]
    for items in lists:
        a, b = T.half(items, 0), T.half(items, 1)
        assert a and b and not set(a) & set(b), items
    for lang in ("en", "zh"):
        for pool in ("plan_date", "lives", "social_time"):
            assert not {v.surface for v in value_pool(pool, lang, 0)} & {v.surface for v in value_pool(pool, lang, 1)}


def test_splits_differ_and_share_no_text_name_or_value(tune, test_split):
    assert (tune.seed, test_split.seed) == (1, 2)
    texts = [{m["text"] for m in ds.messages if m["text"]} for ds in (tune, test_split)]
    assert not texts[0] & texts[1]
    names = [{m["sender_name"] for m in ds.messages} for ds in (tune, test_split)]
    assert not names[0] & names[1]
    gold = [{n[0] for q in ds.questions for n in [q.expect, *q.stale] if n} for ds in (tune, test_split)]
    assert gold[0] and gold[1] and not gold[0] & gold[1]
    questions = [{q.question for q in ds.questions} for ds in (tune, test_split)]
    assert not questions[0] & questions[1]


def test_every_question_type_and_family_occurs(tune):
    types = Counter(q.type for q in tune.questions)
    assert set(types) == {"current", "answerable", "edit", "retraction", "deleted", "unanswerable"}
    assert {q.family for q in tune.questions if q.type == "current"} == set(T.FAMILIES)
    assert {q.family for q in tune.questions if q.type == "unanswerable"} == {"member", "absent", "never"}


@pytest.mark.parametrize("split", ["tune", "test_split"])
def test_gold_values_are_stated_in_the_chat(split, request):
    ds: Dataset = request.getfixturevalue(split)
    final, first = final_texts(ds), first_texts(ds)
    chat_text: dict[str, list[str]] = {}
    for m in ds.messages:
        chat_text.setdefault(m["chat_id"], []).append(m["text"])
    for q in ds.questions:
        ev = [(q.chat_id, e) for e in q.evidence]
        if q.type in ("current", "answerable"):
            assert ev and all(said(q.expect, final[e]) for e in ev), q
            assert all(any(said(v, t) for t in chat_text[q.chat_id]) for v in q.stale), q
            assert (q.type == "current") == bool(q.stale)
        elif q.type == "edit":
            (e,) = ev
            assert said(q.stale[0], first[e]["text"]) and not said(q.expect, first[e]["text"]), q
            assert said(q.expect, final[e]) and not said(q.stale[0], final[e]), q
        elif q.type == "retraction":
            (e,) = ev
            assert said(q.stale[0], first[e]["text"]) and final[e] == "" and not q.expect
        elif q.type == "unanswerable":
            assert not q.expect and not q.stale and not q.evidence
        for v in q.stale:  # a superseded value can never be mistaken for the current one
            assert not any(norm(a) in norm(b) or norm(b) in norm(a) for a in v for b in q.expect), q


@pytest.mark.parametrize("split", ["tune", "test_split"])
def test_canaries_only_in_the_deleted_users_messages(split, request):
    ds: Dataset = request.getfixturevalue(split)
    assert ds.deletions
    first = first_texts(ds)
    for d in ds.deletions:
        assert len(d.canaries) == 2 and d.message_ids
        for (chat, mid), m in first.items():
            own = chat == d.chat_id and mid in d.message_ids
            assert own == (chat == d.chat_id and m["sender"] == d.user)
            for c in d.canaries:
                assert (norm(c) in norm(m["text"])) <= own, (c, m)
        asked = [q for q in ds.questions if q.chat_id == d.chat_id and q.type == "deleted"]
        assert len(asked) == 2 and all(d.user_name in q.question for q in asked)
        replies = [m for m in first.values() if m["chat_id"] == d.chat_id and m["reply_to"] in d.message_ids]
        assert any(m["sender"] != d.user for m in replies)


def test_messages_edits_and_retractions_are_valid_chat_messages(tune):
    seen: dict[tuple[str, str], ChatMessage] = {}
    edits = retractions = 0
    for rec in tune.messages:
        m = ChatMessage.model_validate(rec)
        assert m.ts.utcoffset() is not None and m.sender_name
        key = (m.chat_id, m.message_id)
        if key in seen:
            orig = seen[key]
            assert m.ts == orig.ts and m.sender == orig.sender
            assert datetime.fromisoformat(m.metadata["edited_at"]) > m.ts
            if m.metadata.get("retracted"):
                retractions += 1
                assert m.text == ""
            else:
                edits += 1
                assert m.text and m.text != orig.text
        else:
            assert not m.metadata
            seen[key] = m
        if m.reply_to:
            assert (m.chat_id, m.reply_to) in seen
    assert edits and retractions
    zh = [ChatMessage.model_validate(r) for r in tune.messages if r["chat_id"].endswith("-zh")]
    assert {m.ts.utcoffset().total_seconds() for m in zh} == {8 * 3600}


def test_chats_span_days_and_topics_interleave(tune):
    by_chat: dict[str, list[dict]] = {}
    for m in tune.messages:
        by_chat.setdefault(m["chat_id"], []).append(m)
    for msgs in by_chat.values():
        days = {m["ts"][:10] for m in msgs}
        assert len(days) >= 5 and 20 <= len(msgs) <= 80
    per_chat = Counter(q.chat_id for q in tune.questions)
    assert min(per_chat.values()) >= 4


def test_write_dataset_writes_messages_and_sidecar(tmp_path):
    ds = generate("tune", 4)
    path = tmp_path / "upd.jsonl"
    side = write_dataset(ds, path)
    assert side == sidecar_path(path) == tmp_path / "upd.questions.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == ds.messages
    body = json.loads(side.read_text(encoding="utf-8"))
    assert body["message_count"] == len(lines) and len(body["questions"]) == len(ds.questions)
    assert body["split"] == "tune" and body["seed"] == 1


def test_no_statement_reads_as_history():
    """The bench counts an item starting with "previously"/"以前"/"之前" as marked superseded: no phrasing may."""
    for fam in T.TEMPLATES.values():
        for lang in fam.values():
            for kind, items in lang.items():
                assert not [t for t in items if t.casefold().startswith(("previously", "以前", "之前"))], kind
