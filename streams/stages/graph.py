"""Thin stage adapter: distillation results -> graph memory updates (typed entities, time-bounded edges).

Reads what the pure core needs from the ``GraphStore`` (``clients.graph``) and the message store
(who sent each source message), calls :mod:`agents.graph`, and writes the update back in one transaction.
Runs as its own consumer group of ``distill-results``, beside the consolidator; it emits nothing.
"""

from __future__ import annotations

import logging

from agents import graph
from agents.config import GraphMemoryConfig
from retrieval.graph_protocols import GraphStore
from schemas import DistillResult
from schemas.graph import GraphApplyStats
from streams.clients import Clients
from streams.log import Record
from streams.stages.io import StageOutput, decode_all, embed, for_each_item
from streams.topics import DISTILL_RESULTS

log = logging.getLogger("memstream.stages")


class GraphStage:
    """Distillation results -> entity nodes and relation edges of the chat's graph (idempotent)."""

    group = "graph"
    source = DISTILL_RESULTS

    def __init__(
        self,
        clients: Clients,
        store: GraphStore,
        cfg: GraphMemoryConfig,
    ) -> None:
        self.clients = clients
        self.store = store
        self.cfg = cfg
        self._ahead: dict[str, list[str]] = {}  # result id -> its texts to embed ahead (prefetch_texts)
        self._sent: dict[tuple[str, str], tuple[str, str] | None] | None = None  # the batch's senders

    async def process(self, records: list[Record]) -> StageOutput:
        out = StageOutput()
        deleted = await self.clients.log.deletions()
        if self.clients.embedder is not None:  # the batch's names and sentences in one call, not two a result
            await embed(self.clients, self.prefetch_texts(records))

        async def handle(result: DistillResult) -> None:
            stats = await self.apply_result(result, deleted)
            for name, value in stats.model_dump().items():
                out.metrics[f"graph_{name}"] = out.metrics.get(f"graph_{name}", 0.0) + value

        self._sent = await self._read_senders(records)
        try:
            await for_each_item(self.source, "graph", "graph", records, out, handle)
        finally:
            self._sent = None
        return out

    async def _read_senders(self, records: list[Record]) -> dict[tuple[str, str], tuple[str, str] | None]:
        """Who sent each source message of these results, in one read across their chats (one round trip
        a result on Elasticsearch otherwise): (chat id, message id) -> (sender id, display name), None for a
        message no longer stored."""
        keys = [(item.chat_id, m) for item in decode_all(self.source, "graph", records, StageOutput())
                if isinstance(item, DistillResult) for m in item.source_message_ids]  # fmt: skip
        sent: dict[tuple[str, str], tuple[str, str] | None] = dict.fromkeys(keys)
        if keys:
            for m in await self.clients.store.get_messages_in(keys):
                sent[(m.chat_id, m.message_id)] = (m.sender, m.display_name)
        return sent

    def prefetch_texts(self, records: list[Record]) -> list[str]:
        """What :meth:`apply_result` will embed for these results, as far as it is known before the merge:
        the entity names and the edges' sentences under those names (for embedding ahead, in one call).
        Kept per result: the worker asks when the results are made and again before it applies them."""
        if len(self._ahead) > 4096:  # results never applied here (another worker's): forget
            self._ahead = {}
        texts: dict[str, None] = {}
        for item in decode_all(self.source, "graph", records, StageOutput()):  # errors: in process
            if isinstance(item, DistillResult):
                if item.result_id not in self._ahead:
                    self._ahead[item.result_id] = self._texts_of(item)
                texts.update(dict.fromkeys(self._ahead[item.result_id]))
        return list(texts)

    def _texts_of(self, result: DistillResult) -> list[str]:
        triples = self._triples(result)
        names = {m.key: m.name for m in graph.mentions_from_triples(result, triples)}
        texts = dict.fromkeys(names.values())
        for t in triples:
            subject = names.get(graph.normalise_name(t.subject), t.subject)
            obj = names.get(graph.normalise_name(t.object or ""), t.object or "")
            texts[graph.triple_text(subject, t.predicate, obj, t.fact)] = None
        return list(texts)

    def _triples(self, result: DistillResult) -> list[graph.Triple]:
        cfg = self.cfg
        return graph.triples_from_result(
            result, mention_edges=cfg.mention_edges, max_mentions_per_fact=cfg.max_mentions_per_fact
        )

    async def apply_result(
        self, result: DistillResult, deleted: set[tuple[str, str]] = frozenset()
    ) -> GraphApplyStats:
        """One result: triples -> typed mentions -> merged entities -> edges and invalidations -> store.

        ``deleted`` is the deletion ledger: a deleted chat gets nothing; a deleted sender's statements and
        person node are left out (a result distilled before the deletion may still be in the log).
        """
        chat, cfg = result.chat_id, self.cfg
        if (chat, "*") in deleted:
            return GraphApplyStats()
        senders = await self._senders(result)
        triples = self._triples(result)
        self._ahead.pop(result.result_id, None)
        result, triples, by_name = _without_deleted(result, triples, senders, deleted)
        mentions = graph.mentions_from_triples(result, triples, by_name)
        known = await self.store.entities(chat, [m.key for m in mentions])
        vectors = await embed(self.clients, [m.name for m in mentions])
        similar = (
            await self.store.similar_entities(chat, vectors, k=cfg.similar_k) if vectors is not None else None
        )
        merge = graph.merge_entities(
            chat, mentions, known, vectors=vectors, similar=similar, threshold=cfg.merge_threshold
        )
        subjects = list(dict.fromkeys(merge.ids.values()))
        existing = (await self.store.subgraph(chat, subjects, hops=1)).edges if subjects else []
        update = graph.build_edges(
            chat,
            result.result_id,
            triples,
            merge.ids,
            existing,
            names={n.entity_id: n.name for n in [*known, *merge.nodes]},
            senders={mid: sender for mid, (sender, _) in senders.items()},
        )
        node_vectors = None
        if vectors is not None:
            row = {m.key: i for i, m in enumerate(mentions)}
            node_vectors = {n.entity_id: vectors[row[n.key]] for n in merge.nodes if n.key in row}
        edge_vecs = await embed(self.clients, [e.text for e in update.edges])  # a sentence each: embedded
        edge_vectors = (
            {e.edge_id: edge_vecs[i] for i, e in enumerate(update.edges)} if edge_vecs is not None else None
        )
        return await self.store.apply(
            chat,
            merge.nodes,
            update.edges,
            update.invalidations,
            node_vectors=node_vectors,
            edge_vectors=edge_vectors,
        )

    async def _senders(self, result: DistillResult) -> dict[str, tuple[str, str]]:
        """message id -> (sender id, display name) for the topic's messages still in the store."""
        chat, sent = result.chat_id, self._sent
        if sent is not None and all((chat, m) in sent for m in result.source_message_ids):  # read for the batch
            return {m: who for m in result.source_message_ids if (who := sent[(chat, m)]) is not None}
        msgs = await self.clients.store.get_messages(chat, result.source_message_ids)
        return {m.message_id: (m.sender, m.display_name) for m in msgs}


def _without_deleted(
    result: DistillResult,
    triples: list[graph.Triple],
    senders: dict[str, tuple[str, str]],
    deleted: set[tuple[str, str]],
) -> tuple[DistillResult, list[graph.Triple], dict[str, str]]:
    """Leave out deleted senders: their statements, triples about them, their person node.

    Returns the result (participants filtered), the kept triples and display name -> sender of the rest.
    """
    gone = {name for sender, name in senders.values() if (result.chat_id, sender) in deleted}
    by_name = {name: sender for sender, name in senders.values() if name not in gone}
    if not gone:
        return result, triples, by_name
    kept = [
        t
        for t in triples
        if not ({t.speaker, t.subject} & gone)
        and not any(senders.get(m, ("", ""))[1] in gone for m in t.source_message_ids[:1])
    ]
    participants = [p for p in result.participants if p not in gone]
    return result.model_copy(update={"participants": participants}), kept, by_name
