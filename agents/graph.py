"""Graph memory core (Mem0g-style), pure: typed entities, relation triples, merging and conflict detection.

A :class:`DistillResult` becomes relation triples (:func:`triples_from_result`: its ``relations``, the facts
that fill an attribute/value slot, possessive and visit patterns, and the entities a fact mentions), each
keeping its source message ids and time. Their endpoints become typed :class:`Mention` s
(:func:`mentions_from_triples`), which :func:`merge_entities` resolves to entity nodes — by normalised name,
then by name-embedding similarity above a threshold. :func:`build_edges` turns the triples into edges and
:func:`detect_conflicts` finds the live edges a new one contradicts (same subject, an exclusive predicate,
another object): those are invalidated at the new edge's time, never deleted.

No I/O here: the stage adapter (``streams/stages/graph.py``) reads the store, calls these, and writes back.
Entity typing and name normalisation live in :mod:`language.extract.entities`, triple extraction and the
predicate vocabulary in :mod:`language.extract.relations`; both are re-exported here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from agents.config import GraphMemoryConfig
from language.extract.entities import (
    PERSON_SUBJECT_PREDICATES,
    compatible,
    entity_type,
    normalise_name,
    split_appositive,
)
from language.extract.relations import (
    EXCLUSIVE,
    OPPOSITE,
    Triple,
    is_exclusive,
    normalise_predicate,
    triples_from_result,
)
from language.extract.slot_text import slot_sentence
from language.text import has_cjk
from schemas import DistillResult, stable_id
from schemas.graph import EdgeInvalidation, EntityNode, EntityType, RelationEdge

__all__ = [
    "EXCLUSIVE",
    "EntityMerge",
    "GraphMemoryConfig",
    "GraphUpdate",
    "Mention",
    "Triple",
    "build_edges",
    "detect_conflicts",
    "entity_type",
    "is_exclusive",
    "merge_entities",
    "mentions_from_triples",
    "normalise_name",
    "normalise_predicate",
    "triple_text",
    "triples_from_result",
]


# -------------------------------------------------------------------------------------------- mentions


@dataclass(frozen=True)
class Mention:
    """An entity named by a triple endpoint or a participant, typed, not yet resolved to a node."""

    name: str
    key: str
    type: EntityType
    subtype: str | None
    at: datetime
    sender: str | None = None


def mentions_from_triples(
    result: DistillResult, triples: Sequence[Triple], senders_by_name: Mapping[str, str] | None = None
) -> list[Mention]:
    """The participants (persons) and every endpoint of ``triples``, typed, one per normalised key."""
    senders_by_name = senders_by_name or {}
    participants = frozenset(result.participants)
    found: dict[str, Mention] = {}

    def add(name: str, role: EntityType | None, subtype: str | None, at: datetime, context: str) -> None:
        head, appositive = split_appositive(name)
        key = normalise_name(name)
        if not key:
            return
        etype, sub = entity_type(head, role=role, participants=participants, context=context)
        m = Mention(head.strip(), key, etype, subtype or appositive or sub, at, senders_by_name.get(name))
        old = found.get(key)
        found[key] = m if old is None else _combine(old, m)

    for p in result.participants:
        add(p, "person", None, result.started_at, "")
    for t in triples:
        subject_role: EntityType | None = "person" if _person_subject(t.predicate) else None
        add(t.subject, subject_role, None, t.at, t.fact or "")
        if t.object is not None and not t.negated:
            pet = t.predicate.partition("pet_name:")[2] or None
            add(
                t.object,
                t.object_type or _object_role(t.predicate),
                t.object_subtype or pet,
                t.at,
                t.fact or "",
            )
    return list(found.values())


def _person_subject(predicate: str) -> bool:
    return predicate.split(":")[0] in PERSON_SUBJECT_PREDICATES or predicate.startswith("favorite_")


_OBJECT_ROLES: dict[str, EntityType] = {
    "lives_in": "place",
    "hometown": "place",
    "works_at": "organisation",
    "school": "organisation",
}


def _object_role(predicate: str) -> EntityType | None:
    if predicate.startswith("pet_name:"):
        return "object"
    return _OBJECT_ROLES.get(predicate)


def _combine(old: Mention, new: Mention) -> Mention:
    etype = new.type if old.type == "concept" else old.type
    return replace(old, type=etype, subtype=old.subtype or new.subtype, at=min(old.at, new.at),
                   sender=old.sender or new.sender)  # fmt: skip


# ------------------------------------------------------------------------------------------- merging


@dataclass
class EntityMerge:
    """The nodes to upsert (new or changed) and the entity id each mention key resolved to."""

    nodes: list[EntityNode] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)


def merge_entities(
    chat_id: str,
    mentions: Sequence[Mention],
    known: Iterable[EntityNode],
    *,
    vectors: np.ndarray | None = None,
    similar: Sequence[Sequence[tuple[EntityNode, float]]] | None = None,
    threshold: float = 0.92,
) -> EntityMerge:
    """Resolve each mention to a node: same normalised key or alias; a participant's first name; else the
    most similar node of a compatible type with name cosine >= ``threshold`` (stored nodes via ``similar``,
    aligned with ``mentions``; nodes new in this batch via ``vectors``); else a new node.

    Node ids derive from the chat and the first key seen, so replaying the same events rebuilds the same graph.
    """
    by_key: dict[str, EntityNode] = {}
    for node in known:
        for alias in (node.key, *node.aliases):
            by_key.setdefault(alias, node)
    touched: dict[str, EntityNode] = {}
    fresh: list[tuple[str, np.ndarray]] = []
    out = EntityMerge()
    for i, m in enumerate(mentions):
        target = by_key.get(m.key) or _first_name_match(m, [*by_key.values(), *touched.values()])
        if target is None and vectors is not None:
            pool = [(n, s) for n, s in (similar[i] if similar and i < len(similar) else ())]
            pool += [(touched[nid], float(np.dot(vectors[i], v))) for nid, v in fresh]
            target = _most_similar(m, pool, threshold)
        if target is None:
            node = EntityNode(entity_id=stable_id("entity", chat_id, m.key), chat_id=chat_id, name=m.name,
                              key=m.key, type=m.type, subtype=m.subtype, sender=m.sender, first_seen=m.at)  # fmt: skip
            if vectors is not None:
                fresh.append((node.entity_id, vectors[i]))
        else:
            node = _absorb(touched.get(target.entity_id, target), m)
        touched[node.entity_id] = node
        by_key[m.key] = node
        out.ids[m.key] = node.entity_id
    out.nodes = list(touched.values())
    return out


def _first_name_match(m: Mention, nodes: Iterable[EntityNode]) -> EntityNode | None:
    """``Caroline`` / ``Caroline Smith`` and ``Mel`` / ``Melanie`` are one person when exactly one stored
    person's first name is, or starts with, the bare name."""
    if m.type != "person":
        return None
    first = m.key.split(" ")[0]
    found: dict[str, EntityNode] = {}
    for n in nodes:
        if n.type != "person" or n.key == m.key:
            continue
        other = n.key.split(" ")[0]
        if (" " in n.key) != (" " in m.key) and other == first:
            found[n.entity_id] = n
        elif " " not in m.key and len(first) >= 3 and other.startswith(first):
            found[n.entity_id] = n
    return next(iter(found.values())) if len(found) == 1 else None


def _most_similar(
    m: Mention, pool: Sequence[tuple[EntityNode, float]], threshold: float
) -> EntityNode | None:
    ok = [
        (n, s) for n, s in pool if s >= threshold and compatible(n.type, m.type) and _plausible(n.key, m.key)
    ]
    return max(ok, key=lambda ns: ns[1])[0] if ok else None


def _plausible(a: str, b: str) -> bool:
    """Guards on embedding merges: numbers must agree; CJK names must share most characters."""
    if re.findall(r"\d+", a) != re.findall(r"\d+", b):
        return False
    if has_cjk(a) or has_cjk(b):
        shorter, longer = sorted((a, b), key=len)
        return sum(ch in longer for ch in shorter) * 2 >= len(shorter)
    return True


def _absorb(node: EntityNode, m: Mention) -> EntityNode:
    aliases = node.aliases if m.key == node.key or m.key in node.aliases else [*node.aliases, m.key]
    return node.model_copy(
        update={
            "aliases": aliases,
            "type": m.type if node.type == "concept" else node.type,
            "subtype": node.subtype or m.subtype,
            "sender": node.sender or m.sender,
            "first_seen": min(node.first_seen, m.at),
        }
    )


# --------------------------------------------------------------------------------------- edges, conflicts


@dataclass
class GraphUpdate:
    edges: list[RelationEdge] = field(default_factory=list)
    invalidations: list[EdgeInvalidation] = field(default_factory=list)


def detect_conflicts(new: RelationEdge, existing: Iterable[RelationEdge]) -> list[str]:
    """Ids of live edges ``new`` contradicts and supersedes: same subject, an exclusive predicate with another
    object (or the opposite predicate, ``likes``/``dislikes``, with the same object), stated no later."""
    return [
        e.edge_id
        for e in existing
        if e.live and e.edge_id != new.edge_id and _contradicts(new, e) and e.valid_from <= new.valid_from
    ]


def _contradicts(new: RelationEdge, old: RelationEdge) -> bool:
    if old.subject_id != new.subject_id:
        return False
    if old.predicate == new.predicate:
        return is_exclusive(new.predicate) and old.object_id != new.object_id
    return OPPOSITE.get(new.predicate) == old.predicate and old.object_id == new.object_id


def triple_text(subject: str, predicate: str, obj: str, fact: str | None = None) -> str:
    """The triple as a sentence: the slot's own wording when there is one, else ``S predicate O``."""
    if predicate == "mentions" and fact:
        return fact
    attribute = "relationship" if predicate == "relationship_status" else predicate
    sentence = slot_sentence(attribute, obj, subject, False, has_cjk(subject + obj))
    return sentence or f"{subject} {predicate.replace('_', ' ')} {obj}"


def build_edges(
    chat_id: str,
    source_event_id: str,
    triples: Sequence[Triple],
    ids: Mapping[str, str],
    existing: Iterable[RelationEdge],
    *,
    names: Mapping[str, str] | None = None,
    senders: Mapping[str, str] | None = None,
) -> GraphUpdate:
    """Edges for ``triples`` (resolved through ``ids``: mention key -> entity id) and the invalidations they
    cause against ``existing`` edges and each other, in time order. A triple already live is skipped; one
    older than a live contradicting edge is stored as history (already closed); a retraction closes the live
    edges it negates. Edge ids derive from ``source_event_id``, so re-applying an event changes nothing."""
    names, senders = names or {}, senders or {}
    live = {e.edge_id: e for e in existing if e.live}
    known = {e.edge_id for e in existing}
    out = GraphUpdate()
    for t in triples:
        subject_id = ids.get(normalise_name(t.subject))
        if subject_id is None:
            continue
        if t.negated:
            out.invalidations.extend(_retractions(t, subject_id, live))
            continue
        object_id = ids.get(normalise_name(t.object or ""))
        if object_id is None:
            continue
        if any(
            (e.subject_id, e.predicate, e.object_id) == (subject_id, t.predicate, object_id)
            for e in live.values()
        ):
            continue  # already known and still true
        edge = _edge(chat_id, source_event_id, t, subject_id, object_id, names, senders)
        if edge.edge_id in known:
            continue
        newer = [e for e in live.values() if _contradicts(edge, e) and e.valid_from > edge.valid_from]
        if newer:  # an older statement arriving late: history, superseded by what is already known
            first = min(newer, key=lambda e: e.valid_from)
            edge = edge.model_copy(update={"valid_to": first.valid_from, "invalidated_by": first.edge_id})
        for old_id in detect_conflicts(edge, live.values()) if edge.live else []:
            out.invalidations.append(EdgeInvalidation(edge_id=old_id, at=edge.valid_from, by_edge_id=edge.edge_id,
                                                      reason=f"contradicted by: {edge.text}"))  # fmt: skip
            del live[old_id]
        out.edges.append(edge)
        known.add(edge.edge_id)
        if edge.live:
            live[edge.edge_id] = edge
    return out


def _edge(
    chat_id: str,
    source_event_id: str,
    t: Triple,
    subject_id: str,
    object_id: str,
    names: Mapping[str, str],
    senders: Mapping[str, str],
) -> RelationEdge:
    subject_name = names.get(subject_id, t.subject)
    object_name = names.get(object_id, t.object or "")
    return RelationEdge(
        edge_id=stable_id("edge", chat_id, source_event_id, subject_id, t.predicate, object_id),
        chat_id=chat_id,
        subject_id=subject_id,
        predicate=t.predicate,
        object_id=object_id,
        subject_name=subject_name,
        object_name=object_name,
        text=triple_text(subject_name, t.predicate, object_name, t.fact),
        fact=t.fact,
        valid_from=t.at,
        speaker=t.speaker,
        sender=senders.get(t.source_message_ids[0]) if t.source_message_ids else None,
        source_message_ids=list(t.source_message_ids),
        source_event_id=source_event_id,
    )


def _retractions(t: Triple, subject_id: str, live: dict[str, RelationEdge]) -> list[EdgeInvalidation]:
    """Close the live edges a negated statement denies (``no longer lives in Paris``, ``不再喜欢…``)."""
    obj = normalise_name(t.object or "")
    hits = [
        e
        for e in live.values()
        if e.subject_id == subject_id
        and e.predicate == t.predicate
        and e.valid_from <= t.at
        and (normalise_name(e.object_name) == obj if obj else is_exclusive(t.predicate))
    ]
    for e in hits:
        del live[e.edge_id]
    reason = f"retracted: {t.fact}" if t.fact else "retracted"
    return [EdgeInvalidation(edge_id=e.edge_id, at=t.at, reason=reason) for e in hits]
