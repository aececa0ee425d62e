"""Currency (pure): what a superseded statement became, and a ranking where the current value comes first.

A fact superseded by a changed value (UPDATE of a slot) or retracted (DELETE) leaves evidence behind: its
own invalidated version (found by history searches) and, above all, the raw turn that stated it. Those
may still match a question better than the new statement. :func:`apply_currency` runs after any
strategy's ranking: each stale item is annotated ("superseded (until …) by: …" / "retracted") and placed
below the current version, which is brought in when the search did not find it; the current version gets
"previously: … (until …)", so a "now" question sees the newest value first and its history in the context.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from language.extract.slots import states_replacement
from language.text import tokenize
from retrieval.protocols import Doc
from retrieval.router.answer_type import asked_kind, lacks_kind, states_kind
from retrieval.router.candidates import Cand
from retrieval.router.strategies import Ranking
from schemas import MemoryKind, MemoryRecord

if TYPE_CHECKING:  # for the annotations only: supersede is the heavier module
    from retrieval.router.supersede import Item, Link

__all__ = ["Succession", "apply_currency", "build_succession", "doc_from_record", "heads_to_fetch",
           "is_current_version", "notes_for", "PREVIOUSLY"]

RETRACTED = ""
PREVIOUSLY = "previously: "  # the note on a current version; readers find it (is_current_version)


def _norm(text: str | None) -> str:
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text or "").lower())


def value_in(text: str, value: str | None) -> bool:
    return bool(value) and _norm(value) in _norm(text)


_FIRST_PERSON = re.compile(r"(?i)\b(?:i|i'm|i'll|me|my)\b|我")


def still_states(turn: str, old: MemoryRecord, speaker: str | None = None) -> bool:
    """The turn (as it reads now: it may have been edited since) still states the superseded fact; a
    value that is the turn's own speaker may be said in the first person ("发布说明我来负责")."""
    if old.value:
        if speaker and _norm(old.value) == _norm(speaker) and _FIRST_PERSON.search(turn):
            return True
        return value_in(turn, old.value)
    words = set(tokenize(old.text)) - set(tokenize(old.speaker or ""))
    return bool(words) and len(words & set(tokenize(turn))) >= 0.6 * len(words)


@dataclass
class Succession:
    """The chat's invalidated facts, as links from old to new."""

    successor: dict[str, str] = field(
        default_factory=dict
    )  # superseded memory id -> replacing id ("" retracted)
    stale_sources: dict[str, str] = field(default_factory=dict)  # message id -> replacing memory id
    records: dict[str, MemoryRecord] = field(default_factory=dict)  # invalidated facts by id
    # facts without a slot replaced by a newer version: a change when that version states one ("吉他学不下去了，
    # 现在改练钢琴" replacing "在学吉他"), else more detail; told apart once the version is at hand
    replaced: dict[str, str] = field(default_factory=dict)  # superseded memory id -> replacing id
    replaced_sources: dict[str, str] = field(default_factory=dict)  # message id -> superseded memory id
    replaced_records: dict[str, MemoryRecord] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.successor or self.replaced)

    def head(self, memory_id: str) -> str:
        """The live end of a chain of replacements (``""`` when it ends in a retraction)."""
        seen: set[str] = set()
        while memory_id not in seen and (memory_id in self.successor or memory_id in self.replaced):
            seen.add(memory_id)
            memory_id = self.successor.get(memory_id, self.replaced.get(memory_id, memory_id))
        return memory_id

    def stale_head(self, c: Cand) -> tuple[str, MemoryRecord] | None:
        """For a stale item: (its current replacement id or ``""``, the superseded record); else None."""
        if c.doc_id in self.successor:
            return self.head(c.doc_id), self.records[c.doc_id]
        if c.doc_id in self.replaced:
            return self.head(c.doc_id), self.replaced_records[c.doc_id]
        if c.doc.kind != "turn":
            return None  # a live derived record citing a stale message was rewritten or states other things
        for sources, records in ((self.stale_sources, self.records), (self.replaced_sources, self.replaced_records)):
            for m in c.doc.source_message_ids:
                old = sources.get(m)
                if old is not None and still_states(c.doc.text, records[old], c.doc.speaker):
                    return self.head(old), records[old]
        return None


def is_value_change(r: MemoryRecord) -> bool:
    """A fact invalidated because its value changed or it was retracted — not because of more detail."""
    return (
        r.kind == MemoryKind.FACT
        and r.valid_to is not None
        and (r.attribute is not None or not r.superseded_by)
    )


def build_succession(invalidated: Iterable[MemoryRecord]) -> Succession:
    s = Succession()
    for r in sorted(invalidated, key=lambda r: r.valid_from):
        if not is_value_change(r):
            if r.kind == MemoryKind.FACT and r.valid_to is not None and r.superseded_by:
                s.replaced_records[r.memory_id] = r
                s.replaced[r.memory_id] = r.superseded_by
                for m in r.source_message_ids:
                    s.replaced_sources[m] = r.memory_id
            continue
        s.records[r.memory_id] = r
        s.successor[r.memory_id] = r.superseded_by or RETRACTED
        for m in r.source_message_ids:
            s.stale_sources[m] = r.memory_id  # the newest stale statement of a message wins
    return s


def heads_to_fetch(succ: Succession, cands: Iterable[Cand], known: Mapping[str, Cand]) -> list[str]:
    """Ids of current versions that stale candidates point to but the search did not bring."""
    want: list[str] = []
    for c in cands:
        hit = succ.stale_head(c)
        if hit and hit[0] and hit[0] not in known and hit[0] not in want:
            want.append(hit[0])
    return want


def doc_from_record(r: MemoryRecord) -> Doc:
    return Doc(
        doc_id=r.memory_id, chat_id=r.chat_id, kind=r.kind.value, text=r.text, speaker=r.speaker,
        ts=r.valid_from, valid_to=r.valid_to, topic_id=r.topic_id,
        source_message_ids=list(r.source_message_ids), entities=list(r.entities),
    )  # fmt: skip


def _until(r: MemoryRecord) -> str:
    return f"until {r.valid_to:%Y-%m-%d}" if r.valid_to else f"said {r.valid_from:%Y-%m-%d}"


def is_current_version(note: str | None) -> bool:
    """The item replaced an older statement: currency (below) or supersession wrote "previously: …" on it."""
    return bool(note) and PREVIOUSLY in note


def _add_note(notes: dict[str, str], doc_id: str, note: str) -> None:
    old = notes.get(doc_id)
    if old is None:
        notes[doc_id] = note
    elif note.split(":")[0] not in old:
        notes[doc_id] = f"{old}; {note}"


def apply_currency(ranking: Ranking, succ: Succession, fetched: Mapping[str, Cand], k: int,
                   question: str = "") -> Ranking:
    """Stale items below their current version (brought in from ``fetched`` when missing), annotated. A change
    of another attribute leaves a statement current for the ``question``: a version that states no value of the
    kind asked (``answer_type``) did not replace the older one's ("聚会推迟到七点" after "聚会在望京的海底捞，周六六点",
    asked where)."""
    if succ.empty:
        return ranking
    kind = asked_kind(question) if question else None
    scores = {c.doc_id: s for c, s in ranking.scored}
    cands = {c.doc_id: c for c, _ in ranking.scored}
    notes = dict(ranking.notes)
    order = [c.doc_id for c, _ in ranking.scored]
    hits = {i: succ.stale_head(cands[i]) for i in order}
    live = [scores[i] for i in order if hits[i] is None]
    for doc_id in list(order):
        c = cands[doc_id]
        hit = hits[doc_id]
        if hit is None:
            continue
        head, old = hit
        if not head:  # kept in view as history, but not above the best live item ("Porto is off")
            _add_note(notes, doc_id, f"retracted ({_until(old)}): no longer true")
            if live:
                scores[doc_id] = min(scores[doc_id], max(live) - 1e-3)
            continue
        if head == doc_id:
            continue
        current = cands.get(head) or fetched.get(head)
        if old.memory_id in succ.replaced and (current is None or not states_replacement(current.doc.text)):
            continue  # replaced by a more detailed version, not by a change
        if (
            current is not None
            and c.doc.kind == "turn"
            and set(c.doc.source_message_ids) & set(current.doc.source_message_ids)
        ):
            continue  # the message itself now says the current thing (an edit)
        if current is None:
            _add_note(notes, doc_id, f"superseded ({_until(old)})")
            continue
        if kind is not None and states_kind(old.text, kind, question) and lacks_kind(current.doc.text, kind, question):
            continue  # what changed is not what is asked
        if head not in cands:
            cands[head] = current
            scores[head] = scores[doc_id]
            order.append(head)
        if scores[head] <= scores[doc_id]:
            scores[head] = scores[doc_id] + 1e-3
        scores[doc_id] = min(scores[doc_id], scores[head] - 1e-3)
        _add_note(notes, doc_id, f"superseded ({_until(old)}) by: {current.doc.text[:100]}")
        _add_note(notes, head, f"{PREVIOUSLY}{old.text[:100]} ({_until(old)})")
    position: dict[str, int] = {}  # ties: the ranking's order (a doc's first place, as order.index gave)
    for i, doc_id in enumerate(order):
        position.setdefault(doc_id, i)
    scored = sorted(((cands[i], scores[i]) for i in order), key=lambda cs: (-cs[1], position[cs[0].doc_id]))
    return Ranking(ranking.strategy, scored, notes, ranking.lines, ranking.chronological)


_CURRENT_NOTE = re.compile(r"(?:^|;\s*)(?:current [^;]*|latest statement[^;]*)")


def notes_for(items: Sequence[Item], links: Sequence[Link], notes: dict[str, str]) -> dict[str, str]:
    """``notes`` with each link written on both items; an item something replaced loses any note calling it
    current (a stale value labelled current is worse than no label)."""
    out = dict(notes)
    by_id = {x.doc_id: x for x in items}

    def add(doc_id: str, note: str) -> None:
        out[doc_id] = f"{out[doc_id]}; {note}" if out.get(doc_id) else note

    for link in links:
        old, new = by_id[link.old], by_id[link.new]
        if out.get(link.old):
            out[link.old] = _CURRENT_NOTE.sub("", out[link.old]).strip("; ") or ""
            if not out[link.old]:
                del out[link.old]
        add(link.old, f"superseded (said {old.ts:%Y-%m-%d}) by: {new.text[:100]} (said {new.ts:%Y-%m-%d})")
        add(link.new, f"{PREVIOUSLY}{old.text[:100]} (said {old.ts:%Y-%m-%d})")
    return out
