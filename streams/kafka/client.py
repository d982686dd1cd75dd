"""The kafka-python side of Kafka mode: the crawler's producer and the events reader.

``publish`` sends pages to the pages topic, keyed by url. A valid page travels as the input
contract (``url``, ``content``, ``fetched_at``, ``content_type``), normalised. A JSON Lines
line that fails validation is **sent unchanged** (keyed by its url when it has one): the
crawler publishes what it has, and the worker — the one judge of records in Kafka mode —
puts it in its dead-letter topic with the topic, partition and offset, so refused records are
found where the operators look for them. Only what cannot travel is refused here and
returned to the caller: oversized lines and WARC records that are not text or too large
(there is no Kafka message to send for them).

``follow_events`` reads the events topic without a consumer group: it assigns itself every
partition, so it never moves a deployment's committed offsets and needs no group
coordinator (kafka-python consumer groups do not get an assignment from Tansu 0.6 at all).
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from neardup.core import DEFAULT_MAX_RECORD_BYTES, BrokerError, Page

from ..detection.event_clusters import clusters_from_events
from ..running.inputs import DeadLetter, iter_lines, iter_records
from .topics import EVENTS_TOPIC

__all__ = [
    "PublishSummary",
    "clusters_from_broker",
    "clusters_from_events",
    "follow_events",
    "page_message",
    "publish",
]


#: how long to wait for the broker to answer the first request, and for the last sends
CONNECT_SECONDS = 10.0
FLUSH_SECONDS = 60.0
#: room for the JSON envelope around a page of ``max_record_bytes``
_ENVELOPE_BYTES = 64 * 1024

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class PublishSummary:
    """What ``publish`` did: pages sent, invalid JSON Lines lines sent raw (for the worker's
    dead-letter topic), and the records that could not be sent at all."""

    pages: int = 0
    raw: int = 0
    refused: list[DeadLetter] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"pages": self.pages, "raw": self.raw, "refused": len(self.refused)}


def page_message(page: Page) -> tuple[bytes, bytes]:
    """(key, value) of a page on the pages topic: the url, and the input contract as JSON."""
    value: dict[str, str] = {"url": page.url, "content": page.content}
    if page.fetched_at:
        value["fetched_at"] = page.fetched_at
    if page.content_type:
        value["content_type"] = page.content_type
    return page.url.encode(), json.dumps(value, ensure_ascii=False).encode()


def _raw_key(raw: bytes, field: str = "url") -> bytes | None:
    """The key of a raw record: its ``field`` (a page's url, an item's id), if it has one."""
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    value = record.get(field) if isinstance(record, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return value.encode("utf-8", "replace") if isinstance(value, str) and value else None


def _as_it_is(line: bytes, max_bytes: int) -> bytes:
    return line


def _unreachable(broker: str, error: Exception) -> BrokerError:
    return BrokerError(
        f"the Kafka broker {broker} did not answer within {CONNECT_SECONDS:g} s ({error})"
    )


def _check_reachable(broker: str) -> None:
    """A plain TCP connect first: kafka-python clients whose bootstrap fails leak their
    sockets, and this gives the clearer error in the common case (nothing listening)."""
    for server in broker.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            with socket.create_connection((host or "localhost", int(port)), CONNECT_SECONDS):
                return
        except (OSError, ValueError) as error:
            last: Exception = error
    raise _unreachable(broker, last)


def publish(
    broker: str,
    topic: str,
    inputs: Sequence[str],
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    key: str | None = None,
) -> PublishSummary:
    """Send every record of ``inputs`` (JSON Lines files, ``-``, WARC files) to ``topic``;
    returns once the broker acknowledged all of them (BrokerError otherwise). ``key``: send
    every JSON Lines line as it is, keyed by this field (item mode's records by their id:
    an item's versions and its tombstone then keep their order), unvalidated."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    _check_reachable(broker)
    try:
        producer = KafkaProducer(
            bootstrap_servers=broker,
            bootstrap_timeout_ms=int(CONNECT_SECONDS * 1000),
            max_block_ms=int(CONNECT_SECONDS * 1000),
            max_request_size=max_record_bytes + _ENVELOPE_BYTES,
            acks="all",
            linger_ms=5,
        )
    except KafkaError as error:
        raise _unreachable(broker, error) from error
    summary = PublishSummary()
    failures: list[BaseException] = []
    try:
        for name in inputs:
            records = (
                iter_records(name, max_record_bytes)
                if key is None
                else iter_lines(name, _as_it_is, max_record_bytes)
            )
            for record in records:
                message_key: bytes | None
                if isinstance(record, Page):
                    message_key, value = page_message(record)
                    summary.pages += 1
                elif isinstance(record, bytes):
                    message_key, value = _raw_key(record, key or "url"), record.rstrip(b"\r\n")
                    summary.raw += 1
                elif record.raw is not None:
                    message_key, value = _raw_key(record.raw), record.raw.rstrip(b"\r\n")
                    summary.raw += 1
                else:
                    summary.refused.append(record)
                    continue
                future = producer.send(topic, key=message_key, value=value)
                future.add_errback(failures.append)
                if failures:
                    break
        producer.flush(timeout=FLUSH_SECONDS)
    except KafkaError as error:
        raise BrokerError(f"publishing to {topic} on {broker} failed: {error}") from error
    finally:
        producer.close(timeout=CONNECT_SECONDS)
    if failures:
        raise BrokerError(f"the broker {broker} refused a message for {topic}: {failures[0]}")
    return summary


def follow_events(
    broker: str,
    topic: str = EVENTS_TOPIC,
    from_beginning: bool = False,
    idle_timeout: float | None = None,
) -> Iterator[dict[str, Any]]:
    """Event objects (JSON values) of ``topic``, from the beginning or from now on, until no
    message arrived for ``idle_timeout`` seconds (``None``: forever).

    Within a partition events come in order; across partitions they interleave."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    _check_reachable(broker)
    try:
        consumer = KafkaConsumer(
            bootstrap_servers=broker,
            bootstrap_timeout_ms=int(CONNECT_SECONDS * 1000),
            request_timeout_ms=int(CONNECT_SECONDS * 1000) + 1000,
            enable_auto_commit=False,
            allow_auto_create_topics=False,
            group_id=None,
        )
    except KafkaError as error:
        raise _unreachable(broker, error) from error
    try:
        partitions = _partitions(consumer, topic)
        assigned = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(assigned)
        if from_beginning:
            consumer.seek_to_beginning(*assigned)
        else:
            consumer.seek_to_end(*assigned)
        last = time.monotonic()
        while idle_timeout is None or time.monotonic() - last < idle_timeout:
            wait = 1.0 if idle_timeout is None else idle_timeout - (time.monotonic() - last)
            batches = consumer.poll(timeout_ms=max(1, int(min(wait, 1.0) * 1000)))
            for part, messages in sorted(batches.items(), key=lambda item: item[0].partition):
                for message in messages:
                    last = time.monotonic()
                    event = _decode(message.value)
                    if event is None:
                        _log.warning(
                            "%s partition %d offset %d is not a JSON object: skipped",
                            topic,
                            part.partition,
                            message.offset,
                        )
                        continue
                    yield event
    except KafkaError as error:
        raise BrokerError(f"reading {topic} from {broker} failed: {error}") from error
    finally:
        consumer.close()


def _partitions(consumer: Any, topic: str) -> set[int]:
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        partitions: set[int] | None = consumer.partitions_for_topic(topic)
        if partitions:
            return partitions
        if time.monotonic() > deadline:
            raise BrokerError(
                f"the topic {topic} does not exist (a worker creates it on its first start)"
            )
        time.sleep(0.2)


def _decode(value: bytes | None) -> dict[str, Any] | None:
    try:
        event = json.loads(value) if value is not None else None
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def clusters_from_broker(
    broker: str, topic: str = EVENTS_TOPIC, idle_timeout: float = 3.0
) -> list[dict[str, Any]]:
    """The current clusters, rebuilt from the whole events topic (read until it has been
    idle for ``idle_timeout`` seconds)."""
    return clusters_from_events(follow_events(broker, topic, True, idle_timeout))
