"""Whom an item of the ranking is about (pure), read by the abstention check (:mod:`retrieval.router.abstain`):
who said it (a Q&A pair: the one who answers), its labelled parts (``Name: ...`` in summaries and Q&A pairs),
its sentences (a question states nothing; a compliment in the second person is about the other person; in a
two-person chat a line naming nobody, in no person, is about both: ``EVERYONE``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from language.extract.person import said_frame
from language.text import has_cjk, text_cache, tokenize
from retrieval.router.candidates import Cand
from retrieval.router.scoring import coverage

__all__ = ["EVERYONE", "about", "distinct", "is_question", "parts", "parts_memo", "said_by", "told_of"]


EVERYONE = "*"  # a part about both people of a two-person chat: their shared affairs, whoever wrote it


_TRAILING_NOTE = re.compile(r"\s*\[[^\]]*\]\s*$")


def is_question(text: str) -> bool:
    """A turn that asks (ends with a question mark, ignoring a trailing [annotation]) states nothing."""
    return _TRAILING_NOTE.sub("", text).rstrip().endswith(("?", "？"))


def said_by(c: Cand, participants: list[str]) -> str | None:
    """Who said the item: its speaker, or for a Q&A pair the answerer (``... A: Name: ...``)."""
    if c.doc.speaker:
        return c.doc.speaker
    if c.doc.kind == "qa":
        m = _ANSWERER.search(c.doc.text)
        if m and m[1] in participants:
            return m[1]
    return None


# ---- whom an item is about -----------------------------------------------------------------------------

_ANSWERER = re.compile(r"\bA: ([^:]{1,40}):")
_FIRST = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|our|ours|us)\b|我", re.I)
_SECOND = re.compile(r"\b(?:you|your|yours|you're|you've|yourself)\b|你|您", re.I)
_NEXT_MARK = re.compile(r"\s*\b[QA][:：]\s*$")  # the next part's Q:/A: marker, left at a part's end


def _mentions(text: str, person: str) -> bool:
    return _name_pattern(person).search(text) is not None


@text_cache(1024)
def _first_name(person: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(person.split()[0])}\b")


@text_cache(256)
def _people(participants: tuple[str, ...]) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """The distinct participants, and the pattern of a part's label (``Name:``, ``Q: Name:``) naming one."""
    people = frozenset(distinct(list(participants)))
    if not people:
        return people, None
    names = "|".join(re.escape(p) for p in sorted(people, key=len, reverse=True))
    return people, re.compile(r"(?:^|(?<=\s))(?:[QA][:：] ?)?(" + names + r")[:：] ?", re.I)


def distinct(people: list[str]) -> list[str]:
    """Participants once each, whatever the case (a topic may list ``alice`` where turns say ``Alice``)."""
    seen: dict[str, str] = {}
    for p in people:
        if p:
            seen.setdefault(p.casefold(), p)
    return list(seen.values())


def parts(c: Cand, participants: list[str], toks: set[str],
          aliases: Mapping[str, frozenset[str]] | None = None) -> list[tuple[str, set[str], float]]:  # fmt: skip
    """Whom an item is evidence about: ``[(person, the tokens stated about them, share), ...]``. Pure.

    - summaries are read as their labelled parts (``Name: ...``), each part as its speaker's turn would be (a
      part that asks states nothing); a Q&A pair is its answerer's, or its asker's when the answer is in no
      first person and speaks to the asker or answers the asker's own affairs;
    - a memory record in the distiller's frame for a line not about its speaker ("Remy said …") is read
      without the frame;
    - a turn that asks states nothing; a turn in the first person is about its speaker; one in the second
      person only, in a two-person chat, about the other participant (``your new hair colour``);
    - a memory record (fact, task...) naming other participants is read clause by clause: the words after a
      participant's name are about them, the words before any name about its speaker;
    - in a two-person chat a turn, or a record, in no person that names neither participant is about both
      (``EVERYONE``): "Reminder moved to Friday." from an assistant bot, "The boiler service is booked for the
      3rd." from a landlord state the two's shared affairs, not the writer's own.

    ``aliases``: an item token that also counts as a question keyword (a synonym, ``retrieval.router.synonyms``),
    in the tokens of a part as in the item's."""
    text, kind = c.doc.text, c.doc.kind
    tokenize = _aliased(aliases)
    people, label = _people(tuple(participants))
    if kind in ("summary", "qa"):
        labels = [(m.start(), m.end(), m[1]) for m in label.finditer(text)] if label is not None else []
        if labels and kind == "qa" and len(labels) >= 2:
            # a question and its answer: the pair is about the one who answers, with the whole pair's words
            # ("Q: Mel: How long have you been creating art? A: Caroline: Since I was 17"), unless the answer
            # says nothing of its writer and the question asks of the asker's own affairs: "Q: Ravi: can we
            # raise my protein? A: Nibble: Protein goal updated" is about Ravi's goal, not the bot's
            return [(_qa_subject(text, labels), toks, 1.0)]
        if labels:
            out = []
            for i, (_, end, who) in enumerate(labels):
                part = text[end : labels[i + 1][0] if i + 1 < len(labels) else len(text)]
                part = _NEXT_MARK.sub("", part)  # "Q: bob: ...? A: alice: ...": bob's part ends at its "?"
                if not part.rstrip().endswith(("?", "？")):
                    # each speaker's part is read as their turn would be ("Reminder moved to 9pm." from a
                    # bot is about both people of a two-person chat)
                    ptoks = set(tokenize(part))
                    out.extend(_turn_parts(part, who, people, ptoks, tokenize) if len(people) == 2 and ptoks
                               else [(who, ptoks, 1.0)])
            return out
    who = said_by(c, participants)
    if who is None or (kind == "turn" and is_question(text)):
        return []
    if kind == "turn":
        return _turn_parts(text, who, people, toks, tokenize)
    named = [p for p in sorted(people) if p.casefold() != who.casefold() and _mentions(text, p)]
    if named:
        return _record_parts(text, who, people, tokenize)
    # "Remy said the boiler is fixed": the distiller keeps who said a line that is not about them (in a
    # group too: then it is about the chat's shared affairs, not the writer's own)
    body = said_frame(who).sub("", text, count=1)
    if (len(people) == 2 or body != text) and not (_mentions(body, who) or _FIRST.search(body) or _SECOND.search(body)):
        return [(EVERYONE, toks, 1.0)]  # a record naming no one, in no person ("Reminder moved to Friday")
    return [(who, toks, 1.0)]


def _qa_subject(text: str, labels: list[tuple[int, int, str]]) -> str:
    """Whom a labelled Q&A pair is about: the answerer, or the asker when the answer is in no first person
    and either speaks to the asker ("your target is 2,000 now") or answers a question in the asker's first
    person only ("can we move my session?")."""
    asker, answerer = labels[0][2], labels[-1][2]
    if asker.casefold() == answerer.casefold():
        return answerer
    asked, answer = text[labels[0][1] : labels[-1][0]], text[labels[-1][1] :]
    if _FIRST.search(answer):
        return answerer
    if _SECOND.search(answer) or (_FIRST.search(asked) and not _SECOND.search(asked)):
        return asker
    return answerer


def _aliased(aliases: Mapping[str, frozenset[str]] | None) -> Callable[[str], list[str]]:
    """:func:`~language.text.tokenize`, plus the keywords ``aliases`` gives its tokens."""
    if not aliases:
        return tokenize

    def tokens(text: str) -> list[str]:
        toks = tokenize(text)
        return toks + [k for t in toks for k in aliases.get(t, ())]

    return tokens


def _record_parts(text: str, who: str, people: frozenset[str],
                  tokenize: Callable[[str], list[str]] = tokenize) -> list[tuple[str, set[str], float]]:  # fmt: skip
    """A memory record naming other participants, read clause by clause: the words after a participant's
    name (up to the next name) are about them, the words before any name about the speaker. "Joanna bets
    Nate would be getting a third turtle" states the third turtle about Nate, not Joanna."""
    marks = sorted((m.start(), p) for p in people for m in _name_pattern(p).finditer(text))
    sides: dict[str, list[str]] = {}
    start, current = 0, who
    for pos, person in marks:
        sides.setdefault(current, []).append(text[start:pos])
        start, current = pos, person
    sides.setdefault(current, []).append(text[start:])
    out = []
    for person, chunks in sides.items():
        toks = set(tokenize(" ".join(chunks)))
        if toks:
            out.append((person, toks, 1.0))
    return out


@text_cache(1024)
def _name_pattern(person: str) -> re.Pattern[str]:
    if has_cjk(person):
        return re.compile(re.escape(person))
    return _first_name(person)


@text_cache(1024)
def _nick(person: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(person.split()[0][:3])}\w*", re.I)


def _addressed(sent: str, person: str) -> bool:
    """The sentence names (or calls by a short form: "Mel" for Melanie) the other participant."""
    if has_cjk(person):
        return person in sent
    first = person.split()[0].casefold()
    return any(first.startswith(m[0].casefold()) for m in _nick(person).finditer(sent))


_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")


def _turn_parts(text: str, who: str, people: frozenset[str], toks: set[str],
                tokenize: Callable[[str], list[str]] = tokenize) -> list[tuple[str, set[str], float]]:  # fmt: skip
    """A turn read sentence by sentence: a sentence that asks states nothing, one in the second person only
    or calling the other by name (in a two-person chat) is about the other participant ("Wow, your new hair
    colour looks amazing!", "That charity race sounds great, Mel!"), the rest about the speaker. In a
    two-person chat a turn with no person in any of its statements (no first or second person, neither
    participant named) is about both (``EVERYONE``): "Saved: dentist on Friday at 10." from a bot; one sharing
    a photo stays the writer's.
    One sentence (or one side): the turn's own tokens."""
    others = sorted(p for p in people if p.casefold() != who.casefold())
    sides: dict[str, list[str]] = {}
    sents = [s for m in _SENTENCE.finditer(text) if (s := m[0].strip()) and not s.endswith(("?", "？"))]
    # (a turn sharing a photo, "[shares a photo of ...]", shows the writer's own things: theirs)
    if len(others) == 1 and sents and not _TRAILING_NOTE.search(text) and not any(
            _FIRST.search(s) or _SECOND.search(s) or _addressed(s, others[0]) or _mentions(s, who) for s in sents):
        return [(EVERYONE, toks, 1.0)]
    for sent in sents:
        # in a two-person chat a sentence not in the first person that says "you" or calls the other by name
        # ("That charity race sounds great, Mel!") is about them
        you = len(others) == 1 and not _FIRST.search(sent)
        you = you and (_SECOND.search(sent) is not None or _addressed(sent, others[0]))
        sides.setdefault(others[0] if you else who, []).append(sent)
    if len(sides) == 1:
        return [(next(iter(sides)), toks, 1.0)]
    return [(person, set(tokenize(" ".join(sents))), 1.0) for person, sents in sides.items()]


def about(
    c: Cand, participants: list[str], keys: dict[str, float], toks: set[str]
) -> list[tuple[str, float]]:
    """Whom an item is evidence about, with the keyword coverage of what it states about them (``parts``)."""
    return [(who, coverage(keys, t) * share) for who, t, share in parts(c, participants, toks)]


Spans = Callable[[Cand], list[tuple[str, set[str], float]]]


_PARTS: dict[tuple, list[tuple[str, set[str], float]]] = {}
MAX_PARTS = 20_000


def parts_memo(participants: list[str], tokens: Mapping[str, set[str]],
               aliases: Mapping[str, frozenset[str]] | None = None) -> Spans:  # fmt: skip
    """``parts`` of each candidate of one request (its tokens from ``tokens``), read once however many
    features ask (the abstention check reads its top items three times), and kept for the next requests
    keyed by all it reads (a chat's questions rank many of the same items). Callers only read the result."""
    memo: dict[int, tuple[Cand, list[tuple[str, set[str], float]]]] = {}
    people = tuple(participants)
    alias_key = frozenset(aliases.items()) if aliases else None

    def spans(c: Cand) -> list[tuple[str, set[str], float]]:
        got = memo.get(id(c))
        if got is None or got[0] is not c:
            d, toks = c.doc, tokens.get(c.doc_id, set())
            key = (d.text, d.kind, d.speaker, people, frozenset(toks), alias_key)
            if (found := _PARTS.get(key)) is None:
                if len(_PARTS) >= MAX_PARTS:
                    _PARTS.clear()
                found = _PARTS[key] = parts(c, participants, toks, aliases)
            got = memo[id(c)] = (c, found)
        return got[1]

    return spans


_OWN = re.compile(r"(?i)\b(?:my|our|mine|ours)\b|我的|我们的")


def told_of(top: list[Cand], names: list[str], participants: list[str], tokens: dict[str, set[str]] | None = None,
            keys: Mapping[str, float] | None = None) -> bool:
    """Another participant's line speaks of or to the one named (by first name, or as "you" in a two-person
    chat), of what the question asks (one of its ``keys``, when given) and of nothing of their own ("my",
    "our"): for "Who approves Marisol's designs?", "kemi signed it all off, cheers marisol" is about
    Marisol's designs; "Hey Priya, I water my plants" is about Omar's, "thank you gwen!!" about nothing asked."""
    named = {n.casefold() for n in names}
    firsts = [n.split()[0] for n in names if n.split()]
    two = len(distinct(participants)) == 2
    for c in top:
        who = said_by(c, participants)
        if who is None or who.casefold() in named or c.doc.kind != "turn" or _OWN.search(c.doc.text):
            continue
        if keys and tokens is not None and not set(keys) & tokens.get(c.doc_id, set()):
            continue
        if any(re.search(re.escape(f) if has_cjk(f) else rf"(?i)\b{re.escape(f)}\b", c.doc.text) for f in firsts):
            return True
        if two and _SECOND.search(c.doc.text):
            return True
    return False
