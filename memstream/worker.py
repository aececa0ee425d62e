"""The Faust worker wired from the settings: how it opens its clients, working memory and periodic audit.

``memstream worker`` runs it; ``faust -A memstream.worker:app worker`` builds one from the environment on
first access (nothing happens at import time).
"""

from __future__ import annotations

import faust

from memstream.clients import Clients as AppClients
from memstream.clients import build_clients, open_working_memory
from memstream.settings import Settings
from streams.clients import Clients
from streams.faust_app import Wiring, create_app
from streams.kafka_log import KafkaLog, brokers_of
from streams.stages.audit import AuditStage
from streams.worker import WorkerConfig
from streams.working_memory import WorkingMemory

__all__ = ["build_app", "wiring"]


def wiring(settings: Settings, cfg: WorkerConfig | None = None) -> Wiring:
    """What a worker for ``settings`` (a ``kafka://`` log URL) is built from."""
    cfg = cfg or WorkerConfig()
    brokers = brokers_of(settings.resolved_log_url)

    async def open_clients() -> Clients:
        kafka_log = await KafkaLog(brokers, refresh_s=cfg.ledger_refresh_s).open()
        return await build_clients(settings, log=kafka_log)  # the graph store and embedder check included

    async def open_wm() -> WorkingMemory:
        return await open_working_memory(settings.working_memory_url)

    async def audit(clients: Clients) -> tuple[int, int]:
        from memstream.resegment import apply_audit
        from streams.segmentation_ledger import open_ledger

        if not isinstance(clients, AppClients):  # opened by open_clients above: it is
            raise TypeError(f"expected the application's clients, got {type(clients).__name__}")
        if settings.audit.audit_apply:  # repairs as segmentation versions, appended to Kafka
            ledger = await open_ledger(settings.data_dir)
            try:
                reports, applied = await apply_audit(clients, ledger)
            finally:
                await ledger.close()
            return len(reports), len(applied)
        reports, _ = await AuditStage(clients, settings.audit).run()
        return len(reports), 0

    return Wiring(
        brokers=brokers,
        pipeline=settings.pipeline,
        worker=cfg,
        open_clients=open_clients,
        open_working_memory=open_wm,
        audit=audit,
        audit_interval_s=settings.audit.audit_interval_s,
    )


def build_app(settings: Settings, cfg: WorkerConfig | None = None) -> faust.App:
    return create_app(wiring(settings, cfg))


_default: dict[str, faust.App] = {}


def __getattr__(name: str) -> faust.App:
    """``faust -A memstream.worker:app worker``: the app built from the environment, on first access."""
    if name != "app":
        raise AttributeError(name)
    if "app" not in _default:
        _default["app"] = build_app(Settings())
    return _default["app"]
