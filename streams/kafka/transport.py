"""Faust's aiokafka transport, with a shorter fetch wait.

Faust builds its consumer with ``fetch_max_wait_ms=1500`` and no setting to change it. A
Kafka broker answers a waiting fetch as soon as data arrives, so there the wait costs
nothing; Tansu (the test broker) holds a fetch for a good part of the wait whatever arrives,
which adds that much to every hop between a page and its event. 100 ms costs a Kafka broker
a few empty fetches a second when idle.

The transport is registered under ``SCHEME`` in Faust's transport registry (its public
``aliases``), and ``build_app`` names it in the broker URL.
"""

from __future__ import annotations

from typing import Any

from faust.transport import drivers
from faust.transport.drivers import aiokafka as faust_aiokafka

__all__ = ["FETCH_MAX_WAIT_MS", "SCHEME", "Transport", "register"]

SCHEME = "neardup-kafka"
FETCH_MAX_WAIT_MS = 100


class _ConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # aiokafka keeps the constructor's value here until start() builds its fetcher
        # (tests/streams/kafka/test_config.py checks the attribute still exists)
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        return consumer


class _Consumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> _ConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class Transport(faust_aiokafka.Transport):
    Consumer = _Consumer


def register() -> None:
    """Make ``neardup-kafka://host:port`` a Faust broker URL (idempotent)."""
    drivers.TRANSPORTS.aliases[SCHEME] = f"{__name__}:Transport"
