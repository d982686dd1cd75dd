"""The kafka-python client side against a real broker: `neardup publish` puts the crawler's
records on the pages topic as the worker expects them, and `neardup events` / `neardup
clusters --broker` read back, through Kafka, exactly what the embedded run found."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from neardup.core import page_from_json
from neardup.streams.cli import main
from neardup.streams.kafka import client as kafka_client

from tests.helpers import SAMPLE
from tests.support.kafka_clients import close

pytestmark = pytest.mark.kafka


def _read_all(broker: str, topic: str) -> list[tuple[bytes | None, bytes]]:
    """Every message of ``topic`` (no consumer group), partition by partition."""
    consumer = KafkaConsumer(
        bootstrap_servers=broker, enable_auto_commit=False, consumer_timeout_ms=2000
    )
    try:
        partitions = sorted(consumer.partitions_for_topic(topic))
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        consumer.seek_to_beginning()
        return [(message.key, message.value) for message in consumer]
    finally:
        close(consumer)


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_publish_sends_pages_keyed_by_url_and_invalid_lines_unchanged(
    broker: str, new_topic: Callable[..., str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = new_topic(partitions=3, prefix="pages")
    oversized = tmp_path / "big.jsonl"
    oversized.write_text(json.dumps({"url": "https://big.example/", "content": "w " * 40_000}))
    assert main(
        ["publish", "--broker", broker, "--topic", topic, "--max-record-bytes", "65536",
         str(SAMPLE), str(oversized)]
    ) == 0  # fmt: skip
    out, err = capsys.readouterr()
    lines = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    valid = []
    invalid = []
    for line in lines:
        try:
            valid.append(page_from_json(line))
        except ValueError:
            invalid.append(line)
    assert len(invalid) == 3
    assert json.loads(out) == {"topic": topic, "pages": len(valid), "raw": 3, "refused": 1}
    assert [letter["reason"] for letter in _json_lines(err)] == ["too_large"]

    messages = _read_all(broker, topic)
    assert len(messages) == len(lines)  # the oversized record was not sent
    assert len({message[0] for message in messages}) > 1  # spread over the partitions by key
    sent_pages = []
    sent_raw = []
    for key, value in messages:
        try:
            page = page_from_json(value)
        except ValueError:
            sent_raw.append(value)
            continue
        assert key == page.url.encode()
        sent_pages.append(page)
    assert sorted(sent_pages, key=repr) == sorted(valid, key=repr)
    assert sorted(sent_raw) == sorted(invalid)  # byte for byte, for the worker's dead letters
    keys = {value: key for key, value in messages}
    assert keys[b"this line is not JSON"] is None
    assert keys[next(raw for raw in invalid if b"no-content" in raw)] == (
        b"https://bad.example/no-content"
    )


def test_events_and_clusters_through_kafka_equal_the_embedded_run(
    broker: str, new_topic: Callable[..., str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state, events_file = tmp_path / "state", tmp_path / "events.jsonl"
    assert main(["run", "--quiet", "--state", str(state), "--events", str(events_file),
                 str(SAMPLE)]) == 0  # fmt: skip
    assert main(["clusters", "--state", str(state)]) == 0
    expected = _json_lines(capsys.readouterr().out)
    events = _json_lines(events_file.read_text())
    assert len(expected) > 10

    # as the topology writes them: keyed by cluster id over several partitions, and repeated
    topic = new_topic(partitions=3, prefix="events")
    producer = KafkaProducer(bootstrap_servers=broker, linger_ms=5)
    try:
        for event in [*events, *events[: len(events) // 2]]:
            producer.send(
                topic, key=str(event["cluster"]).encode(), value=json.dumps(event).encode()
            )
        producer.flush(timeout=10)
    finally:
        close(producer)

    assert main(["events", "--broker", broker, "--topic", topic, "--from-beginning",
                 "--idle-timeout", "1.5"]) == 0  # fmt: skip
    followed = _json_lines(capsys.readouterr().out)
    assert len(followed) == len(events) + len(events) // 2
    assert {json.dumps(e, sort_keys=True) for e in followed} == {
        json.dumps(e, sort_keys=True) for e in events
    }

    assert main(["clusters", "--broker", broker, "--topic", topic, "--idle-timeout", "1.5"]) == 0
    assert _json_lines(capsys.readouterr().out) == expected


def test_events_of_a_missing_topic_is_a_clear_error(
    broker: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(kafka_client, "CONNECT_SECONDS", 1.0)
    monkeypatch.setenv("NEARDUP_BROKER", broker)
    assert main(["events", "--topic", "no-such-topic-here", "--idle-timeout", "1"]) == 2
    assert "the topic no-such-topic-here does not exist" in capsys.readouterr().err
