"""One scripted chat of the memory-update benchmark (:mod:`bench.updates_gen`): :class:`ChatBuilder`
draws its people, sessions, changing facts, edits, retractions, canaries and questions from a seeded
``random.Random`` and one half of :mod:`bench.updates_templates`, and renders the messages."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal

from bench import updates_templates as T
from bench.updates_model import Value, conflict, norm, value_pool

__all__ = ["PLATFORM", "ChatBuilder", "build_chat"]

PLATFORM = "updates-bench"


@dataclass
class _Msg:
    key: int
    sender: str
    when: datetime
    text: str
    group: str  # the fact/thread it belongs to
    reply_to: int | None = None
    mentions: list[str] = field(default_factory=list)
    edit: tuple[str, datetime] | None = None  # new text, edited at
    retract: datetime | None = None


@dataclass
class _Fact:
    group: str
    values: list[Value]
    keys: list[int]  # statement message per value


class ChatBuilder:
    def __init__(self, rng: random.Random, chat_id: str, lang: str, half: int, canaries: set[str]) -> None:
        self.rng, self.chat_id, self.lang, self.half, self.canaries = rng, chat_id, lang, half, canaries
        self.group = rng.random() < 0.6
        self.chat_type: Literal["group", "private"] = "group" if self.group else "private"
        people = [tuple(p.split(":")) for p in T.half(T.MEMBERS[lang], half)]
        self.members: list[tuple[str, str]] = rng.sample(people, rng.randint(3, 5) if self.group else 2)
        self.deleted = self.members[-1] if self.group and rng.random() < 0.4 else None
        self.speakers = [m for m in self.members if m != self.deleted]
        zone = timezone(timedelta(hours=8)) if lang == "zh" else rng.choice([UTC, timezone(timedelta(hours=-5))])
        start = datetime(2024, 1, 3, tzinfo=zone) + timedelta(days=rng.randint(0, 35))
        days = sorted(rng.sample(range(rng.randint(10, 40)), rng.randint(8, 10)))
        self.sessions = [start + timedelta(days=d, hours=rng.randint(8, 20), minutes=rng.randint(0, 59)) for d in days]
        self.msgs: list[_Msg] = []
        self.facts: list[_Fact] = []
        self.used: list[Value] = []
        self.taken: set[tuple[str, str]] = set()
        self.questions: list[dict[str, Any]] = []

    # -- helpers ---------------------------------------------------------------------------------------------
    def pick(self, items: list | tuple) -> Any:
        return self.rng.choice(T.half(items, self.half))

    def tpl(self, family: str, kind: str) -> str:
        return self.pick(T.TEMPLATES[family][self.lang][kind])

    def text(self, template: str, **kw: str) -> str:
        s = template.format(**kw)
        return s[0].upper() + s[1:] if self.lang == "en" and s[:1].islower() else s

    def at(self, session: int) -> datetime:
        return self.sessions[session] + timedelta(seconds=self.rng.randint(0, 100 * 60))

    def say(self, sender: str, when: datetime, text: str, group: str, reply_to: int | None = None) -> _Msg:
        m = _Msg(len(self.msgs), sender, when, text, group, reply_to)
        if reply_to is not None and self.rng.random() < 0.3:
            m.mentions = [self.msgs[reply_to].sender]
        self.msgs.append(m)
        return m

    def react(self, m: _Msg, group: str, most: int = 2) -> None:
        others = [p for p in self.speakers if p[0] != m.sender]
        for who in self.rng.sample(others, min(len(others), self.rng.randint(0, most))):
            when = m.when + timedelta(seconds=self.rng.randint(30, 400))
            self.say(who[0], when, self.pick(T.REACTIONS[self.lang]), group, m.key if self.rng.random() < 0.6 else None)

    def values(self, pool: str, n: int) -> list[Value]:
        """``n`` values of a pool that cannot be mistaken for each other or for any value of the chat so far."""
        candidates = value_pool(pool, self.lang, self.half)
        out: list[Value] = []
        for v in self.rng.sample(candidates, k=len(candidates)):
            if len(out) < n and not any(conflict(v, u) for u in [*self.used, *out]):
                out.append(v)
        self.used.extend(out)
        return sorted(out, key=candidates.index) if pool == "plan_date" else out  # a plan is postponed

    def ask(self, qtype: str, family: str, question: str, subject: str | None = None, expect: Value | None = None,
            stale: list[Value] | None = None, evidence: list[int] | None = None) -> None:
        self.questions.append({"type": qtype, "family": family, "question": question, "subject": subject,
                               "expect": list(expect.names) if expect else [],
                               "stale": [list(v.names) for v in stale or []], "evidence": evidence or []})

    # -- threads ---------------------------------------------------------------------------------------------
    def fact(self, family: str, versions: int) -> bool:
        """One fact stated ``versions`` times with changing values; a ``current`` (or ``answerable``) question."""
        rng, person = self.rng, family in T.PERSON_FAMILIES
        noun, pool, subject = "", family, None
        if person:  # about a member: where they live / work, a favourite
            cat = rng.choice(list(T.PREF_CATEGORIES)) if family == "preference" else ""
            free = [m for m in self.speakers if (family + cat, m[0]) not in self.taken]
            if not free:
                return False
            subject = rng.choice(free)
            self.taken.add((family + cat, subject[0]))
            noun, pool = (T.PREF_CATEGORIES[cat][self.lang], cat) if cat else ("", family)
        else:  # about an event, a plan or a task
            nouns = [n for n in T.half(T.NOUNS[family][self.lang], self.half) if (family, n) not in self.taken]
            if not nouns:
                return False
            noun = rng.choice(nouns)
            self.taken.add((family, noun))
        vals = self.values(pool, versions)
        if len(vals) < min(versions, 2):  # a small pool (weekdays) may give fewer versions than asked
            return False
        versions = len(vals)
        group = f"fact{len(self.facts)}"
        sessions = sorted(rng.sample(range(len(self.sessions)), versions))
        keys = []
        for i, (v, s) in enumerate(zip(vals, sessions, strict=True)):
            kind = "init" if i == 0 else rng.choice(["explicit", "implicit"])
            third = person and len(self.speakers) > 1 and rng.random() < (0.25 if i == 0 else 0.3)
            kind = "third" if third else kind
            if person:
                speaker = rng.choice([p for p in self.speakers if p != subject]) if third else subject
            else:
                speaker = rng.choice(self.speakers)
            old = vals[i - 1].surface if i else ""
            text = self.text(self.tpl(family, kind), v=v.surface, old=old, noun=noun,
                             name=subject[1] if subject else "")
            m = self.say(speaker[0], self.at(s), text, group)
            keys.append(m.key)
            self.react(m, group)
        self.facts.append(_Fact(group, vals, keys))
        q = self.text(self.tpl(family, "q_now" if versions > 1 else "q"), noun=noun, name=subject[1] if subject else "")
        self.ask("current" if versions > 1 else "answerable", family, q, subject[1] if subject else noun,
                 vals[-1], vals[:-1], keys[-1:])
        return True

    def edited(self, retraction: bool) -> None:
        """A message later edited to a corrected value, or withdrawn."""
        group, speaker = f"edit{len(self.facts)}", self.rng.choice(self.speakers)
        if retraction:
            statement, question = self.pick(T.RETRACTIONS[self.lang])
            vals, noun, pool = self.values("offsite", 1), "", "offsite"
        else:
            pool, statement, question = self.pick(T.EDITS[self.lang])
            noun, vals = self.pick(T.EDIT_NOUNS[self.lang]), self.values(pool, 2)
        if len(vals) < (1 if retraction else 2):
            return
        m = self.say(speaker[0], self.at(self.rng.randrange(len(self.sessions))),
                     self.text(statement, v=vals[0].surface, noun=noun), group)
        later = m.when + timedelta(seconds=self.rng.randint(60, 1800))
        if retraction:
            m.retract = later
        else:
            m.edit = (self.text(statement, v=vals[1].surface, noun=noun), later)
        self.react(m, group, most=1)
        self.facts.append(_Fact(group, vals, [m.key]))
        q = self.text(question, noun=noun)
        if retraction:
            self.ask("retraction", pool, q, "offsite", None, vals, [m.key])
        else:
            self.ask("edit", pool, q, noun, vals[1], vals[:1], [m.key])

    def canary_thread(self) -> None:
        assert self.deleted is not None
        uid, name = self.deleted
        for statement, question in self.rng.sample(T.half(T.CANARIES[self.lang], self.half), 2):
            word = self.canary_word()
            m = self.say(uid, self.at(self.rng.randrange(len(self.sessions))), statement.format(c=word), "canary")
            for who in self.rng.sample(self.speakers, min(len(self.speakers), self.rng.randint(1, 2))):
                self.say(who[0], m.when + timedelta(seconds=self.rng.randint(20, 300)),
                         self.pick(T.CANARY_REPLIES[self.lang]), "canary-reply", m.key)
            self.ask("deleted", "canary", question.format(name=name), name, evidence=[m.key])
            self.questions[-1]["canary"] = word

    def canary_word(self) -> str:
        syl = T.half(T.CANARY_SYLLABLES, self.half)
        while True:
            word = "".join(self.rng.choice(syl) for _ in range(3)).capitalize()
            w = norm(word)
            if word not in self.canaries and not any(w in a or a in w for v in self.used for a in v.aliases):
                self.canaries.add(word)
                return word

    def filler(self) -> None:
        for opener, *replies in self.rng.sample(T.half(T.FILLER[self.lang], self.half), self.rng.randint(4, 6)):
            who = self.rng.choice(self.members)
            m = self.say(who[0], self.at(self.rng.randrange(len(self.sessions))), opener, "filler")
            others = [p for p in self.members if p != who]
            for reply in replies[: self.rng.randint(1, len(replies))]:
                self.say(self.rng.choice(others)[0], m.when + timedelta(seconds=self.rng.randint(20, 240)), reply,
                         "filler", m.key if self.rng.random() < 0.5 else None)

    def unanswerable(self) -> None:
        rng = self.rng
        family = rng.choice(T.PERSON_FAMILIES)
        cat = rng.choice(list(T.PREF_CATEGORIES)) if family == "preference" else ""
        free = [m for m in self.speakers if (family + cat, m[0]) not in self.taken]
        if free:
            name = rng.choice(free)[1]
            noun = T.PREF_CATEGORIES[cat][self.lang] if cat else ""
            self.ask("unanswerable", "member", self.text(self.tpl(family, "q"), name=name, noun=noun), name)
        absent = self.pick(T.ABSENT[self.lang])
        self.ask("unanswerable", "absent", self.text(self.pick(T.ABSENT_QUESTIONS[self.lang]), absent=absent), absent)
        if rng.random() < 0.7:
            self.ask("unanswerable", "never", self.pick(T.NEVER_QUESTIONS[self.lang]))

    # -- assembly --------------------------------------------------------------------------------------------
    def build(self) -> None:
        rng = self.rng
        families = rng.sample(T.FAMILIES, rng.randint(4, 5))
        for fam in families[:-1]:
            self.fact(fam, 1 + rng.choice([1, 1, 2, 3]))
        self.fact(families[-1], 1)
        if rng.random() < 0.5:
            self.edited(retraction=False)
        if rng.random() < 0.25:
            self.edited(retraction=True)
        if self.deleted:
            self.canary_thread()
        self.filler()
        self.separate()
        self.unanswerable()

    def separate(self) -> None:
        """A line of small talk between two statements of different facts that would follow each other."""
        statements = {k for f in self.facts for k in f.keys}
        order = sorted(self.msgs, key=lambda m: (m.when, m.key))
        for a, b in zip(order, order[1:], strict=False):
            if a.key in statements and b.key in statements and a.group != b.group:
                line = self.pick(T.FILLER[self.lang])[0]
                self.say(self.rng.choice(self.members)[0], a.when + (b.when - a.when) / 2, line, "filler")

    def leaks(self) -> list[str]:
        """Gold values said outside their own thread (they must not be)."""
        out = []
        for f in self.facts:
            for m in self.msgs:
                texts = [m.text, m.edit[0] if m.edit else ""]
                if m.group != f.group and any(a in norm(t) for t in texts for v in f.values for a in v.aliases):
                    out.append(f"{f.group}: {m.text}")
        return out

    def render(self) -> tuple[list[dict[str, Any]], dict[int, str]]:
        order = sorted(self.msgs, key=lambda m: (m.when, m.key))
        for prev, m in zip(order, order[1:], strict=False):  # strictly increasing times
            m.when = max(m.when, prev.when + timedelta(seconds=1))
        ids = {m.key: f"m{i}" for i, m in enumerate(order)}
        lines: list[tuple[datetime, int, dict[str, Any]]] = []
        for m in order:
            sender_name = dict(self.members)[m.sender]
            rec = {"chat_id": self.chat_id, "message_id": ids[m.key], "sender": m.sender, "sender_name": sender_name,
                   "ts": m.when.isoformat(), "text": m.text,
                   "reply_to": ids[m.reply_to] if m.reply_to is not None else None,
                   "mentions": m.mentions, "chat_type": self.chat_type, "platform": PLATFORM}
            lines.append((m.when, 0, rec))
            if m.edit:
                lines.append((m.edit[1], 1, rec | {"text": m.edit[0], "metadata": {"edited_at": m.edit[1].isoformat()}}))
            if m.retract:
                lines.append((m.retract, 1, rec | {"text": "", "metadata": {"retracted": True,
                                                                            "edited_at": m.retract.isoformat()}}))
        return [rec for _, _, rec in sorted(lines, key=lambda x: (x[0], x[1]))], ids


def build_chat(rng: random.Random, chat_id: str, lang: str, half: int, canaries: set[str]) -> ChatBuilder:
    """A chat that states no value of one fact in another thread (rebuilt up to 50 times)."""
    for _ in range(50):
        b = ChatBuilder(rng, chat_id, lang, half, canaries)
        b.build()
        if not b.leaks():
            return b
    raise RuntimeError(f"{chat_id}: could not build a chat without value leaks: {b.leaks()[:3]}")
