"""The consolidation stage adapter: distillation results -> memory-update decisions.

Reads what the pure consolidator needs from the store (the most similar live memories by vector, the live
memories of the same slot, the live records derived from the messages a decision makes stale), calls
:mod:`agents.consolidator` and :mod:`agents.consolidate.derived`, and emits the decisions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from agents import consolidator, profile
from agents.config import ConsolidatorConfig
from agents.consolidate.derived import (
    Staleness,
    derived_invalidations,
    edited_away,
    edited_noops_to_updates,
    stale_statements,
)
from agents.consolidate.records import same_subject
from language.extract.event_slots import is_plan_change
from retrieval.protocols import MemoryFilter
from schemas import CandidateFact, DecisionOp, DistillResult, MemoryDecision, MemoryKind, MemoryRecord
from streams.clients import Clients
from streams.log import Record
from streams.stages.io import StageOutput, decode_all, embed, for_each_item, is_deleted, kept_decisions
from streams.stages.vectors import (
    DerivedVectors,
    composed,
    item_vectors,
    sentence_composed,
    share_turn_vectors_of,
)
from streams.topics import DISTILL_RESULTS, MEMORY_DECISIONS

__all__ = ["ConsolidateStage"]

Pairs = list[tuple[MemoryRecord, float]]


class ConsolidateStage:
    """Distillation results -> memory-update decisions against the chat's live memories."""

    group = "consolidator"
    source = DISTILL_RESULTS

    def __init__(
        self, clients: Clients, cfg: ConsolidatorConfig, derived_vectors: DerivedVectors = "sources"
    ) -> None:
        self.clients = clients
        self.cfg = cfg
        self.derived_vectors = derived_vectors
        self.llm_calls = 0
        self._candidates: dict[str, list[CandidateFact]] = {}  # result id -> candidates (from prefetch)
        self._profiles: dict[str, MemoryRecord] = {}  # profile versions emitted in this batch
        self._profiles_replaced: set[str] = set()  # ...and the versions they replace
        self._deleted: set[tuple[str, str]] = set()  # the deletion ledger, read once a batch

    async def prefetch(self, records: list[Record], extra: list[str] | None = None) -> int:
        """Embed the candidates of many results in one call before they are decided one at a time (the
        runtimes decide one result at a time, so each would embed a handful of texts), with ``extra`` texts
        (the graph stage's, :meth:`streams.stages.graph.GraphStage.prefetch_texts`); the vectors land in the
        embedder's cache and the candidates are kept for :meth:`process`. Returns the texts embedded."""
        if self.clients.embedder is None:
            return 0
        texts = list(dict.fromkeys([*self.prefetch_texts(records), *(extra or ())]))
        await embed(self.clients, texts)
        return len(texts)

    def prefetch_ahead(
        self, records: list[Record], chunk: int, first: Sequence[str] = ()
    ) -> asyncio.Task[int] | None:
        """:meth:`prefetch` in the background, in calls of ``chunk`` texts, all queued for the model at once:
        ``first`` (the graph stage's, which reads the results before this stage), then the results' in their
        order, so :meth:`process` decides a result as soon as its own texts are embedded while the model goes
        on with the next ones (:meth:`backends.embed.embedder.CachedEmbedder.embed_ahead`). None: the embedder
        cannot (the caller awaits :meth:`prefetch`)."""
        ahead = getattr(self.clients.embedder, "embed_ahead", None)
        if ahead is None:
            return None
        return ahead(list(dict.fromkeys([*first, *self.prefetch_texts(records)])), chunk)

    def prefetch_texts(self, records: list[Record]) -> list[str]:
        """The texts :meth:`process` will embed for these results (their candidates are kept for it)."""
        todo = {c.text: c for c in self._candidates_of(records)}
        # composed (a fact from its sentence, almost always found; the rest is embedded when asked): no model
        mode, emb = self.derived_vectors, self.clients.embedder
        return [c.text for c in todo.values() if not (composed(c, mode) or sentence_composed(c, mode, emb))]

    async def read_turn_vectors(self, records: list[Record]) -> None:
        """Within :func:`~streams.stages.vectors.shared_turn_vectors`: the stored turn vectors that these
        results' composed candidates (and the records made of them) are made of, in one read."""
        await share_turn_vectors_of(self.clients, self._candidates_of(records), self.derived_vectors)

    def _candidates_of(self, records: list[Record]) -> list[CandidateFact]:
        """The candidates of these results, kept for :meth:`process`."""
        if len(self._candidates) > 4096:  # results never decided here (a worker's journalled ones): forget
            self._candidates = {}
        out: list[CandidateFact] = []
        for item in decode_all(self.source, "consolidate", records, StageOutput()):  # errors: in process
            if isinstance(item, DistillResult):
                cands = self._candidates.get(item.result_id)
                if cands is None:
                    cands = self._candidates[item.result_id] = consolidator.candidates_from_result(item)
                out += cands
        return out

    async def process(self, records: list[Record]) -> StageOutput:
        out = StageOutput()
        self._profiles, self._profiles_replaced = {}, set()
        self._deleted = await self.clients.log.deletions()  # the ledger as it stands now, in either runtime

        async def handle(result: DistillResult) -> None:
            if is_deleted(self._deleted, result.chat_id):  # a chat deleted while its result was in flight
                self._candidates.pop(result.result_id, None)
                return
            for d in kept_decisions(await self._decide(result), self._deleted, result.senders):
                out.emit(MEMORY_DECISIONS, d.chat_id, d.decision_id, d)

        await for_each_item(self.source, "consolidate", "consolidator", records, out, handle)
        return out

    async def _decide(self, result: DistillResult) -> list[MemoryDecision]:
        cfg = self.cfg
        candidates = self._candidates.pop(result.result_id, None)
        if candidates is None:
            candidates = consolidator.candidates_from_result(result)
        if not candidates:
            return []
        similar = await self._similar(candidates, cfg.similar_k)
        if cfg.mode == "llm" and self.clients.llm is not None:
            decisions, calls = await consolidator.decide_llm(
                candidates, similar, self.clients.llm, cfg, source_event_id=result.result_id
            )
            self.llm_calls += calls
        else:
            decisions = consolidator.decide_batch(candidates, similar, cfg, result.result_id)
        if result.edited_message_ids:
            known = {r.memory_id: r for pairs in similar for r, _ in pairs}
            decisions = edited_noops_to_updates(candidates, decisions, known, result.edited_message_ids)
            query = MemoryFilter(message_ids=result.edited_message_ids)
            stored = await self.clients.store.find_memories(result.chat_id, query)
            texts = [c.text for c in candidates]
            decisions += edited_away(
                result.edited_message_ids, stored, decisions, texts, result.result_id, result.at
            )
        # after the edit handling, which pairs candidates with their own decisions one to one; a profile's
        # edited lines are replaced by profile_decisions itself
        decisions += await self._profile_decisions(result, candidates)
        return decisions + await self._derived(result.chat_id, decisions, similar)

    async def _profile_decisions(
        self, result: DistillResult, candidates: list[CandidateFact]
    ) -> list[MemoryDecision]:
        """Add/update the participants' profile records with this topic's facts (:mod:`agents.profile`). The
        versions this stage emitted in the current batch stand in for what they replace (the indexer has not
        applied them yet); the next batch reads the store again (a deletion in between is seen). Only the
        profiles of the classes the facts add to are read (and those quoting edited messages): reading all of
        a long chat's live profiles (~25 of up to 400 lines each) for every topic was a third of the growth
        in a batch's cost as the chat grew (bench.long_chat). So two live versions of one profile (written by
        consolidators that did not see each other's) merge when a later topic adds to that class."""
        if not self.cfg.profiles:
            return []
        chat = result.chat_id
        deleted = self._deleted
        if deleted:  # a fact said by a user deleted while its topic was in flight: no line of theirs
            candidates = [c for c in candidates if not is_deleted(deleted, chat, c.speaker or "", result.senders)]
        store = self.clients.store
        stored: dict[str, MemoryRecord] = {}  # only the classes these facts add to, and profiles quoting edits
        for cls in sorted(profile.classes_touched(candidates, result.participants)):
            query = MemoryFilter(kinds=["profile"], attribute=profile.PREFIX + cls, limit=10_000)
            stored.update((r.memory_id, r) for r in await store.find_memories(chat, query))
        if result.edited_message_ids:
            query = MemoryFilter(kinds=["profile"], message_ids=result.edited_message_ids, limit=10_000)
            stored.update((r.memory_id, r) for r in await store.find_memories(chat, query))
        current: dict[tuple[str, str], list[MemoryRecord]] = {}
        for r in stored.values():
            if r.memory_id not in self._profiles_replaced:
                current.setdefault((r.subject or "", profile.class_of(r.attribute) or ""), []).append(r)
        for r in self._profiles.values():
            if r.chat_id == chat:
                key = (r.subject or "", profile.class_of(r.attribute) or "")
                current[key] = [x for x in current.get(key, []) if x.memory_id != r.memory_id] + [r]
        out = profile.profile_decisions(chat, candidates, result.participants, current, result.result_id,
                                        result.at, replaced=result.edited_message_ids)  # fmt: skip
        for d in out:
            if d.target_memory_id:
                self._profiles_replaced.add(d.target_memory_id)
                self._profiles.pop(d.target_memory_id, None)
            if d.record is not None:
                self._profiles[d.record.memory_id] = d.record
        return out

    async def _similar(self, candidates: Sequence[CandidateFact], k: int) -> list[Pairs]:
        """Per candidate: its nearest live memories by vector, plus every live memory of its slot."""
        vectors = await item_vectors(self.clients, candidates, self.derived_vectors)
        store = self.clients.store
        slot_mates: dict[str, list[MemoryRecord]] = {}
        out: list[Pairs] = []
        nearest: list[Pairs] = [[] for _ in candidates]
        if vectors is not None:  # each chat's candidates in one read (a result's are all of its chat)
            rows: dict[str, list[int]] = {}
            for i, c in enumerate(candidates):
                rows.setdefault(c.chat_id, []).append(i)
            for chat, idx in rows.items():
                for i, found in zip(idx, await store.similar_memories_many(chat, vectors[idx], k=k), strict=True):
                    nearest[i] = found
        for i, c in enumerate(candidates):
            # a profile is an aggregate, never a near-duplicate of one statement
            pairs: Pairs = [(r, s) for r, s in nearest[i] if r.kind != MemoryKind.PROFILE]
            if c.kind == MemoryKind.FACT and c.attribute and c.subject:
                if c.attribute not in slot_mates:
                    query = MemoryFilter(attribute=c.attribute, kinds=["fact"], limit=200)
                    slot_mates[c.attribute] = await store.find_memories(c.chat_id, query)
                known = {r.memory_id for r, _ in pairs}
                pairs += [
                    (r, 1.0)
                    for r in slot_mates[c.attribute]
                    if r.memory_id not in known and same_subject(r.subject, c.subject)
                ]
            elif c.kind == MemoryKind.FACT and not c.attribute and is_plan_change(c.text):
                for attribute in ("when", "where"):  # the events being planned, for a change naming none
                    if attribute not in slot_mates:
                        query = MemoryFilter(attribute=attribute, kinds=["fact"], limit=200)
                        slot_mates[attribute] = await store.find_memories(c.chat_id, query)
                    known = {r.memory_id for r, _ in pairs}
                    pairs += [(r, 0.0) for r in slot_mates[attribute] if r.memory_id not in known]
            out.append(pairs)
        return out

    async def _derived(
        self, chat_id: str, decisions: list[MemoryDecision], similar: Sequence[Pairs]
    ) -> list[MemoryDecision]:
        """Rewrite or invalidate the summaries, titles, Q&A and tasks that state what is no longer true:
        stored ones citing the messages these decisions made stale, and the ones this batch writes that
        repeat a statement made stale earlier (a re-distilled topic, an edit)."""
        store = self.clients.store
        known = {r.memory_id: r for pairs in similar for r, _ in pairs}
        known.update({d.record.memory_id: d.record for d in decisions if d.record is not None})
        written = [d.record for d in decisions if d.record is not None and d.op != DecisionOp.NOOP]
        replaced = {d.target_memory_id for d in decisions if d.target_memory_id and d.op != DecisionOp.NOOP}
        out: list[MemoryDecision] = []
        stale = stale_statements(decisions, known)
        if stale:
            sources = sorted({m for st in stale for m in st.sources})
            stored = await store.find_memories(chat_id, MemoryFilter(message_ids=sources))
            out += derived_invalidations(stale, [r for r in stored + written if r.memory_id not in replaced])
        # not profiles: derived_invalidations leaves them to profile_decisions, and asking which facts their
        # hundreds of sources stated read ~1,000 docs per topic in a long chat (bench.long_chat)
        derived = [r for r in written if r.kind not in (MemoryKind.FACT, MemoryKind.PROFILE)
                   and r.memory_id not in replaced]  # fmt: skip
        if derived:
            query = MemoryFilter(
                kinds=["fact"],
                state="invalidated",
                message_ids=sorted({m for r in derived for m in r.source_message_ids}),
            )
            earlier = []
            for old in await store.find_memories(chat_id, query):
                new = await store.get_memory(chat_id, old.superseded_by) if old.superseded_by else None
                st = Staleness.of_record(old, new)
                if st is not None:
                    earlier.append(st)
            done = {d.target_memory_id for d in out}
            out += derived_invalidations(earlier, [r for r in derived if r.memory_id not in done])
        return out
