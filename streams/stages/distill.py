"""The distillation stage adapter: distillation jobs -> distillation results."""

from __future__ import annotations

from agents import distiller
from agents.config import DistillerConfig
from schemas import DistillJob, DistillResult
from streams.clients import Clients
from streams.log import Record
from streams.stages.io import StageOutput, for_each_item, is_deleted
from streams.topics import DISTILL_JOBS, DISTILL_RESULTS

__all__ = ["DistillStage"]


class DistillStage:
    """Distillation jobs -> distillation results (extractive, or one LLM call per topic)."""

    group = "distiller"
    source = DISTILL_JOBS

    def __init__(self, clients: Clients, cfg: DistillerConfig) -> None:
        self.clients = clients
        self.cfg = cfg
        self.llm_calls = 0

    async def process(self, records: list[Record]) -> StageOutput:
        out = StageOutput()
        deleted = await self.clients.log.deletions()

        async def handle(job: DistillJob) -> None:
            if is_deleted(deleted, job.chat_id):  # a chat deleted while its topic was in flight
                return
            result = await self._distil(job)
            out.emit(DISTILL_RESULTS, result.chat_id, result.result_id, result)

        await for_each_item(self.source, "distill", "distiller", records, out, handle)
        return out

    async def _distil(self, job: DistillJob) -> DistillResult:
        cfg = self.cfg
        if cfg.mode == "llm" and self.clients.llm is not None:
            result, calls = await distiller.distill_llm(job, self.clients.llm, cfg)
            self.llm_calls += calls
        else:
            result = distiller.distill_extractive(job, cfg)
        if job.edited_message_ids:
            result = result.model_copy(update={"edited_message_ids": list(job.edited_message_ids)})
        return result
