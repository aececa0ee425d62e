"""Sensitive information in chat text (design doc 001, 7.1): detect, then mask, drop or keep, per chat.

Kinds: ``phone`` (Chinese mobiles and landlines, international and North-American numbers), ``id_card``
(Chinese resident ID with its checksum and birth date, US SSN), ``bank_card`` (13-19 digits passing Luhn),
``email``, ``secret`` (passwords and API keys/tokens: ``password: …``, ``密码是…``, ``sk-…``, ``AKIA…``,
``ghp_…``, ``Bearer …``) and ``address`` (English street addresses, Chinese ``…路/街/道…号`` addresses).

The policy runs before anything is stored, indexed or sent to an LLM: at ingest (CLI, API) before the raw
log, and in the Faust worker before segmentation for producers that write Kafka directly. ``mask``
replaces a value with ``[kind]``; ``drop`` keeps the message out (a dead letter carries the masked text);
``keep`` leaves it. What was found is recorded on the message as ``metadata.sensitive`` = {kind: count,
"action": …} — never the value. Everything here is pure.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from language.lazy_re import lazy

if TYPE_CHECKING:
    from streams.log import Record

Kind = Literal["phone", "id_card", "bank_card", "email", "secret", "address"]
Action = Literal["mask", "drop", "keep"]
KINDS: tuple[Kind, ...] = ("secret", "email", "id_card", "bank_card", "phone", "address")


class SensitivePolicy(BaseModel):
    """What to do with each kind, by default and per chat (``MEMSTREAM_SENSITIVE__…``)."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = True
    actions: dict[Kind, Action] = Field(default_factory=lambda: {
        "secret": "mask", "id_card": "mask", "bank_card": "mask", "phone": "keep", "email": "keep",
        "address": "keep"})
    per_chat: dict[str, dict[Kind, Action]] = Field(default_factory=dict)

    def action(self, chat_id: str, kind: Kind) -> Action:
        return self.per_chat.get(chat_id, {}).get(kind) or self.actions.get(kind, "keep")


@dataclass(frozen=True)
class Finding:
    kind: Kind
    start: int
    end: int


_D = r"(?<![0-9A-Za-z_.])"  # not inside a longer (Latin) word or number; CJK text may touch it
_E = r"(?![0-9A-Za-z_])"
_PATTERNS: dict[Kind, list[re.Pattern[str]]] = {
    "secret": [
        lazy(r"(?i)(?:password|passwd|pwd|passcode|api[ _-]?key|secret|token|口令|密码|密钥)"
                   r"\s*(?:is|是|为|:|：|=)\s*[\"'“]?([^\s\"'”，。,;；]{4,})"),
        lazy(r"(?<![0-9A-Za-z])(sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|xox[abp]-[A-Za-z0-9-]{10,}"
                   r"|msk_[0-9a-f]{12}_[A-Za-z0-9_-]{20,})"),
        lazy(r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{20,})"),
    ],
    "email": [lazy(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")],
    "id_card": [
        lazy(_D + r"([1-9]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx])" + _E),
        lazy(r"(?i)(?:ssn|social security(?: number)?)\D{0,12}(\d{3}-\d{2}-\d{4})"),
        lazy(_D + r"(\d{3}-\d{2}-\d{4})" + _E),
    ],
    "bank_card": [lazy(_D + r"(\d{4}(?:[ -]?\d{4}){2,3}(?:[ -]?\d{1,3})?)" + _E)],
    "phone": [
        lazy(_D + r"((?:\+?86[ -]?)?1[3-9]\d[ -]?\d{4}[ -]?\d{4})" + _E),
        lazy(_D + r"(0\d{2,3}-\d{7,8})" + _E),
        lazy(r"(?<![0-9A-Za-z_+])(\+\d{1,3}[ -]?\(?\d{1,4}\)?(?:[ -]?\d{2,4}){2,4})" + _E),
        lazy(_D + r"(\(\d{3}\) ?\d{3}-\d{4}|\d{3}-\d{3}-\d{4})" + _E),
    ],
    "address": [
        lazy(r"(?<![0-9A-Za-z])(\d{1,5}(?: [A-Z][a-z]+){1,4} (?:Street|St|Road|Rd|Avenue|Ave|Boulevard|Blvd|Lane|Ln|Drive|Dr"
                   r"|Court|Ct|Place|Pl|Way|Terrace|Highway|Hwy)\b\.?(?:,? (?:Apt|Suite|Unit|#) ?\w+)?)"),
        lazy(r"((?:[\u4e00-\u9fff]{2,6}[省市])?(?:[\u4e00-\u9fff]{1,6}[区县])?[\u4e00-\u9fff]{1,10}"
                   r"(?:路|街|大道|巷|弄)\d{1,5}号(?:院)?(?:\d{1,3}[栋幢号楼])?(?:\d{1,2}单元)?(?:\d{1,5}室)?)"),
    ],
}


_ZH_LEAD = lazy(r"[\u4e00-\u9fff]*?(?:住在|住|搬到|搬去|寄到|送到|地址是|地址为|地址|在|到|去)(?=[\u4e00-\u9fff]{2})")


_DIGIT = lazy(r"\d")
_NEED_DIGIT = frozenset({"id_card", "bank_card", "phone", "address"})  # every pattern of these has a \d


def luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def id_checksum(number: str) -> bool:
    """The Chinese resident ID check character (ISO 7064 MOD 11-2)."""
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(number[:17], weights, strict=True))
    return "10X98765432"[total % 11] == number[17].upper()


def _valid(kind: Kind, value: str) -> bool:
    digits = re.sub(r"\D", "", value)
    if kind == "bank_card":
        return 13 <= len(digits) <= 19 and luhn(digits)
    if kind == "id_card" and len(value) == 18 and value[:17].isdigit():
        return id_checksum(value)
    return True


def detect(text: str) -> list[Finding]:
    """Non-overlapping findings, earlier kinds in :data:`KINDS` winning a contested span."""
    found: list[Finding] = []
    taken: list[tuple[int, int]] = []
    has_digit = _DIGIT.search(text) is not None
    for kind in KINDS:
        if (kind in _NEED_DIGIT and not has_digit) or (kind == "email" and "@" not in text):
            continue  # most chat lines: no pattern of the kind can match
        for pattern in _PATTERNS[kind]:
            for m in pattern.finditer(text):
                group = 1 if m.groups() else 0
                start, end = m.span(group)
                if kind == "address":  # a lead-in the CJK run swallowed ("我住在…") is not the address
                    lead = _ZH_LEAD.match(text, start, end)
                    start = lead.end() if lead else start
                if start < 0 or any(start < e and s < end for s, e in taken) or not _valid(kind, m[group]):
                    continue
                found.append(Finding(kind, start, end))
                taken.append((start, end))
    return sorted(found, key=lambda f: f.start)


@dataclass(frozen=True)
class Applied:
    text: str
    counts: dict[str, int]
    drop: bool
    masked: int


def apply(policy: SensitivePolicy, chat_id: str, text: str) -> Applied:
    """The policy on one message's text: the text to store, what was found, whether to drop it."""
    if not policy.enabled or not text:
        return Applied(text, {}, False, 0)
    findings = detect(text)
    counts = Counter(f.kind for f in findings)
    drop = any(policy.action(chat_id, k) == "drop" for k in counts)
    out, last, masked = [], 0, 0
    for f in findings:
        if drop or policy.action(chat_id, f.kind) != "keep":
            out.append(text[last:f.start] + f"[{f.kind}]")
            last = f.end
            masked += 1
    out.append(text[last:])
    return Applied("".join(out), dict(counts), drop, masked)


def screen_value(value: str, policy: SensitivePolicy) -> str:
    """The policy on a raw-topic payload (JSON of a message) from a producer that bypassed the ingest
    screen (Kafka). ``drop`` masks here: a worker never loses a record it was given."""
    import json

    if not policy.enabled or '"text"' not in value:
        return value
    try:
        obj = json.loads(value)
    except ValueError:
        return value  # the decode boundary dead-letters it
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or "sensitive" in (obj.get("metadata") or {}):
        return value
    res = apply(policy.model_copy(update={"actions": {k: "mask" if a == "drop" else a
                                                      for k, a in policy.actions.items()}}),
                str(obj.get("chat_id")), obj["text"])
    if not res.counts:
        return value
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    obj.update(text=res.text, metadata={**meta, "sensitive": {**res.counts, "masked": res.masked}})
    return json.dumps(obj, ensure_ascii=False)


def screen_records(records: list[Record], policy: SensitivePolicy) -> list[Record]:
    """:func:`screen_value` on each raw record's payload: what the segmenter reads, in either runtime (a
    producer that wrote the raw topic itself was not screened; a screened payload comes back unchanged)."""
    if not policy.enabled:
        return records
    return [r if r.value is None else replace(r, value=screen_value(r.value, policy)) for r in records]

