"""Pure context rendering: items -> a compact, timestamped context under a token budget."""

from __future__ import annotations

from schemas import RetrievedItem

NO_MEMORY = "No relevant memory."

_LABEL = {"turn": "", "fact": "(memory) ", "summary": "(topic summary) ", "qa": "(Q&A) ", "task": "(task) ",
          "decision": "(decision) ", "title": "(topic) ",
          "profile": "(profile) "}


def render_line(item: RetrievedItem) -> str:
    when = item.timestamp.strftime("%Y-%m-%d %H:%M")
    who = f"{item.speaker}: " if item.speaker and item.kind == "turn" else ""
    superseded = f" [superseded {item.valid_to:%Y-%m-%d}]" if item.valid_to else ""
    return f"[{when}] {_LABEL.get(item.kind, '')}{who}{item.text}{superseded}"


def drop_covered(items: list[RetrievedItem]) -> list[RetrievedItem]:
    """Drop an item whose every source message is already covered by a higher-ranked item."""
    seen: set[str] = set()
    kept = []
    for item in items:
        sources = set(item.source_message_ids)
        if sources and sources <= seen:
            continue
        seen |= sources
        kept.append(item)
    return kept


def render_context(
    items: list[RetrievedItem], budget: int, count_tokens, *, chronological: bool = False
) -> tuple[str, int, list[RetrievedItem]]:
    """Render ``items`` (in rank order, or by time) until ``budget`` tokens; returns text, tokens, used items."""
    if not items:
        return NO_MEMORY, count_tokens(NO_MEMORY), []
    used: list[RetrievedItem] = []
    lines: list[str] = []
    total = 0
    for item in items:
        line = render_line(item)
        cost = count_tokens(line) + 1
        if used and total + cost > budget:
            break
        used.append(item)
        lines.append(line)
        total += cost
    if chronological:
        order = sorted(range(len(used)), key=lambda i: used[i].timestamp)
        lines = [lines[i] for i in order]
    return "\n".join(lines), total, used
