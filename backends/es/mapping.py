"""Pure builders for the Elasticsearch store's data: ids, the store URL, index mappings and templates,
document sources (and back to :class:`Doc`). Queries over them live in :mod:`backends.es.queries`.

No I/O here. Text is tokenised by :func:`language.text.tokenize` (documents are indexed pre-tokenised in
``tokens`` with the ``whitespace`` analyzer), so BM25 sees exactly the terms the SQLite store's FTS5 index
sees, Chinese included, without analysis plugins.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np

from language.text import tokenize
from retrieval.protocols import Doc
from schemas import ChatMessage, MemoryDecision, MemoryRecord, TopicSummary

INDEX_KINDS = ("docs", "messages", "memories", "decisions", "topics")
DOC_SOURCE_EXCLUDES = ["tokens", "vector"]

_KEYWORD = {"type": "keyword"}
_DOUBLE = {"type": "double"}
_LONG = {"type": "long"}
_DATE = {"type": "date"}
_STORED = {"type": "object", "enabled": False}  # kept in _source, never indexed


# ---- ids -----------------------------------------------------------------------------------------


def es_id(chat_id: str, local_id: str) -> str:
    """The ``_id`` of a chat's record: derived from (chat, event-derived id), bounded length, idempotent."""
    return hashlib.blake2b(f"{chat_id}\x1f{local_id}".encode(), digest_size=16).hexdigest()


def turn_doc_id(chat_id: str, message_id: str) -> str:
    return f"turn:{chat_id}:{message_id}"


def epoch(value: datetime) -> float:
    """Seconds since the epoch; naive datetimes (only possible in queries) are taken as UTC."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def parse_store_url(url: str) -> tuple[list[str], dict[str, Any]]:
    """``es://[user:pass@]host:port[,host:port]?prefix=&rrf=auto|server|client&refresh=&shards=``
    (``es+https://`` for TLS) -> (hosts, ``ESStore`` keyword arguments)."""
    parsed = urlsplit(url)
    params = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    unknown = sorted(set(params) - {"prefix", "rrf", "refresh", "shards"})
    if parsed.scheme not in ("es", "es+https") or not parsed.netloc or unknown:
        raise ValueError(
            f"bad Elasticsearch store URL {url!r}" + (f" (unknown {unknown})" if unknown else "")
        )
    http = "https" if parsed.scheme == "es+https" else "http"
    credentials, _, hosts = parsed.netloc.rpartition("@")
    auth = f"{credentials}@" if credentials else ""
    kwargs = {"index_prefix": params.get("prefix", "memstream"), "rrf_mode": params.get("rrf", "auto"),
              "refresh": params.get("refresh", "wait_for"), "shards": int(params.get("shards", "1"))}  # fmt: skip
    return [f"{http}://{auth}{h}{parsed.path.rstrip('/')}" for h in hosts.split(",")], kwargs


def unit_vectors(vectors: np.ndarray, n: int, dim: int | None) -> tuple[list[list[float] | None], int]:
    """``n`` vectors validated (count, dimension) and L2-normalised -> (rows, dim). The first vectors fix
    the dimension. A zero vector becomes None: Elasticsearch's cosine rejects it, so it is not stored."""
    v = np.asarray(vectors, dtype=np.float32)
    v = v.reshape(1, -1) if v.ndim == 1 else v
    if v.shape[0] != n:
        raise ValueError(f"{v.shape[0]} vectors for {n} items")
    dim = int(v.shape[1]) if dim is None else dim
    if v.shape[1] != dim:
        raise ValueError(f"vectors are {v.shape[1]}-d, store is {dim}-d")
    norms = np.linalg.norm(v, axis=1)
    return [(row / norm).tolist() if norm > 0 else None for row, norm in zip(v, norms, strict=True)], dim


# ---- mappings ------------------------------------------------------------------------------------


def _vector_mapping(dim: int | None) -> dict[str, Any]:
    # float HNSW (not the int8 default) so ``_score`` converts back to the exact cosine
    mapping = {
        "type": "dense_vector",
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "hnsw"},
    }
    return mapping if dim is None else {**mapping, "dims": dim}


def index_mappings(dim: int | None) -> dict[str, dict[str, Any]]:
    """Mappings per index kind. ``seq`` is an insertion sequence number: the tie-break SQLite gets from rowid."""
    return {
        "docs": {
            "doc_id": _KEYWORD, "chat_id": _KEYWORD, "kind": _KEYWORD, "speaker": _KEYWORD,
            "sender": _KEYWORD, "subject": _KEYWORD, "topic_id": _KEYWORD, "source_message_ids": _KEYWORD,
            "entities": _KEYWORD, "ts": _DATE, "ts_epoch": _DOUBLE, "valid_to": _DATE, "seq": _LONG,
            "text": {"type": "text", "index": False},
            "tokens": {"type": "text", "analyzer": "whitespace", "index_options": "freqs"},
            "vector": _vector_mapping(dim),
        },
        "messages": {
            "chat_id": _KEYWORD, "message_id": _KEYWORD, "sender": _KEYWORD, "ts": _DATE,
            "ts_epoch": _DOUBLE, "seq": _LONG, "message": _STORED,
        },
        "memories": {
            "memory_id": _KEYWORD, "chat_id": _KEYWORD, "subject": _KEYWORD, "attribute": _KEYWORD,
            "speaker": _KEYWORD, "valid_from": _DATE, "valid_from_epoch": _DOUBLE, "valid_to": _DATE,
            "superseded_by": _KEYWORD, "version": _LONG, "seq": _LONG, "record": _STORED,
        },
        "decisions": {
            "decision_id": _KEYWORD, "chat_id": _KEYWORD, "op": _KEYWORD, "memory_id": _KEYWORD,
            "applied": _DATE,
        },
        "topics": {
            "chat_id": _KEYWORD, "topic_id": _KEYWORD, "started_epoch": _DOUBLE, "seq": _LONG,
            "topic": _STORED,
        },
    }  # fmt: skip


def index_template(prefix: str, kind: str, dim: int | None, shards: int = 1) -> dict[str, Any]:
    """``put_index_template`` arguments for one index kind: indices ``{prefix}-{kind}-v*``."""
    return {
        "name": f"{prefix}-{kind}",
        "index_patterns": [f"{prefix}-{kind}-v*"],
        "template": {
            "settings": {"number_of_shards": shards, "number_of_replicas": 0 if shards == 1 else 1},
            "mappings": {"dynamic": "strict", "properties": index_mappings(dim)[kind]},
        },
    }


# ---- document sources ----------------------------------------------------------------------------


def turn_tokens(msg: ChatMessage) -> list[str]:
    """BM25 tokens of a turn: speaker and date prefixed to the text (as the SQLite store indexes turns)."""
    return tokenize(f"{msg.display_name} {msg.ts:%Y-%m-%d} {msg.text}")


def memory_tokens(record: MemoryRecord) -> list[str]:
    return tokenize(f"{record.text} {record.speaker or ''}")


def message_source(msg: ChatMessage, seq: int) -> dict[str, Any]:
    return {
        "chat_id": msg.chat_id, "message_id": msg.message_id, "sender": msg.sender, "ts": msg.ts.isoformat(),
        "ts_epoch": msg.ts.timestamp(), "seq": seq, "message": msg.model_dump(mode="json"),
    }  # fmt: skip


def turn_source(msg: ChatMessage, vector: list[float] | None, seq: int) -> dict[str, Any]:
    src = {
        "doc_id": turn_doc_id(msg.chat_id, msg.message_id), "chat_id": msg.chat_id, "kind": "turn",
        "text": msg.text, "speaker": msg.display_name, "sender": msg.sender, "ts": msg.ts.isoformat(),
        "ts_epoch": msg.ts.timestamp(), "source_message_ids": [msg.message_id], "entities": [], "seq": seq,
        "tokens": " ".join(turn_tokens(msg)),
    }  # fmt: skip
    return src if vector is None else {**src, "vector": vector}


def memory_doc_source(record: MemoryRecord, vector: list[float] | None, seq: int) -> dict[str, Any]:
    r = record
    src = {
        "doc_id": r.memory_id, "chat_id": r.chat_id, "kind": r.kind.value, "text": r.text,
        "speaker": r.speaker, "sender": r.speaker, "subject": r.subject, "ts": r.valid_from.isoformat(),
        "ts_epoch": r.valid_from.timestamp(), "valid_to": _iso(r.valid_to), "topic_id": r.topic_id,
        "source_message_ids": list(r.source_message_ids), "entities": list(r.entities), "seq": seq,
        "tokens": " ".join(memory_tokens(r)),
    }  # fmt: skip
    return src if vector is None else {**src, "vector": vector}


def memory_source(record: MemoryRecord, seq: int) -> dict[str, Any]:
    r = record
    return {
        "memory_id": r.memory_id, "chat_id": r.chat_id, "subject": r.subject, "attribute": r.attribute,
        "speaker": r.speaker, "valid_from": r.valid_from.isoformat(), "valid_from_epoch": r.valid_from.timestamp(),
        "valid_to": _iso(r.valid_to), "superseded_by": r.superseded_by, "version": r.version, "seq": seq,
        "record": r.model_dump(mode="json"),
    }  # fmt: skip


def decision_source(decision: MemoryDecision) -> dict[str, Any]:
    d = decision
    memory_id = d.record.memory_id if d.record else d.target_memory_id
    return {"decision_id": d.decision_id, "chat_id": d.chat_id, "op": d.op.value, "memory_id": memory_id,
            "applied": d.at.isoformat()}  # fmt: skip


def topic_source(topic: TopicSummary, seq: int) -> dict[str, Any]:
    return {
        "chat_id": topic.chat_id, "topic_id": topic.topic_id, "started_epoch": topic.started_at.timestamp(),
        "seq": seq, "topic": topic.model_dump(mode="json"),
    }  # fmt: skip


def doc_from_source(src: dict[str, Any]) -> Doc:
    return Doc(
        doc_id=src["doc_id"],
        chat_id=src["chat_id"],
        kind=src["kind"],
        text=src["text"],
        speaker=src.get("speaker"),
        ts=datetime.fromisoformat(src["ts"]),
        valid_to=datetime.fromisoformat(src["valid_to"]) if src.get("valid_to") else None,
        topic_id=src.get("topic_id"),
        source_message_ids=src.get("source_message_ids") or [],
        entities=src.get("entities") or [],
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
