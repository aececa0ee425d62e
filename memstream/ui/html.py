"""HTML fragments of the inspector: pure functions from the views (memstream/ui/views.py) to strings.

Every value from the data is escaped here (:func:`e`); the page's script only swaps fragments in."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import datetime
from html import escape
from urllib.parse import quote

from memstream.ui.views import Chain, GraphView, ItemRanks, Timeline, strategy_mix
from schemas import ChatMessage, RetrieveResponse
from schemas.graph import EntityNode

HUES = (210, 28, 130, 280, 0, 175, 48, 320, 95, 240, 15, 195)


def e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def colour(index: int, light: bool = True) -> str:
    hue = HUES[index % len(HUES)]
    shift = 8 * (index // len(HUES))
    return f"hsl({hue + shift} 70% {'90%' if light else '42%'})"


def when(ts: datetime | None, fmt: str = "%m-%d %H:%M") -> str:
    return ts.strftime(fmt) if ts else ""


def badge(text: str, kind: str | None = None) -> str:
    return f'<span class="badge {e(kind or text)}">{e(text)}</span>'


def sources_title(ids: Iterable[str], messages: dict[str, ChatMessage]) -> str:
    """The hover text of an item: its source messages, who said them and when."""
    lines = []
    for mid in ids:
        m = messages.get(mid)
        lines.append(f"{mid} · {m.display_name} · {when(m.ts)}: {m.text[:160]}" if m else f"{mid} (not stored)")
    return "\n".join(lines)


def chat_list(chats: list[str], selected: str | None) -> str:
    if not chats:
        return '<option value="">no chats this key can read</option>'
    return "".join(f'<option value="{e(c)}"{" selected" if c == selected else ""}>{e(c)}</option>' for c in chats)


# ---- timeline ------------------------------------------------------------------------------------------


def _topic_cell(tl: Timeline, topic_id: str | None, moved: bool) -> str:
    if topic_id is None:
        return '<td class="cell none">·</td>'
    tv = tl.topics.get(topic_id)
    idx = tv.colour if tv else 0
    state = tv.topic.state if tv else "?"
    mark = " moved" if moved else ""
    return (f'<td class="cell{mark}" style="background:{colour(idx, False)}" '
            f'title="{e(tv.label if tv else topic_id)} ({e(state)})">{"↻" if moved else ""}</td>')  # fmt: skip


def timeline_html(tl: Timeline) -> str:
    versions = tl.versions
    head = "".join(f'<th class="vcol" title="{e(v.reason)}">v{v.version}<br><small>{e(v.status)}</small></th>'
                   for v in versions) if len(versions) > 1 else ""  # fmt: skip
    rows = []
    for r in tl.rows:
        m = r.message
        tid = tl.current.get(m.message_id)
        tv = tl.topics.get(tid) if tid else None
        bg = colour(tv.colour) if tv else "#f4f4f4"
        flags = "".join([badge("retracted") if m.retracted else "",
                         badge("edited") if m.metadata.get("edit_history") else ""])  # fmt: skip
        reply = f'<span class="reply" title="replies to {e(m.parent_id)}">↩ {e(m.parent_id)}</span>' if m.parent_id else ""
        cells = "".join(_topic_cell(tl, c, mv) for c, mv in zip(r.cells, r.moved, strict=True)) if head else ""
        state = badge(tv.topic.state) if tv else badge("no topic", "none")
        rows.append(
            f'<tr class="msg" id="msg-{e(m.message_id)}" data-topic="{e(tid or "")}">'
            f'<td class="when">{when(m.ts)}</td><td class="mid">{e(m.message_id)}</td>'
            f'<td class="text" style="background:{bg}"><b>{e(m.display_name)}</b> {reply}{flags}<br>{e(m.text)}</td>'
            f"<td>{state}</td>{cells}</tr>"
        )
    table = (f'<table class="timeline"><thead><tr><th>time</th><th>id</th><th>message (coloured by topic)</th>'
             f"<th>topic</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")  # fmt: skip
    return _topic_legend(tl) + table + versions_html(tl)


def _topic_legend(tl: Timeline) -> str:
    items = []
    for tv in tl.topics.values():
        t = tv.topic
        coh = f" · cohesion {t.cohesion:.2f}" if t.cohesion is not None else ""
        items.append(
            f'<li data-topic="{e(t.topic_id)}"><span class="swatch" style="background:{colour(tv.colour, False)}"></span>'
            f"{badge(t.state)} <b>{e(tv.label)}</b> <small>{len(t.message_ids)} msgs · {e(', '.join(t.participants))}"
            f" · v{t.segmentation_version}{coh}</small></li>"
        )
    return f'<ul class="legend">{"".join(items)}</ul>'


def versions_html(tl: Timeline) -> str:
    if len(tl.versions) <= 1:
        return '<p class="muted">One segmentation version (the stream). <code>memstream resegment</code> makes more.</p>'
    out = []
    for v in tl.versions[1:]:
        d = v.diff
        summary = (f"{d.topics_before} → {d.topics_after} topics · one-to-one {d.one_to_one:.1f} · VI {d.vi:.1f}"
                   f" · {d.moved_messages} moved" if d else "")  # fmt: skip
        changes = "".join(f"<li>{badge(c.kind)} {e(', '.join(x[-6:] for x in c.old))} → "
                          f"{e(', '.join(x[-6:] for x in c.new))} <small>({c.messages} msgs)</small></li>"
                          for c in (d.changes if d else []) if c.kind != "unchanged")  # fmt: skip
        out.append(f'<div class="version"><b>v{v.version}</b> {badge(v.kind)} {badge(v.status)} '
                   f"<small>{when(v.created_at, '%Y-%m-%d %H:%M')} · {e(v.reason)}</small><br>{e(summary)}"
                   f"<ul>{changes}</ul></div>")  # fmt: skip
    return f'<h3>Segmentation versions and their diff</h3>{"".join(out)}'


# ---- memory records ------------------------------------------------------------------------------------


def memories_html(chains: list[Chain], messages: dict[str, ChatMessage]) -> str:
    if not chains:
        return '<p class="muted">No memory records yet (topics are distilled when they close).</p>'
    rows = []
    for c in chains:
        for i, r in enumerate(c.versions):
            old = i > 0 or r.valid_to is not None
            until = f"→ {when(r.valid_to)}" if r.valid_to else "→ now"
            by = f' <small class="muted">superseded by {e(r.superseded_by[-6:])}</small>' if r.superseded_by else ""
            rows.append(
                f'<tr class="mem{" old" if old else ""}{" chain-start" if i == 0 else ""}" data-kind="{e(r.kind)}" '
                f'data-sources="{e(" ".join(r.source_message_ids))}" '
                f'title="{e(sources_title(r.source_message_ids, messages))}">'
                f'<td>{badge(str(r.kind))}</td><td>v{r.version}</td><td class="valid">{when(r.valid_from)} {until}</td>'
                f'<td class="text">{e(r.text)}{by}</td><td class="src">{e(", ".join(r.source_message_ids))}</td></tr>'
            )
    kinds = sorted({str(c.head.kind) for c in chains})
    chips = "".join(f'<label><input type="checkbox" class="kind-filter" value="{e(k)}" checked> {e(k)}</label>'
                    for k in kinds)  # fmt: skip
    return (f'<div class="chips">{chips}</div><table class="memories"><thead><tr><th>kind</th><th>ver</th>'
            f"<th>valid</th><th>memory</th><th>sources</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")  # fmt: skip


# ---- graph ---------------------------------------------------------------------------------------------


def entity_picker(chat_id: str, entities: list[EntityNode], selected: str | None) -> str:
    chips = "".join(
        f'<button class="entity{" on" if n.entity_id == selected else ""}" '
        f'data-get="/ui/chats/{quote(chat_id, safe="")}/graph?entity={quote(n.entity_id)}" data-target="#graph">'
        f"{e(n.name)}</button>" for n in entities
    )  # fmt: skip
    return f'<div class="entities">{chips}</div>'


def _rx(name: str) -> int:
    return min(88, 12 + 7 * len(name))


def _rim(x1: float, y1: float, x2: float, y2: float, rx: float, ry: float = 17) -> tuple[float, float]:
    """Where the line from (x1, y1) to the centre (x2, y2) of an ellipse meets its rim."""
    dx, dy = x2 - x1, y2 - y1
    n = math.hypot(dx, dy)
    if n == 0:  # an entity related to itself
        return x2, y2
    ux, uy = dx / n, dy / n
    back = 1 / math.sqrt((ux / rx) ** 2 + (uy / ry) ** 2) + 2
    return x2 - ux * back, y2 - uy * back


def graph_svg(g: GraphView) -> str:
    parts = [f'<svg class="graph" viewBox="0 0 {g.width} {g.height}" width="{g.width}" height="{g.height}">'
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#667"/></marker></defs>']  # fmt: skip
    for edge in g.edges:
        a, b = g.at(edge.subject_id), g.at(edge.object_id)
        if a is None or b is None:
            continue
        x2, y2 = _rim(a.x, a.y, b.x, b.y, _rx(b.node.name))  # the arrow ends at the node's rim
        live = edge.valid_to is None
        label = edge.predicate + ("" if live else f" (until {when(edge.valid_to, '%m-%d')})")
        tip = sources_title(edge.source_message_ids, {}) if not edge.fact else edge.fact
        parts.append(
            f'<g class="edge{"" if live else " invalid"}"><title>{e(tip)}</title>'
            f'<line x1="{a.x}" y1="{a.y}" x2="{x2:.1f}" y2="{y2:.1f}" marker-end="url(#arrow)"/>'
            f'<text x="{(a.x + b.x) / 2:.1f}" y="{(a.y + b.y) / 2 - 4:.1f}">{e(label)}</text></g>'
        )
    for p in g.nodes:
        centre = p.node.entity_id == g.centre.entity_id
        parts.append(
            f'<g class="node {e(p.node.type)}{" centre" if centre else ""}"><title>{e(p.node.type)}'
            f'{" · " + e(p.node.subtype) if p.node.subtype else ""}</title>'
            f'<ellipse cx="{p.x}" cy="{p.y}" rx="{_rx(p.node.name)}" ry="17"/>'
            f'<text x="{p.x}" y="{p.y + 5}">{e(p.node.name)}</text></g>'
        )
    return "".join(parts) + "</svg>"


def graph_html(chat_id: str, entities: list[EntityNode], g: GraphView | None) -> str:
    if g is None:
        return '<p class="muted">No entities in this chat\'s graph yet.</p>'
    live = sum(1 for x in g.edges if x.valid_to is None)
    head = (f"<p><b>{e(g.centre.name)}</b> {badge(g.centre.type)} · {live} live and {len(g.edges) - live} "
            f"invalidated relations (dashed)</p>")  # fmt: skip
    return entity_picker(chat_id, entities, g.centre.entity_id) + head + graph_svg(g)


# ---- routed trace --------------------------------------------------------------------------------------


def _bars(probs: dict[str, float]) -> str:
    rows = "".join(f'<div class="bar"><span class="name">{e(k)}</span><span class="fill" style="width:{v * 100:.0f}%">'
                   f"</span><span>{v:.2f}</span></div>" for k, v in sorted(probs.items(), key=lambda kv: -kv[1]))  # fmt: skip
    return f'<div class="bars">{rows}</div>'


def trace_html(resp: RetrieveResponse, ranks: list[ItemRanks], messages: dict[str, ChatMessage]) -> str:
    classify = next((s.detail for s in resp.trace if s.step == "classify"), {})
    mix = ", ".join(f"{n} ×{w:.2f}" for n, w in strategy_mix(classify)) or resp.strategy
    verdict = (badge("no relevant memory", "abstain") + f" <b>reason:</b> {e(resp.abstention_reason)}"
               if resp.no_relevant_memory else badge("answered", "ok"))  # fmt: skip
    lists = list(ranks[0].lists) if ranks else ["bm25", "knn"]
    head = "".join(f"<th>{e(n)} rank</th>" for n in lists)
    rows = "".join(
        f'<tr data-sources="{e(" ".join(r.item.source_message_ids))}" '
        f'title="{e(sources_title(r.item.source_message_ids, messages))}"><td>{r.rank}</td>'
        f"<td>{badge(r.item.kind)}</td><td>{e(r.item.layer)}</td>"
        + "".join(f"<td>{'—' if r.lists[n] is None else r.lists[n]}</td>" for n in lists)
        + f"<td>{r.item.scores.get('fused', 0):.3f}</td><td>{r.item.score:.3f}</td>"
        f'<td class="text">{e(r.item.text)}{"<br><small>" + e(r.item.note) + "</small>" if r.item.note else ""}</td></tr>'
        for r in ranks
    )
    layers = "".join(f"<li>{badge(x.name)} {x.tokens} tokens · {len(x.item_ids)} items</li>" for x in resp.layers)
    steps = "".join(f"<details><summary>{e(s.step)} <small>{s.ms:.1f} ms</small></summary>"
                    f"<pre>{e(json.dumps(s.detail, ensure_ascii=False, indent=1, default=str)[:6000])}</pre></details>"
                    for s in resp.trace)  # fmt: skip
    return (
        f'<div class="trace"><p><b>query type:</b> {e(resp.query_type or "—")} · <b>strategy:</b> {e(mix)} · {verdict}</p>'
        f"{_bars(resp.strategy_probs) if resp.strategy_probs else ''}"
        f'<table class="ranks"><thead><tr><th>#</th><th>kind</th><th>layer</th>{head}<th>fused</th><th>score</th>'
        f"<th>item (hover: source messages)</th></tr></thead><tbody>{rows}</tbody></table>"
        f'<h4>Rendered context · <span class="tokens">{resp.context_tokens} tokens</span></h4><ul class="layers">{layers}</ul>'
        f'<pre class="context">{e(resp.context)}</pre><h4>Trace</h4>{steps}</div>'
    )
