"""A worker's configuration fails fast, reads the environment, and its state directory refuses
settings or partition counts other than those it was built with (no broker needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from neardup.core import IncompatibleStateError, NeardupError, Settings
from neardup.streams.kafka.config import WorkerConfig
from neardup.streams.kafka.topology import internal_topics
from neardup.streams.kafka.worker import check_settings


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"broker": "localhost"}, "HOST:PORT"),
        ({"partitions": 0}, "partitions=0"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"pages_topic": "a b"}, "'a b'"),
        ({"prepare": "cluster"}, "prepare='cluster'"),
        ({"session_timeout": 1.0}, "session_timeout=1.0"),
        ({"session_timeout": 120.0}, "session_timeout=120.0"),
    ],
)
def test_bad_configuration_is_refused_with_the_value(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    fields: dict[str, object] = {"broker": "localhost:9092", "state_dir": tmp_path} | changes
    with pytest.raises(NeardupError, match=message):
        WorkerConfig(**fields)  # type: ignore[arg-type]


def test_state_directory_refuses_other_settings(tmp_path: Path) -> None:
    first = WorkerConfig("localhost:9092", tmp_path, partitions=4)
    check_settings(first)
    check_settings(first)  # the same again is fine
    with pytest.raises(IncompatibleStateError, match=r"threshold: stored 0\.5, requested 0\.7"):
        check_settings(WorkerConfig("localhost:9092", tmp_path, settings=Settings(threshold=0.7)))
    # the detector's state does not depend on the partition count (the topics do: see
    # ensure_topics), so another count is no reason to refuse it
    check_settings(WorkerConfig("localhost:9092", tmp_path, partitions=2))


def test_detection_sees_one_order_and_the_pages_spread_over_the_partitions(
    tmp_path: Path,
) -> None:
    config = WorkerConfig("localhost:9092", tmp_path, partitions=3, app_id="x")
    topics = internal_topics(config)
    assert config.prepared_topic == "x-prepared" and topics["x-prepared"] == 1
    assert topics["neardup.pages"] == topics["neardup.events"] == 3
    assert config.detector_dir == tmp_path / "detector"


def test_the_session_timeout_reaches_the_consumer_group(tmp_path: Path) -> None:
    from neardup.streams.kafka.topology import build_app

    app = build_app(WorkerConfig("localhost:9092", tmp_path, session_timeout=6.0))
    assert app.conf.broker_session_timeout == 6.0
    default = build_app(WorkerConfig("localhost:9092", tmp_path / "default"))
    assert default.conf.broker_session_timeout == 10.0


def test_the_short_fetch_wait_reaches_the_consumer() -> None:
    """faust_transport sets aiokafka's private ``_fetch_max_wait_ms``: if an aiokafka release
    renames it, this fails instead of the setting silently doing nothing."""
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from faust.transport import drivers
    from neardup.streams.kafka import transport as faust_transport

    async def wait_kept() -> int:  # aiokafka wants a running loop
        consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9", fetch_max_wait_ms=1234)
        try:
            return int(consumer._fetch_max_wait_ms)
        finally:
            await consumer.stop()

    assert asyncio.run(wait_kept()) == 1234
    faust_transport.register()
    found = drivers.by_url(f"{faust_transport.SCHEME}://127.0.0.1:9092")
    assert found is faust_transport.Transport
