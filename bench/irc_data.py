"""Reader of the Ubuntu IRC disentanglement files (Kummerfeld et al., ACL 2019) for :mod:`bench.irc` and
:mod:`bench.train_linker`.

``*.ascii.txt`` logs: ``[hh:mm] <nick> text``; ``=== ...`` lines are joins/parts/renames or old-style ``/me``
actions; ``[hh:mm]  * nick ...`` is a new-style action. ``*.annotation.txt``: reply links ``i j -`` (the larger
line answers the smaller; a self-link starts a conversation; 0-based file lines; links start at the first
annotated line, usually 1000, earlier lines are context). Every line becomes a :class:`ChatMessage`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agents import seg_metrics as M
from agents.segment_signals import resolve_name
from schemas import ChatMessage

__all__ = [
    "IrcFile",
    "IrcLine",
    "assign_addressees",
    "assign_times",
    "parse_line",
    "read_irc_dir",
    "read_irc_file",
    "to_message",
]

_MSG_RE = re.compile(r"^\[(\d{1,2}):(\d{2})\] <([^>]*)> ?(.*)$")
_ACTION_RE = re.compile(r"^\[(\d{1,2}):(\d{2})\]\s+\*\s+(\S+) ?(.*)$")
_STAMP_RE = re.compile(r"^\[(\d{1,2}):(\d{2})\]\s*(\S*)\s?(.*)$")
_SYS_RE = re.compile(r"^=== (\S+)\s*(.*)$")
_SYS_EVENT_RE = re.compile(
    r"^(?:\[[^\]]*\]\s*)?has (?:joined|left|quit)|^is now known as|^sets mode|^changed the topic|^[Tt]opic",
)
_LEAD_RE = re.compile(r"^\s*@?([^\s:,;@]{1,64})\s*[:,;]")
_FACTOID_RE = re.compile(r"^!\S+.*\|\s*@?([^\s:,;@|]{1,64})\s*$")
_NICK_TOKEN_RE = re.compile(r"[A-Za-z_\[\]\\^{}`|][A-Za-z0-9_\-\[\]\\^{}`|]*")
_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:_(\d{2}))?")


@dataclass
class IrcLine:
    idx: int
    kind: str  # "message" | "action" | "system"
    nick: str
    text: str
    minute: int | None  # minutes since midnight as printed, None for untimed lines
    ts: datetime = field(default_factory=lambda: datetime(1970, 1, 1, tzinfo=UTC))
    addressee: str | None = None
    mentions: list[str] = field(default_factory=list)


@dataclass
class IrcFile:
    name: str
    lines: list[IrcLine]
    gold_links: set[tuple[int, int]]
    cutoff: int  # first annotated line

    @property
    def annotated(self) -> list[int]:
        """Lines scored: every line named by a link from the first annotated line on."""
        return sorted({n for pair in self.gold_links for n in pair if self.cutoff <= n < len(self.lines)})

    def gold_clusters(self) -> list[set[int]]:
        return M.clusters_from_links(self.gold_links, self.cutoff)


def parse_line(idx: int, raw: str) -> IrcLine:
    raw = raw.rstrip("\n")
    if m := _MSG_RE.match(raw):
        return IrcLine(idx, "message", m.group(3), m.group(4), int(m.group(1)) * 60 + int(m.group(2)))
    if m := _ACTION_RE.match(raw):
        return IrcLine(idx, "action", m.group(3), m.group(4), int(m.group(1)) * 60 + int(m.group(2)))
    if m := _SYS_RE.match(raw):
        server = "/" in m.group(1)  # "=== mode/#ubuntu [+o nick] by ChanServ", "topic/#ubuntu:nick": not a person
        kind = "system" if server or _SYS_EVENT_RE.match(m.group(2)) else "action"
        return IrcLine(idx, kind, m.group(1), m.group(2), None)
    if m := _STAMP_RE.match(raw):  # e.g. notices "-nick- text": treat as a message of that token
        return IrcLine(
            idx,
            "message",
            m.group(3).strip("<>-*") or "?",
            m.group(4),
            int(m.group(1)) * 60 + int(m.group(2)),
        )
    return IrcLine(idx, "system", "?", raw, None)


def assign_times(lines: list[IrcLine], file_name: str, anchor: int = 1000) -> None:
    """Event times: the printed hh:mm made monotone (a drop of over two hours is the next day), anchored so
    the line at ``anchor`` (the file's named hour) falls on the file's date; lines sharing a minute are
    spread evenly over it; untimed lines take the previous line's minute."""
    day, prev, absolute = 0, None, []
    for line in lines:
        if line.minute is None:
            absolute.append(prev)
            continue
        m = line.minute + 1440 * day
        if prev is not None and m < prev - 120:
            day += 1
            m += 1440
        prev = m if prev is None else max(m, prev)
        absolute.append(prev)
    first = next((a for a in absolute if a is not None), 0)
    absolute = [first if a is None else a for a in absolute]
    date = _DATE_RE.search(file_name)
    base = datetime(*map(int, date.groups()[:3]), tzinfo=UTC) if date else datetime(1970, 1, 1, tzinfo=UTC)
    anchor_min = absolute[min(anchor, len(absolute) - 1)] if absolute else 0
    base -= timedelta(days=anchor_min // 1440)
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and absolute[j] == absolute[i]:
            j += 1
        for k in range(i, j):
            lines[k].ts = base + timedelta(minutes=absolute[k], seconds=60.0 * (k - i) / (j - i))
        i = j


def assign_addressees(lines: list[IrcLine]) -> None:
    """A leading ``nick:``/``nick,`` (or a bot factoid's trailing ``| nick``) naming someone seen earlier in the
    log (speaking, joining, renaming; a unique prefix of a known nick counts); ``mentions``: known nicks named
    anywhere else in the text."""
    known: dict[str, str] = {}
    for line in lines:
        if line.kind != "system":
            lead = _LEAD_RE.match(line.text) or _FACTOID_RE.search(line.text)
            nick = resolve_name(lead.group(1), known) if lead else None
            if nick is not None and nick != line.nick:
                line.addressee = nick
            for token in _NICK_TOKEN_RE.findall(line.text):
                other = known.get(token.lower().rstrip("_")) if len(token) >= 3 else None
                if (
                    other is not None
                    and other not in (line.nick, line.addressee)
                    and other not in line.mentions
                ):
                    line.mentions.append(other)
        known.setdefault(line.nick.lower().rstrip("_"), line.nick)
        if line.kind == "system" and (m := re.match(r"is now known as (\S+)", line.text)):
            known.setdefault(m.group(1).lower().rstrip("_"), m.group(1))


def read_irc_file(ascii_path: Path, annotation_path: Path | None = None) -> IrcFile:
    name = ascii_path.name.removesuffix(".ascii.txt")
    raw = ascii_path.read_text(encoding="utf-8", errors="replace").split("\n")
    if raw and raw[-1] == "":
        raw.pop()
    lines = [parse_line(i, r) for i, r in enumerate(raw)]
    links: set[tuple[int, int]] = set()
    if annotation_path is not None and annotation_path.exists():
        links = M.parse_links(annotation_path.read_text().splitlines())
    cutoff = min((a for a, _ in links), default=len(lines))
    assign_times(lines, name, anchor=cutoff if links else 0)
    assign_addressees(lines)
    return IrcFile(name, lines, links, cutoff)


def read_irc_dir(data_dir: Path) -> list[IrcFile]:
    files = []
    for ascii_path in sorted(data_dir.glob("*.ascii.txt")):
        ann = ascii_path.with_name(ascii_path.name.replace(".ascii.txt", ".annotation.txt"))
        files.append(read_irc_file(ascii_path, ann))
    return [f for f in files if f.gold_links]


def to_message(f: IrcFile, line: IrcLine) -> ChatMessage:
    return ChatMessage(
        chat_id=f"irc-{f.name}",
        message_id=str(line.idx),
        sender=(line.nick or "?").replace("/", "_"),  # a sender id has no "/"
        ts=line.ts,
        text=line.text if line.text.strip() else "...",  # an empty IRC line (a message is never blank)
        mentions=[line.addressee] if line.addressee else [],
        platform="irc",
        metadata={"line": line.idx, "kind": line.kind},
    )
