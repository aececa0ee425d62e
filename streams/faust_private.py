"""Every use of Faust's and aiokafka's private internals, in one place, for the versions in :data:`SUPPORTED`.

Neither library offers these through a public API:

- a batch taker with room for more batches behind the one being processed (:mod:`streams.faust_take`) works
  the way ``Stream.take_events`` does: it registers its generator with the stream (closed when the stream
  stops), enables the passive reader of the stream's channel and adds, then removes, a processor;
- the broker's long poll of an empty fetch: Faust fixes aiokafka's ``fetch_max_wait_ms`` (a long wait) when it
  builds the worker's consumer, and a broker that holds a fetch to its end (Tansu) adds that long to every hop
  of the pipeline whenever a topic runs dry; :class:`BoundedFetchApp` builds the consumer with the worker
  config's ``fetch_wait_ms`` instead;
- the partitions of a topic as the producer knows them (exact end offsets: :func:`streams.kafka_log.send_all`),
  from the aiokafka producer inside Faust's.

``tests/unit/streams/test_faust_private.py`` checks that the installed versions are the supported ones and that
each internal used here is still there, so an upgrade fails there first, by name, rather than in a worker.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import faust
from faust.transport.drivers import aiokafka as faust_kafka

__all__ = ["SUPPORTED", "BoundedFetchApp", "drop_processor", "partitions_for", "read_passively", "track_generator"]

# distribution -> the version prefixes these internals were checked against
SUPPORTED: dict[str, tuple[str, ...]] = {
    "faust-streaming": ("0.15.",),
    "aiokafka": ("0.14.",),
    "mode-streaming": ("0.7.",),
}


def track_generator(stream: Any, agen: AsyncIterator[Any]) -> None:
    """Register ``agen`` with ``stream`` as ``take_events`` does: the stream closes it when it stops."""
    stream._active_agens.add(agen)


def read_passively(stream: Any) -> None:
    """Feed the stream's processors from its channel without an ``async for`` over the stream itself."""
    stream._enable_passive(aiter(stream.channel))


def drop_processor(stream: Any, processor: Callable[..., Any]) -> None:
    """Remove a processor added with the public ``add_processor`` (Faust has no public way back)."""
    stream._processors.remove(processor)


async def partitions_for(producer: Any, topic: str) -> set[int]:
    """The partitions of ``topic`` as the aiokafka producer inside Faust's knows them (waits for metadata)."""
    return await producer._ensure_producer().partitions_for(topic)


class _ConsumerThread(faust_kafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: faust_kafka.Transport) -> Any:
        consumer = super()._create_worker_consumer(transport)
        consumer._fetch_max_wait_ms = self.app.memstream_fetch_wait_ms  # read when its fetcher starts
        return consumer


class _Consumer(faust_kafka.Consumer):
    def _new_consumer_thread(self) -> _ConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _Transport(faust_kafka.Transport):
    Consumer = _Consumer


class BoundedFetchApp(faust.App):
    """A Faust app whose worker consumer asks the broker to hold an empty fetch at most
    ``memstream_fetch_wait_ms`` (set it before the app starts)."""

    memstream_fetch_wait_ms: int

    def _new_transport(self) -> _Transport:
        return _Transport(self.conf.broker_consumer, self)


def internals() -> list[tuple[str, object, str]]:
    """(what, owner, attribute) of every class-level internal used here, for the version check (the instance
    attributes, a stream's ``_active_agens`` and ``_processors`` and a consumer's ``_fetch_max_wait_ms``, are
    checked on instances)."""
    return [
        ("faust App._new_transport", faust.App, "_new_transport"),
        ("faust Consumer._new_consumer_thread", faust_kafka.Consumer, "_new_consumer_thread"),
        ("faust AIOKafkaConsumerThread._create_worker_consumer", faust_kafka.AIOKafkaConsumerThread,
         "_create_worker_consumer"),
        ("faust Producer._ensure_producer", faust_kafka.Producer, "_ensure_producer"),
        ("faust Stream._enable_passive", faust.Stream, "_enable_passive"),
    ]  # fmt: skip
