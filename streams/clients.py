"""What a stage needs from the outside world, as types: the log, the memory store, the graph store, the
embedder and the LLM. Defined here (the runtime layer) and built by the wiring (``memstream.clients``), so
the stages never import the application that assembles them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agents.llm import LLMClient
from retrieval.graph_protocols import GraphStore
from retrieval.protocols import Embedder, MemoryStore
from streams.log import Produce

__all__ = ["Clients", "StageLog"]


@runtime_checkable
class StageLog(Protocol):
    """The log as every stage and worker sees it: append records, read the deletion ledger. The embedded
    runner also consumes it (:class:`streams.log.EventLog`); the Faust worker consumes Kafka directly."""

    async def append(self, items: list[Produce]) -> int: ...

    async def deletions(self) -> set[tuple[str, str]]: ...

    async def record_deletion(self, chat_id: str, sender: str, at: str) -> None: ...

    async def close(self) -> None: ...


@dataclass(kw_only=True)
class Clients:
    """Every backend a stage may use, opened once per process (worker start-up, the API lifespan)."""

    log: StageLog
    store: MemoryStore
    embedder: Embedder | None
    graph: GraphStore | None = None
    llm: LLMClient | None = None

    async def close(self) -> None:
        if self.graph is not None:
            await self.graph.close()
        await self.store.close()
        await self.log.close()
        if self.llm is not None:
            await self.llm.aclose()
