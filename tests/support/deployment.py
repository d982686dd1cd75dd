"""A Kafka deployment of a test: its topics and its `neardup worker` processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from neardup.core import PreparedDoc, Settings
from neardup.core.prepared_codec import decode_batch
from neardup.streams.detection.event_clusters import clusters_from_events
from neardup.streams.running.lifetime import tied_command

from tests.streams.service.conftest import call
from tests.support.kafka_clients import close

__all__ = [
    "PARTITIONS",
    "SESSION_TIMEOUT",
    "SETTLE_SECONDS",
    "Deployment",
    "metric",
    "service_url",
    "until",
]

T = TypeVar("T")

PARTITIONS = 4
#: how long a run may take to reach the expected clusters, the workers' start included
SETTLE_SECONDS = 90.0
#: how long the clusters may stand still, once there are some, before a wait gives up
QUIET_SECONDS = 40.0
#: the workers' --session-timeout, Kafka's smallest by default (group.min.session.timeout.ms)
#: rather than the workers' 10 s: the group hands a killed worker's partitions on after it,
#: and Tansu holds every JoinGroup for half of it, so it sets the pace of every rebalance
SESSION_TIMEOUT = 6.0
#: the pause between two looks at a topic while waiting for something to be there
POLL_SECONDS = 0.5


class Deployment:
    """Topic names of one test (a fresh app id, so tests never share topics or groups)."""

    def __init__(self, broker: str, root: Path, max_record_bytes: int = 64 * 1024) -> None:
        self.broker = broker
        self.max_record_bytes = max_record_bytes
        self.root = root
        self.app_id = f"nd-{uuid.uuid4().hex[:8]}"
        self.pages = f"{self.app_id}.pages"
        self.events = f"{self.app_id}.events"
        self.dead_letters = f"{self.app_id}.dead-letter"
        self.workers: list[subprocess.Popen[bytes]] = []
        self._logs: dict[int, tuple[Path, int]] = {}  # a worker's log, where its part starts

    def start_worker(self, name: str, *extra: str) -> subprocess.Popen[bytes]:
        """A `neardup worker` process with its own state directory (``extra``: more options)."""
        state = self.root / name
        path = self.root / f"{name}.log"
        log = open(path, "ab")  # noqa: SIM115 (closed with the process)
        start = log.tell()
        process = subprocess.Popen(
            tied_command(
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
                    str(self.max_record_bytes),
                    "--batch-size",
                    "32",
                    "--loglevel",
                    "info",
                    "--session-timeout",
                    str(SESSION_TIMEOUT),
                    *extra,
                ]
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
        )
        log.close()
        self.workers.append(process)
        self._logs[process.pid] = (path, start)
        return process

    def publish(self, lines: list[bytes]) -> None:
        producer = KafkaProducer(bootstrap_servers=self.broker, linger_ms=5)
        try:
            for line in lines:
                try:  # a page's url, or an item's id: one partition for each, in order
                    record = json.loads(line)
                    key = str(record.get("url") or record.get("id") or "").encode()
                except (ValueError, AttributeError):
                    key = b""
                producer.send(self.pages, key=key or None, value=line)
            producer.flush(timeout=30)
        finally:
            close(producer)

    def read_now(self, topic: str) -> list[bytes]:
        """The values ``topic`` holds now: each partition read up to the high watermark its
        fetch answered with (what ``read`` gets, without waiting out an idle time; Tansu's
        ListOffsets is off, see conftest.py, its fetches are not). For the polls of a wait."""
        consumer = KafkaConsumer(
            bootstrap_servers=self.broker,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            fetch_max_wait_ms=100,
        )
        try:
            partitions = consumer.partitions_for_topic(topic)
            if not partitions:
                return []
            assigned = [TopicPartition(topic, p) for p in sorted(partitions)]
            consumer.assign(assigned)
            values: list[bytes] = []
            deadline = time.monotonic() + SETTLE_SECONDS
            while time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=200).values():
                    values += [record.value for record in records]
                ends = [consumer.highwater(tp) for tp in assigned]
                if all(
                    end is not None and consumer.position(tp) >= end
                    for tp, end in zip(assigned, ends, strict=True)
                ):
                    return values
            raise AssertionError(f"could not read {topic} to its end in {SETTLE_SECONDS} s")
        finally:
            close(consumer)

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
            close(consumer)

    def prepared(self, settings: Settings | None = None, now: bool = False) -> list[PreparedDoc]:
        """The documents of the prepared log so far, in its order: the order detection took
        them in (``now``: as ``read_now`` reads, for the polls of a wait)."""
        if now:
            values = self.read_now(f"{self.app_id}-prepared")
            return [d for value in values for d in decode_batch(value, settings or Settings())]
        consumer = KafkaConsumer(
            f"{self.app_id}-prepared",
            bootstrap_servers=self.broker,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=3000,
        )
        try:
            return [d for m in consumer for d in decode_batch(m.value, settings or Settings())]
        finally:
            close(consumer)

    def clusters(self, now: bool = False) -> set[frozenset[str]]:
        """The clusters the events tell (``now``: as ``read_now`` reads)."""
        if now:
            events = [json.loads(value) for value in self.read_now(self.events)]
        else:
            events = self.read(self.events)
        return {frozenset(line["members"]) for line in clusters_from_events(events)}  # type: ignore[arg-type]

    def wait_for(self, expected: set[frozenset[str]]) -> set[frozenset[str]]:
        """The clusters the events tell, once they are ``expected``, or once they have
        stood still for ``QUIET_SECONDS`` (a run that ends elsewhere fails without waiting
        out ``SETTLE_SECONDS``), or at ``SETTLE_SECONDS``."""
        deadline = time.monotonic() + SETTLE_SECONDS
        found: set[frozenset[str]] = set()
        since = time.monotonic()
        while time.monotonic() < deadline:
            self.check_alive()
            now = self.clusters(now=True)
            if now == expected:
                return now
            if now != found:
                found, since = now, time.monotonic()
            elif found and time.monotonic() - since > QUIET_SECONDS:
                return found
            time.sleep(POLL_SECONDS)
        return found

    def wait_for_events(self) -> None:
        """Until the events topic holds something: the workers are at work."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while not self.read_now(self.events) and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)

    def wait_joined(self, process: subprocess.Popen[bytes]) -> None:
        """Until ``process`` is a member of its group: it got its first assignment."""

        def synced() -> bool | None:
            self.check_alive()
            path, offset = self._logs[process.pid]
            return b"Successfully synced group" in path.read_bytes()[offset:] or None

        until("the worker joining its group", synced)

    @staticmethod
    def kill(process: subprocess.Popen[bytes]) -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def check_alive(self) -> None:
        for process in self.workers:
            if process.poll() is not None and process.returncode not in (0, -signal.SIGKILL):
                raise AssertionError(
                    f"a worker exited with {process.returncode}:\n{self._failure(process)}"
                )

    def _failure(self, process: subprocess.Popen[bytes]) -> str:
        """The first traceback in the failed worker's log (the cause; later ones are the
        shutdown's), and the log's end."""
        path, offset = self._logs[process.pid]
        log = path.read_bytes()[offset:].decode(errors="replace")
        start = log.find("Traceback (most recent call last)")
        cause = log[start : start + 6000] if start >= 0 else ""
        return f"{cause}\n[...]\n{log[-3000:]}"

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


def until(what: str, probe: Callable[[], T | None], seconds: float = SETTLE_SECONDS) -> T:
    """``probe()`` once it is not None, tried every half second."""
    deadline = time.monotonic() + seconds
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def service_url(log: Path) -> str | None:
    """The service URL a worker announced in its log, if it has."""
    if not log.exists():
        return None
    found = re.search(r"neardup: serving (http://\S+)", log.read_text(errors="replace"))
    return found.group(1) if found else None


def metric(base: str, name: str) -> float | None:
    """A sample's value in a service's /metrics (the first of the name)."""
    answer = call(base + "/metrics")
    for line in answer.body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None
