"""The Faust topology against a real broker: `neardup worker` processes must find exactly
the clusters of the embedded run, with one worker or two, through a SIGKILL and a restart,
and send malformed messages to the dead-letter topic while the good ones around them pass.

Workers are real `neardup worker` processes; the crawler side is a kafka-python producer.
Clusters are followed from the events topic alone, as a downstream consumer would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from neardup.core import Page, Settings, page_from_json
from neardup.state import State
from neardup.streams import Detector
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.kafka.prepared_codec import decode_batch

from tests.helpers import SAMPLE, partition

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 4
MAX_RECORD_BYTES = 64 * 1024
#: how long a run may take to reach the expected clusters (workers start in ~8 s)
SETTLE_SECONDS = 90.0


def _sample_lines() -> list[bytes]:
    lines = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    oversized = json.dumps(
        {"url": "https://big.example/", "content": "word " * (MAX_RECORD_BYTES // 4)}
    ).encode()
    return [*lines, oversized]


def _embedded_partition(lines: list[bytes]) -> set[frozenset[str]]:
    pages: list[Page] = []
    for line in lines:
        try:
            pages.append(page_from_json(line, MAX_RECORD_BYTES))
        except ValueError:
            continue
    with State.open(None) as state:
        Detector(state).process(pages)
        return partition(state)


class Deployment:
    """Topic names of one test (a fresh app id, so tests never share topics or groups)."""

    def __init__(self, broker: str, root: Path) -> None:
        self.broker = broker
        self.root = root
        self.app_id = f"nd-{uuid.uuid4().hex[:8]}"
        self.pages = f"{self.app_id}.pages"
        self.events = f"{self.app_id}.events"
        self.dead_letters = f"{self.app_id}.dead-letter"
        self.workers: list[subprocess.Popen[bytes]] = []

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        state = self.root / name
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 (closed with the process)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "neardup.streams",
                "worker",
                "--broker",
                self.broker,
                "--state",
                str(state),
                "--partitions",
                str(PARTITIONS),
                "--app-id",
                self.app_id,
                "--pages-topic",
                self.pages,
                "--events-topic",
                self.events,
                "--dead-letter-topic",
                self.dead_letters,
                "--max-record-bytes",
                str(MAX_RECORD_BYTES),
                "--batch-size",
                "32",
                "--loglevel",
                "info",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
        )
        log.close()
        self.workers.append(process)
        return process

    def publish(self, lines: list[bytes]) -> None:
        producer = KafkaProducer(bootstrap_servers=self.broker, linger_ms=5)
        try:
            for line in lines:
                try:
                    key = str(json.loads(line).get("url", "")).encode()
                except (ValueError, AttributeError):
                    key = b""
                producer.send(self.pages, key=key or None, value=line)
            producer.flush(timeout=30)
        finally:
            producer.close()

    def read(self, topic: str, idle_ms: int = 3000) -> list[dict[str, object]]:
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=self.broker,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=idle_ms,
        )
        try:
            return [json.loads(message.value) for message in consumer]
        finally:
            consumer.close()

    def clusters(self) -> set[frozenset[str]]:
        events = self.read(self.events)
        return {frozenset(line["members"]) for line in clusters_from_events(events)}  # type: ignore[arg-type]

    def wait_for(self, expected: set[frozenset[str]]) -> set[frozenset[str]]:
        deadline = time.monotonic() + SETTLE_SECONDS
        found: set[frozenset[str]] = set()
        while time.monotonic() < deadline:
            self.check_alive()
            found = self.clusters()
            if found == expected:
                return found
            time.sleep(2)
        return found

    def wait_for_events(self) -> None:
        """Until the events topic holds something: the workers are at work."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while not self.read(self.events, idle_ms=1000) and time.monotonic() < deadline:
            time.sleep(0.5)

    @staticmethod
    def kill(process: subprocess.Popen[bytes]) -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def check_alive(self) -> None:
        for process in self.workers:
            if process.poll() is not None and process.returncode not in (0, -signal.SIGKILL):
                logs = "\n".join(p.read_text()[-3000:] for p in self.root.glob("*.log"))
                raise AssertionError(f"a worker exited with {process.returncode}:\n{logs}")

    def stop(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@contextmanager
def deployment(broker: str, root: Path) -> Iterator[Deployment]:
    running = Deployment(broker, root)
    try:
        yield running
    finally:
        running.stop()


def _documents_seen(run: Deployment) -> int:
    """Distinct documents the topology prepared: those of its prepared topic."""
    consumer = KafkaConsumer(
        f"{run.app_id}-prepared",
        bootstrap_servers=run.broker,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=3000,
    )
    try:  # a message is a batch of prepared documents
        return len({doc.doc_id for m in consumer for doc in decode_batch(m.value, Settings())})
    finally:
        consumer.close()


def test_one_worker_finds_the_embedded_clusters_and_dead_letters_bad_messages(
    broker: str, tmp_path: Path
) -> None:
    lines = _sample_lines()
    expected = _embedded_partition(lines)
    with deployment(broker, tmp_path) as run:
        run.start_worker("w1")
        run.publish(lines)
        assert run.wait_for(expected) == expected
        dead = run.read(run.dead_letters)
        reasons = sorted(str(letter["reason"]) for letter in dead)
        assert reasons == ["binary_content", "missing_field", "not_json", "too_large"]
        assert all(letter["topic"] == run.pages and "offset" in letter for letter in dead)
        # nothing lost: every record is a document or a dead letter
        assert _documents_seen(run) + len(dead) == len(lines)


def test_two_workers_on_four_partitions_find_the_embedded_clusters(
    broker: str, tmp_path: Path
) -> None:
    lines = _sample_lines()
    expected = _embedded_partition(lines)
    with deployment(broker, tmp_path) as run:
        run.start_worker("w1")
        run.start_worker("w2")
        run.publish(lines)
        assert run.wait_for(expected) == expected


@pytest.mark.parametrize("replacement", ["same-state", "fresh-state", "second-worker"])
def test_a_worker_killed_mid_stream_is_replaced_without_changing_the_clusters(
    broker: str, tmp_path: Path, replacement: str
) -> None:
    """w1 is SIGKILLed once it has detected part of the input, and replaced: by itself on its
    state directory, by a worker with a new one, or by a second worker that joined before it
    died. A new detector state must first be rebuilt from the prepared topic: the clusters of
    the rest depend on what came before."""
    lines = _sample_lines()
    expected = _embedded_partition(lines)
    with deployment(broker, tmp_path) as run:
        first = run.start_worker("w1")
        third = len(lines) // 3
        run.publish(lines[:third])
        run.wait_for_events()  # kill it while it works, once it has produced something
        if replacement == "second-worker":
            run.start_worker("w2")
            time.sleep(8)  # w2 joins the group
            run.kill(first)
            run.publish(lines[third:])
        else:
            run.publish(lines[third : 2 * third])
            time.sleep(0.3)
            run.kill(first)
            run.start_worker({"same-state": "w1", "fresh-state": "w2"}[replacement])
            # w1 may have finished before it died: the replacement must have work of its own
            run.publish(lines[2 * third :])
        assert run.wait_for(expected) == expected
        dead = run.read(run.dead_letters)
        assert _documents_seen(run) + len({json.dumps(d, sort_keys=True) for d in dead}) == len(
            lines
        )
        if replacement != "same-state":
            assert "detector: caught up" in (tmp_path / "w2.log").read_text()
