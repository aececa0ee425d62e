"""Input readers: JSON Lines of messages, LoCoMo conversations, Ubuntu IRC logs -> raw-topic records.

Readers are pure generators of ``Parsed`` items: a ``ChatMessage`` ready for the raw topic, or a reject
(original text + reason) for the dead-letter topic. Nothing is dropped silently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import ValidationError

from schemas import ChatMessage
from streams.codec import describe


@dataclass(frozen=True)
class Parsed:
    message: ChatMessage | None = None
    raw: str = ""
    error: str | None = None
    where: str = ""


def detect_format(path: Path) -> str:
    if path.is_dir() or path.name.endswith(".ascii.txt"):
        return "irc"
    if path.suffix == ".json":
        return "locomo"
    return "jsonl"


_UNDECODED = re.compile("[\udc80-\udcff]")  # what ``surrogateescape`` makes of a byte that is not UTF-8


def not_utf8(line: str) -> str | None:
    """Why ``line`` (read with ``errors="surrogateescape"``) is not UTF-8, else None. Such a line is
    dead-lettered whole rather than stored with replacement characters."""
    m = _UNDECODED.search(line)
    if m is None:
        return None
    return f"not UTF-8: byte 0x{ord(m[0]) - 0xDC00:02x} at character {m.start() + 1}"


def as_payload(line: str) -> str:
    """A line read with ``surrogateescape`` as text that keeps its bytes: the undecodable ones as ``\\xe9``."""
    return line.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def read_jsonl(path: Path) -> Iterator[Parsed]:
    with path.open(encoding="utf-8", errors="surrogateescape") as fh:
        for lineno, line in enumerate(fh, 1):
            raw = line.rstrip("\n")
            if not raw.strip():
                continue
            where = f"{path.name}:{lineno}"
            if lineno == 1:
                raw = raw.removeprefix("\ufeff")  # a byte-order mark some editors write
            if (why := not_utf8(raw)) is not None:
                yield Parsed(raw=as_payload(raw), error=f"line {lineno}: {why}", where=where)
                continue
            try:
                yield Parsed(message=ChatMessage.model_validate_json(raw), raw=raw, where=where)
            except ValidationError as exc:
                yield Parsed(raw=raw, error=f"line {lineno}: {describe(exc)}", where=where)


_LOCOMO_DT = re.compile(r"(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.I)
_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], 1)}


def parse_locomo_datetime(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime."""
    m = _LOCOMO_DT.search(text)
    if not m:
        raise ValueError(f"unrecognised LoCoMo session time {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    mon = _MONTHS.get(month.lower()) or _MONTHS[next(k for k in _MONTHS if k.startswith(month.lower()[:3]))]
    return datetime(int(year), mon, int(day), h, int(minute), tzinfo=UTC)


def locomo_turn_text(turn: dict) -> str:
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def read_locomo(path: Path, turn_spacing_s: int = 30) -> Iterator[Parsed]:
    """Each conversation becomes a private chat; each turn gets its session's time plus its position."""
    data = json.loads(path.read_text(encoding="utf-8"))
    for conv in data if isinstance(data, list) else [data]:
        chat_id = str(conv.get("sample_id", "locomo"))
        c = conv["conversation"]
        sessions = sorted(
            (int(k.split("_")[1]), k) for k in c if re.fullmatch(r"session_\d+", k) and isinstance(c[k], list)
        )
        for num, key in sessions:
            try:
                start = parse_locomo_datetime(c.get(f"{key}_date_time", ""))
            except ValueError as exc:
                yield Parsed(raw=json.dumps(c[key])[:2000], error=str(exc), where=f"{chat_id}/{key}")
                continue
            for pos, turn in enumerate(c[key]):
                raw = json.dumps(turn, ensure_ascii=False)
                try:
                    msg = ChatMessage(
                        chat_id=chat_id,
                        message_id=str(turn["dia_id"]),
                        sender=str(turn["speaker"]),
                        ts=start + timedelta(seconds=pos * turn_spacing_s),
                        text=locomo_turn_text(turn),
                        chat_type="private",
                        platform="locomo",
                        metadata={"session": num, "position": pos},
                    )
                except (KeyError, ValidationError) as exc:
                    why = describe(exc) if isinstance(exc, ValidationError) else f"missing {exc}"
                    yield Parsed(raw=raw, error=f"bad LoCoMo turn: {why}", where=f"{chat_id}/{key}/{pos}")
                    continue
                yield Parsed(message=msg, raw=raw, where=f"{chat_id}/{key}/{pos}")


_IRC_LINE = re.compile(r"^\[(\d{2}):(\d{2})\]\s+(?:<([^>]+)>\s?(.*)|\*\s+(\S+)\s?(.*))$")
_IRC_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_ADDRESS = re.compile(r"^\s*([^\s:,]+)\s*[:,]")


def read_irc(path: Path) -> Iterator[Parsed]:
    """Ubuntu IRC ``*.ascii.txt``: one chat per file, message id = line index, ``nick:`` -> mention."""
    files = sorted(path.glob("*.ascii.txt")) if path.is_dir() else [path]
    for file in files:
        chat_id = file.name.removesuffix(".ascii.txt")
        m = _IRC_DATE.search(file.name)
        day = datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=UTC) if m else datetime(2000, 1, 1, tzinfo=UTC)
        last = day
        nicks: set[str] = set()
        for idx, line in enumerate(file.read_text(encoding="utf-8", errors="surrogateescape").splitlines()):
            lm = _IRC_LINE.match(line)
            if not lm:
                continue  # join/part/system lines carry no chat content
            if (why := not_utf8(line)) is not None:
                yield Parsed(raw=as_payload(line), error=f"line {idx}: {why}", where=f"{file.name}:{idx}")
                continue
            hh, mm, nick, text, anick, atext = lm.groups()
            nick, text = (nick, text) if nick else (anick, atext or "")
            ts = day + timedelta(hours=int(hh), minutes=int(mm))
            if ts < last:  # log rolled over midnight
                day += timedelta(days=1)
                ts += timedelta(days=1)
            last = ts
            addressed = _ADDRESS.match(text or "")
            mentions = [addressed[1]] if addressed and addressed[1] in nicks else []
            nicks.add(nick)
            where = f"{file.name}:{idx}"
            try:
                msg = ChatMessage(chat_id=chat_id, message_id=str(idx), sender=nick, ts=ts, text=text or "",
                                  mentions=mentions, platform="irc")
            except ValidationError as exc:  # e.g. a line with no text: dead-lettered, never a crash
                yield Parsed(raw=line, error=f"line {idx}: {describe(exc)}", where=where)
                continue
            yield Parsed(message=msg, raw=line, where=where)


def read_any(path: Path, fmt: str | None = None) -> Iterator[Parsed]:
    fmt = fmt or detect_format(path)
    if fmt == "jsonl":
        return read_jsonl(path)
    if fmt == "locomo":
        return read_locomo(path)
    if fmt == "irc":
        return read_irc(path)
    raise ValueError(f"unknown format {fmt!r} (jsonl, locomo, irc)")
