"""Pure layered rendering of a routed result: direct matches, derived lines, then related memory.

Direct items are grouped under one ``[YYYY-MM-DD]`` line per day (days in the order of their best item, or
oldest first for temporal questions; items by rank, or by time) with the strategy's notes ("replaced: ...");
derived lines (event order, aggregates) follow; the related layer (graph neighbours, or another person's
memories after an attribution abstention) comes last. A day's date is paid for once, not on every line, so
a budget holds more items, and so does a sentence shown once: a line retelling what a higher-ranked line
showed (a fact's Q&A pair, its topic's summary) gives "…" in its place, whichever order the day shows them
in. Items are taken in rank order while they fit; one that does not fit is skipped and the next (shorter)
ones tried. The related layer gets at most ``related_share`` of the budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from retrieval.render import NO_MEMORY, render_line
from schemas import RetrievedItem
from schemas.retrieval import ContextLayer

DESCRIPTIONS = {
    "direct": "memories that match the question",
    "derived": "what the strategy derived from them (event order, sets and counts)",
    "related": "related memories (graph neighbours, or about another person)",
    "notice": "why no memory is returned",
}


def item_line(item: RetrievedItem) -> str:
    """Compact: a turn keeps its minute (chat time) and speaker; a memory record its date (its text carries the
    event time); a fact needs no label (it is the unlabelled third-person line), other kinds keep theirs."""
    line = render_line(item)
    if item.kind != "turn":
        line = f"[{item.timestamp:%Y-%m-%d}]" + line[len("[YYYY-MM-DD HH:MM]") :]
    if item.kind == "fact":
        line = line.replace("] (memory) ", "] ", 1)
    return f"{line} ({item.note})" if item.note else line


def _day(item: RetrievedItem) -> str:
    return f"[{item.timestamp:%Y-%m-%d}]"


def body_line(item: RetrievedItem) -> str:
    """:func:`item_line` without the day (its group's header carries it); a turn keeps its minute."""
    line = item_line(item)
    if item.kind == "turn":
        return f"{item.timestamp:%H:%M} " + line[len("[YYYY-MM-DD HH:MM] ") :]
    return line[len("[YYYY-MM-DD] ") :]


_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_LABEL = re.compile(r"^\W*(?:(?:Q|A|previously|superseded[^:]*?by|replaced)\s*:\s*)*(?:[^\s:][^:]{0,30}:\s+)?")
_NOT_WORD = re.compile(r"\W+")
SHOWN = "…"  # stands for a sentence a higher-ranked line of the context already shows
MIN_REPEAT = 6  # tokens a sentence needs to be elided as a repeat: short ones ("ok!", "same date") stay


def _key(sentence: str) -> str:
    """A sentence as compared for repeats: without its labels (``Q: Mel:``, ``Caroline:``) and punctuation."""
    return _NOT_WORD.sub(" ", _LABEL.sub("", sentence.strip()).casefold()).strip()


def compact(line: str, shown: set[str], count: Callable[[str], int]) -> tuple[str, set[str]]:
    """``line`` with each sentence a higher-ranked line showed replaced by ``SHOWN``, and its sentences' keys.
    A fact, its Q&A pair and its topic's summary often retell one message: shown once, the budget holds more
    items (recall is unchanged: the items stay, each with its sources). Pure."""
    out, keys, last = [], set(), 0
    for m in _SENTENCE.finditer(line):
        key = _key(m.group())
        if key and key in shown and count(m.group()) >= MIN_REPEAT:
            label = _LABEL.match(m.group().lstrip())
            lead = m.group()[: len(m.group()) - len(m.group().lstrip()) + (label.end() if label else 0)]
            out.append(line[last : m.start()] + lead + SHOWN)
        else:
            out.append(line[last : m.end()])
            keys.add(key)
        last = m.end()
    out.append(line[last:])
    return "".join(out), keys


def pack_dated(
    items: list[RetrievedItem], budget: int, count: Callable[[str], int]
) -> tuple[list[RetrievedItem], int, dict[str, str]]:
    """The items (rank order) that fit ``budget``, their cost and their body lines (``compact``, in rank order):
    each costs its body line, the first of a day also the day's header; an item that does not fit is skipped
    and the next ones are tried. Pure."""
    chosen: list[RetrievedItem] = []
    lines: dict[str, str] = {}
    days: set[str] = set()
    shown: set[str] = set()
    used = 0
    for it in items:
        day = _day(it)
        line, keys = compact(body_line(it.model_copy(update={"note": None}) if it.note else it), shown, count)
        if it.note:  # a note quotes the other side of a change: elided where shown above, never shown for later
            line += f" ({compact(it.note, shown | keys, count)[0]})"
        cost = count(line) + 1 + (0 if day in days else count(day) + 1)
        if used + cost > budget:
            continue
        chosen.append(it)
        lines[it.item_id] = line
        days.add(day)
        shown |= keys
        used += cost
    return chosen, used, lines


def dated_text(chosen: list[RetrievedItem], chronological: bool, lines: dict[str, str] | None = None) -> str:
    """One header line per day, then that day's body lines (see the module docstring for the order). Pure."""
    groups: dict[str, list[RetrievedItem]] = {}
    for it in sorted(chosen, key=lambda x: x.timestamp) if chronological else chosen:
        groups.setdefault(_day(it), []).append(it)
    body = (lambda it: lines.get(it.item_id) or body_line(it)) if lines else body_line
    return "\n".join("\n".join([day, *(body(it) for it in group)]) for day, group in groups.items())


def _fill(
    lines: list[tuple[str, str]], budget: int, count: Callable[[str], int]
) -> tuple[list[tuple[str, str]], int]:
    out, used = [], 0
    for key, line in lines:
        cost = count(line) + 1
        if out and used + cost > budget:
            break
        if not out and cost > budget:
            break
        out.append((key, line))
        used += cost
    return out, used


def render_layers(
    direct: list[RetrievedItem],
    derived: list[str],
    related: list[RetrievedItem],
    budget: int,
    count: Callable[[str], int],
    *,
    chronological: bool = False,
    related_share: float = 0.2,
    notice: str | None = None,
) -> tuple[str, int, list[ContextLayer], list[RetrievedItem]]:
    """-> context text, tokens, layers, and the items that made it into the context: direct ones in rank order
    (even when the text shows them oldest first), then related ones."""
    layers: list[ContextLayer] = []
    used_items: list[RetrievedItem] = []
    remaining = budget
    if notice:
        cost = count(notice) + 1
        layers.append(
            ContextLayer(name="notice", description=DESCRIPTIONS["notice"], text=notice, tokens=cost)
        )
        remaining -= cost
    related_budget = int(budget * related_share) if direct else remaining
    direct_budget = max(0, remaining - (related_budget if related else 0))
    chosen, used, lines = pack_dated(direct, direct_budget, count)
    if chosen:
        text = dated_text(chosen, chronological, lines)
        layers.append(ContextLayer(name="direct", description=DESCRIPTIONS["direct"],
                                   item_ids=[it.item_id for it in chosen], text=text, tokens=used))  # fmt: skip
        used_items.extend(chosen)
        remaining -= used
    if derived and chosen:
        kept_lines, cost = _fill([("", d) for d in derived], max(0, remaining - (related_budget if related else 0)),
                                 count)  # fmt: skip
        if kept_lines:
            layers.append(ContextLayer(name="derived", description=DESCRIPTIONS["derived"],
                                       text="\n".join(x for _, x in kept_lines), tokens=cost))  # fmt: skip
            remaining -= cost
    if related:
        kept, cost = _fill([(it.item_id, item_line(it)) for it in related], min(remaining, related_budget or remaining),
                           count)  # fmt: skip
        ids = {k for k, _ in kept}
        rel = [it for it in related if it.item_id in ids]
        if rel:
            layers.append(ContextLayer(name="related", description=DESCRIPTIONS["related"],
                                       item_ids=[it.item_id for it in rel],
                                       text="\n".join(item_line(it) for it in rel), tokens=cost))  # fmt: skip
            used_items.extend(rel)
    if not layers:
        return NO_MEMORY, count(NO_MEMORY), [], []
    text = "\n\n".join(
        f"## {layer.name}\n{layer.text}" if len(layers) > 1 else layer.text for layer in layers
    )
    return text, count(text), layers, used_items
