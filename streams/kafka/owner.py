"""Which worker holds the detector: advertised on a one-partition topic, read by the others.

The worker that opens the detector's state sends its service URL (``advertisement``) to the
service topic; a worker asked something only the state can answer reads the last record
there (``OwnerLocator``) and redirects the request. The record is small and the topic is
compacted, so reading it is one fetch of the partition's last message.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

__all__ = ["OwnerLocator", "advertisement"]

#: the key of the record naming the detector's owner
OWNER_KEY = b"detector"


def advertisement(url: str) -> bytes:
    return json.dumps({"url": url, "since": time.time()}).encode()


class OwnerLocator:
    """The service URL of the worker holding the detector, as last advertised; read at most
    every ``every`` seconds (requests in between get the same answer)."""

    def __init__(self, broker: str, topic: str, every: float = 2.0) -> None:
        self._broker = broker
        self._topic = topic
        self._every = every
        self._lock = threading.Lock()
        self._read_at = float("-inf")
        self._url: str | None = None

    def __call__(self) -> str | None:
        with self._lock:
            if time.monotonic() - self._read_at >= self._every:
                self._url = self._read()
                self._read_at = time.monotonic()
            return self._url

    def _read(self) -> str | None:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError

        partition = TopicPartition(self._topic, 0)
        try:
            consumer: Any = KafkaConsumer(
                bootstrap_servers=self._broker,
                client_id="neardup-owner-locator",
                enable_auto_commit=False,
                request_timeout_ms=5000,
                consumer_timeout_ms=2000,
            )
        except KafkaError:
            return None
        try:
            consumer.assign([partition])
            end = consumer.end_offsets([partition])[partition]
            if not end:
                return None
            consumer.seek(partition, end - 1)
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    for record in records:
                        if record.key == OWNER_KEY and record.value:
                            url = json.loads(record.value).get("url")
                            return str(url) if url else None
            return None
        except (KafkaError, ValueError):
            return None
        finally:
            consumer.close()
