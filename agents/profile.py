"""Per-person profile memories: what each participant did, likes, owns or visited, by attribute class (pure).

A profile record gathers one person's statements of one class (``profile:reading`` of Melanie: every book she
mentioned reading), one line per source message, each line traceable to its message: line ``i`` of the text
is ``source_message_ids[i]``. It is built from the distilled facts without a model (the classes and their cue
words are :mod:`agents.profile_lexicon`) and kept current as topics are distilled: a topic that adds lines
UPDATEs the record (the old version is invalidated; the store keeps the newest few, :func:`kept_versions`:
every line is dated and carries its message, so the live version is the history); lines of edited or retracted
messages are replaced by what the messages say now. Its sources are ordinary message ids: a deletion removes
the deleted person's profiles, and another person's profile loses just the deleted messages' lines
(:func:`retrieval.deletion.trimmed_profiles`).

Retrieval reads profiles by attribute (``profile:<class>``) for set questions ("What books has Melanie
read?", "她去过哪些城市？") and shows the lines that match the question (:mod:`retrieval.router.profiles`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from agents.profile_lexicon import classes_of, cues_for
from language.text import TextMap, has_cjk, tokenize
from schemas import CandidateFact, DecisionOp, MemoryDecision, MemoryKind, MemoryRecord, stable_id

__all__ = [
    "PREFIX",
    "ProfileLine",
    "class_of",
    "classes_touched",
    "fact_lines",
    "merge_lines",
    "parse_lines",
    "profile_decisions",
    "render_lines",
    "kept_versions",
]

PREFIX = "profile:"
MAX_LINE_WORDS = 24  # a line is one message's statement, clipped around its first cue word
MAX_LINES = 400  # per record: the oldest lines go first beyond this
KEPT_VERSIONS = 16  # superseded versions of a profile kept (the store drops older ones: kept_versions)
_WORD = re.compile(r"\S+")


class ProfileLine(NamedTuple):
    """One message's statement of one class about one person (a tuple: a long chat's consolidation reads
    hundreds of lines per profile it updates; a pydantic model cost 2 us a line to build)."""

    message_id: str
    at: datetime
    text: str


def class_of(attribute: str | None) -> str | None:
    return attribute[len(PREFIX) :] if attribute and attribute.startswith(PREFIX) else None


def _clip(text: str, subject: str, cues: frozenset[str] | None = None) -> str:
    """The statement without its leading subject name, at most ``MAX_LINE_WORDS`` words around its first cue
    (Chinese: characters). Pure."""
    body = text.strip()
    if body.startswith(subject + " "):
        body = body[len(subject) + 1 :]
    if has_cjk(body):
        return body if len(body) <= 3 * MAX_LINE_WORDS else body[: 3 * MAX_LINE_WORDS] + "…"
    words = _WORD.findall(body)
    if len(words) <= MAX_LINE_WORDS:
        return body
    first = next((i for i, w in enumerate(words) if cues and set(tokenize(w)) & cues), 0)
    start = max(0, min(first - MAX_LINE_WORDS // 3, len(words) - MAX_LINE_WORDS))
    clipped = " ".join(words[start : start + MAX_LINE_WORDS])
    return ("…" if start else "") + clipped + ("…" if start + MAX_LINE_WORDS < len(words) else "")


def _about(f: CandidateFact | MemoryRecord, people: set[str]) -> str | None:
    """The participant a fact is about: its subject when that is a participant, else its speaker's own
    first-person statement (subject unset). Pure."""
    if f.subject in people:
        return f.subject
    return f.speaker if f.subject is None and f.speaker in people else None


def fact_lines(
    facts: Iterable[CandidateFact | MemoryRecord], participants: Iterable[str]
) -> dict[tuple[str, str], list[ProfileLine]]:
    """(person, class) -> one line per source message of the facts about that person carrying the class's
    cues (several facts of one message join in one line). Only facts (not summaries, Q&A or tasks), not
    negated ones. Pure."""
    people = set(participants)
    parts: dict[tuple[str, str, str], list[str]] = {}
    when: dict[str, datetime] = {}
    for f in facts:
        if f.kind != MemoryKind.FACT or getattr(f, "negated", False) or not f.source_message_ids:
            continue
        who = _about(f, people)
        if who is None:
            continue
        tokens = set(tokenize(f.text))
        mid = f.source_message_ids[0]
        when[mid] = getattr(f, "event_time", None) or f.valid_from  # type: ignore[union-attr]
        cues = cues_for(tokens)  # a text with no CJK meets only the cues with none (no jieba for English)
        for cls in classes_of(tokens):
            text = _clip(f.text, who, cues[cls])
            bucket = parts.setdefault((who, cls, mid), [])
            if text not in bucket:
                bucket.append(text)
    out: dict[tuple[str, str], list[ProfileLine]] = {}
    for (who, cls, mid), texts in parts.items():
        joined = "; ".join(texts).replace("\n", " ")
        out.setdefault((who, cls), []).append(ProfileLine(message_id=mid, at=when[mid], text=joined))
    return out


def classes_touched(facts: Iterable[CandidateFact | MemoryRecord], participants: Iterable[str]) -> set[str]:
    """The classes whose profiles :func:`profile_decisions` would add lines to for these facts. Pure."""
    return {cls for _, cls in fact_lines(facts, participants)}


def render_lines(lines: Iterable[ProfileLine]) -> str:
    return "\n".join(f"{ln.at:%Y-%m-%d} {ln.text}" for ln in lines)


def parse_lines(record: MemoryRecord) -> list[ProfileLine]:
    """A stored profile's lines with their messages (line ``i`` is ``source_message_ids[i]``). Pure."""
    key = (record.text, tuple(record.source_message_ids), record.valid_from)
    lines = _LINES.get(key)
    if lines is None:
        lines = _parse(*key)
        _LINES.put(key, lines)
    return list(lines)


# every consolidation that adds to a person's class re-reads that profile (up to 400 lines, ~40 KB): the
# version it reads was written by the previous one, which puts its lines here (:func:`_remember`)
_LINES: TextMap[tuple[str, tuple[str, ...], datetime], tuple[ProfileLine, ...]] = TextMap(256)


def _parse(text: str, ids: tuple[str, ...], valid_from: datetime) -> tuple[ProfileLine, ...]:
    out = []
    days: dict[str, datetime] = {}  # a person's lines share days
    for mid, raw in zip(ids, text.split("\n"), strict=False):
        day, _, line = raw.partition(" ")
        at = days.get(day)
        if at is None:
            try:
                at = days[day] = datetime.fromisoformat(day).replace(tzinfo=valid_from.tzinfo)
            except ValueError:
                at, line = valid_from, raw
        out.append(ProfileLine(mid, at, line))
    return tuple(out)


def _remember(record: MemoryRecord, lines: Sequence[ProfileLine]) -> None:
    """Hand :func:`parse_lines` what it will read back from ``record`` (rendered from ``lines``): each line at
    its day, in the record's zone. Not for years before 1000 (``%Y`` does not pad them, so they parse as
    text) nor lines holding a newline."""
    if any(ln.at.year < 1000 or "\n" in ln.text for ln in lines):
        return
    tz = record.valid_from.tzinfo
    parsed = []
    for ln in lines:
        at = ln.at
        if at.hour or at.minute or at.second or at.microsecond or at.tzinfo is not tz:  # else: read back as is
            ln = ProfileLine(ln.message_id, datetime(at.year, at.month, at.day, tzinfo=tz), ln.text)
        parsed.append(ln)
    _LINES.put((record.text, tuple(record.source_message_ids), record.valid_from), tuple(parsed))


def kept_versions(record: MemoryRecord | None) -> int | None:
    """How many superseded versions of ``record``'s memory the store keeps when an UPDATE writes it (None:
    all). A profile keeps its newest ``KEPT_VERSIONS``: each version carries every dated line of the one
    before (less the lines of edited, retracted or deleted messages, which must not outlive them, and beyond
    ``MAX_LINES`` the oldest, whose facts keep them), so the live version is the history; keeping every
    copy made a long chat's storage grow with the square of its length (133 profiles of five chats had
    4,320 versions, 80% of the file, at 12,000 turns)."""
    return KEPT_VERSIONS if record is not None and record.kind == MemoryKind.PROFILE else None


def merge_lines(
    old: Iterable[ProfileLine], new: Iterable[ProfileLine], replaced: Iterable[str] = ()
) -> list[ProfileLine]:
    """The old lines minus those of ``replaced`` messages (edited, retracted, re-distilled), plus the new ones
    (a message's new line replaces its old one), oldest first, at most ``MAX_LINES``. Pure."""
    gone = set(replaced)
    by_id = {ln.message_id: ln for ln in old if ln.message_id not in gone}
    by_id.update({ln.message_id: ln for ln in new})
    ordered = sorted(by_id.values(), key=lambda ln: (ln.at, ln.message_id))
    return ordered[-MAX_LINES:]


def profile_decisions(
    chat_id: str,
    facts: Iterable[CandidateFact | MemoryRecord],
    participants: Iterable[str],
    current: Mapping[tuple[str, str], Sequence[MemoryRecord]],
    source_event_id: str,
    at: datetime,
    replaced: Iterable[str] = (),
) -> list[MemoryDecision]:
    """ADD a profile for each (person, class) the facts start, UPDATE each one they change (``current``: the
    live profile records by (person, class); two live versions of one profile, written by consolidators that
    did not see each other's, are merged into the newest and the other is invalidated). ``replaced``: messages
    whose earlier lines give way (an edit or a re-distillation of them). A profile left without lines is
    invalidated (DELETE). Pure."""
    gone = set(replaced)
    found = fact_lines(facts, participants)
    touched = [
        k
        for k, rs in current.items()
        if k not in found and (len(rs) > 1 or any(gone & set(r.source_message_ids) for r in rs))
    ]
    out: list[MemoryDecision] = []
    for who, cls in [*found, *touched]:
        olds = sorted(current.get((who, cls), ()), key=lambda r: (r.version, r.valid_from, r.memory_id))
        old = olds[-1] if olds else None
        merged = [ln for r in olds for ln in parse_lines(r)]
        lines = merge_lines(merged, found.get((who, cls), []), gone)
        text = render_lines(lines)
        out += [_decision(DecisionOp.DELETE, chat_id, r, None, source_event_id, at) for r in olds[:-1]]
        if old is None and not lines or old is not None and text == old.text:
            continue
        if not lines:
            out.append(_decision(DecisionOp.DELETE, chat_id, old, None, source_event_id, at))
            continue
        mid = stable_id("profile", chat_id, who, cls, source_event_id)
        record = MemoryRecord(
            memory_id=mid, chat_id=chat_id, kind=MemoryKind.PROFILE, text=text, speaker=who, subject=who,
            attribute=PREFIX + cls, entities=[who], valid_from=max(at, old.valid_from) if old else at,
            version=old.version + 1 if old else 1, source_message_ids=[ln.message_id for ln in lines],
            source_event_id=source_event_id,
        )  # fmt: skip
        _remember(record, lines)
        op = DecisionOp.UPDATE if old is not None else DecisionOp.ADD
        out.append(_decision(op, chat_id, old, record, source_event_id, at))
    return out


def _decision(
    op: DecisionOp,
    chat_id: str,
    old: MemoryRecord | None,
    record: MemoryRecord | None,
    sid: str,
    at: datetime,
) -> MemoryDecision:
    key = record.memory_id if record is not None else f"{old.memory_id}:{sid}"  # type: ignore[union-attr]
    return MemoryDecision(
        decision_id=stable_id("decision", "profile", key), op=op, chat_id=chat_id,
        target_memory_id=old.memory_id if old is not None else None, record=record,
        reason=f"profile {op.value.lower()}", source_event_id=sid, at=at,
    )  # fmt: skip
