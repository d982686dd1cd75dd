"""Detection capacity as it grows with workers: ``python -m bench.shard_scaling``.

    python -m bench.shard_scaling [--docs 30000] [--broker HOST:PORT]

The corpus is prepared here and published to the prepared log before any worker starts (a
backlog of prepared documents: the crawler, the prepare agents and the publisher are outside
the measured window; the broker, on the same two cores, is not). Then, each with a fresh
deployment, every worker pinned to a core of its own (``taskset``) and preparing nothing:

* ``one detector``: ``neardup worker`` without shards, one worker (the single detector);
* ``1 shard``: ``--shards 1``, one worker (shard and union stage on one core);
* ``2 shards``: ``--shards 2``, two workers (a shard each; the union stage on one of them).

Every run must end with the embedded run's clusters. Documents/s: for the single detector,
from its first event to the event that completes those clusters (Kafka record timestamps);
for shards, the slowest shard's, read off the findings each shard sends (``steady_rate``)
while all of them run. The workers do not start at once (the group assigns the second
worker its shard a little after the first), and measured from the first event the shard
that started first had a head start, which overstates the rate of two shards. The
first-event figure is reported too, and ``union_lag_seconds`` (from the last findings to
the completing event) says whether the union stage kept up. After the workers stop,
the bytes of each shard's state on disk. Then the union stage alone, in process, on a
RocksDB state: the findings of the whole corpus (made beforehand by one shard) applied in
runs of 8 messages, as the union agent applies them; edges/s counts the verified pairs and
exact twins it joins.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from kafka import KafkaProducer

from . import tansu
from .corpus import generate
from .cpu import cpu_seconds
from .kafka_run import Clusters, Run
from .report import emit

_MESSAGE_DOCS = 256
_CONFIGS = (("one detector", None, 1), ("1 shard", 1, 1), ("2 shards", 2, 2))


def _prepared(docs: int, seed: int) -> tuple[list[bytes], Clusters, list[Any]]:
    """The prepared messages of the corpus, the embedded run's clusters, and the documents."""
    from neardup.core import Page, Preparer, Settings
    from neardup.core.prepared_codec import encode_batch
    from neardup.state import State
    from neardup.streams import Detector
    from neardup.streams.running.reports import cluster_lines

    settings = Settings()
    preparer = Preparer(settings)
    pages = [Page(p.url, p.content, p.fetched_at, p.content_type) for p in generate(docs, seed)]
    prepared = [
        preparer.prepare(pages[at : at + _MESSAGE_DOCS])
        for at in range(0, len(pages), _MESSAGE_DOCS)
    ]
    with State.open(None, settings) as state:
        detector = Detector(state)
        for batch in prepared:
            detector.ingest(batch)
        expected = {frozenset(line["members"]) for line in cluster_lines(state)}  # type: ignore[arg-type]
    return [encode_batch(batch, settings) for batch in prepared], expected, prepared


class _Sharded(Run):
    """A deployment of ``workers`` workers with ``shards`` (None: the single detector)."""

    def __init__(self, broker: str, workdir: Path, shards: int | None, workers: int) -> None:
        from neardup.streams.kafka.config import WorkerConfig
        from neardup.streams.kafka.worker import ensure_topics

        app = f"scale-{uuid.uuid4().hex[:8]}"
        self.broker = broker
        self.workdir = workdir / app
        self.config = WorkerConfig(
            broker,
            self.workdir / "w0",
            pages_topic=f"{app}.pages",
            events_topic=f"{app}.events",
            dead_letter_topic=f"{app}.dead-letter",
            app_id=app,
            shards=shards,
        )
        ensure_topics(self.config)
        self.shards = shards
        self.workers = workers
        self.processes: list[subprocess.Popen[bytes]] = []
        self.worker = None

    def publish_prepared(self, messages: list[bytes]) -> None:
        producer = KafkaProducer(bootstrap_servers=self.broker, max_request_size=8 << 20)
        for message in messages:
            producer.send(self.config.prepared_topic, value=message, partition=0)
        producer.flush()
        producer.close()

    def start(self) -> None:
        cores = os.cpu_count() or 1
        for index in range(self.workers):
            config = self.config
            command = [
                "taskset", "-c", str(index % cores),
                sys.executable, "-m", "neardup.streams", "worker",
                "--broker", config.broker, "--state", str(self.workdir / f"w{index}"),
                "--partitions", str(config.partitions), "--app-id", config.app_id,
                "--pages-topic", config.pages_topic, "--events-topic", config.events_topic,
                "--dead-letter-topic", config.dead_letter_topic, "--prepare", "thread",
                *([] if self.shards is None else ["--shards", str(self.shards)]),
            ]  # fmt: skip
            self.processes.append(
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            )

    def check_alive(self) -> None:
        for process in self.processes:
            if process.poll() is not None:
                assert process.stderr is not None
                error = process.stderr.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"a worker exited with {process.returncode}: {error}")

    def cpu_seconds(self) -> list[float]:
        """CPU seconds (user + system) each worker has used so far."""
        return [cpu_seconds(process.pid) for process in self.processes]

    def first_event_at(self) -> float:
        return min(r.timestamp for r in self.read(self.config.events_topic)) / 1000

    def shard_timelines(self) -> dict[int, list[tuple[float, int]]]:
        """Per shard, (timestamp s, documents applied so far) at each findings record."""
        from neardup.streams.kafka.findings_codec import decode_findings
        from neardup.streams.kafka.union_log import MARKER_KEY

        lines: dict[int, list[tuple[float, int]]] = {}
        for record in sorted(self.read(self.config.findings_topic), key=lambda r: r.offset):
            if record.key == MARKER_KEY:
                continue
            message = decode_findings(record.value)
            line = lines.setdefault(message.shard, [])
            done = (line[-1][1] if line else 0) + len(message.findings.verdicts)
            line.append((record.timestamp / 1000, done))
        return lines

    def close(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def shard_bytes(self) -> list[int]:
        """Bytes on disk of each detection state: the shards', or the single detector's."""
        name = "detector" if self.shards is None else "shard-*"
        return [_du(path) for path in sorted(self.workdir.glob(f"w*/{name}"))]


def steady_rate(timelines: dict[int, list[tuple[float, int]]]) -> float:
    """Documents/s of the slowest shard while every shard runs: from the moment the last
    one sent its first findings to the moment the first one sent its last, each shard's
    progress read off its findings (interpolated between its transactions)."""
    start = max(line[0][0] for line in timelines.values())
    end = min(line[-1][0] for line in timelines.values())
    if end - start < 1.0:
        raise RuntimeError(f"the shards ran side by side for {end - start:.2f} s only")
    times = {shard: [t for t, _ in line] for shard, line in timelines.items()}
    docs = {shard: [float(d) for _, d in line] for shard, line in timelines.items()}
    return min(
        float(np.interp(end, times[s], docs[s]) - np.interp(start, times[s], docs[s]))
        / (end - start)
        for s in timelines
    )


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def union_alone(prepared: list[Any], workdir: Path) -> dict[str, float]:
    """The union stage in process, on findings made beforehand by one shard."""
    from neardup.core import Settings
    from neardup.core.prepared_codec import encode_batch
    from neardup.state import State
    from neardup.streams.detection.admission import Twin
    from neardup.streams.detection.shard import Ownership
    from neardup.streams.kafka.findings_codec import encode_findings
    from neardup.streams.kafka.shard_log import ShardLog
    from neardup.streams.kafka.union_log import UnionLog

    settings = Settings()
    findings: list[bytes] = []
    edges = 0
    with State.open(None, settings) as shard_state:
        shard = ShardLog(shard_state, Ownership(0, 1), "log")
        for offset, batch in enumerate(prepared):
            staged = shard.stage([(offset, encode_batch(batch, settings))])
            shard.commit(staged)
            for message in staged.messages:
                found = message.findings
                edges += sum(map(len, found.near))
                edges += sum(isinstance(v, Twin) for v in found.verdicts)
                findings.append(encode_findings(message))
    path = workdir / "union-alone"
    shutil.rmtree(path, ignore_errors=True)
    with State.open(path, settings) as state:
        union = UnionLog(state, 1, "log", "findings")
        started = time.perf_counter()
        for at in range(0, len(findings), 8):
            for position in range(at, min(at + 8, len(findings))):
                union.add(position, findings[position])
            staged = union.stage()
            if staged is not None:
                union.commit(staged)
        seconds = time.perf_counter() - started
    documents = sum(len(batch) for batch in prepared)
    return {
        "union_edges_per_second": round(edges / seconds, 1),
        "union_docs_per_second": round(documents / seconds, 1),
        "union_edges": edges,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shard_scaling", description=__doc__)
    parser.add_argument("--docs", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--broker", help="an external broker (default: start Tansu)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if shutil.which("taskset") is None:
        parser.error("taskset (util-linux) is needed to pin each worker to a core")
    messages, expected, prepared = _prepared(args.docs, args.seed)
    report: dict[str, Any] = {"docs": args.docs, "cores": os.cpu_count()}
    with (
        tansu.broker_for_bench(args.broker) as (broker, broker_pid),
        tempfile.TemporaryDirectory(prefix="neardup-scale-") as tmp,
    ):
        for name, shards, workers in _CONFIGS:
            run = _Sharded(broker, Path(tmp), shards, workers)
            try:
                run.publish_prepared(messages)
                broker_before = cpu_seconds(broker_pid) if broker_pid else 0.0
                run.start()
                done = run.completed_at(expected)
                workers_cpu = run.cpu_seconds()
                broker_cpu = (cpu_seconds(broker_pid) - broker_before) if broker_pid else None
                end_to_end = args.docs / (done - run.first_event_at())
                timelines = run.shard_timelines() if shards is not None else {}
                rate = steady_rate(timelines) if timelines else end_to_end
                last_findings = max((line[-1][0] for line in timelines.values()), default=done)
            finally:
                run.close()
            report[name] = {
                "docs_per_second": round(rate, 1),
                "docs_per_second_first_event_to_last": round(end_to_end, 1),
                "union_lag_seconds": round(done - last_findings, 2),
                "state_bytes": run.shard_bytes(),
                # whole runs: a worker's start (Faust's and the group's) included
                "worker_cpu_seconds": [round(c, 1) for c in workers_cpu],
                "broker_cpu_seconds": None if broker_cpu is None else round(broker_cpu, 1),
            }
            print(f"{name}: {json.dumps(report[name])}", flush=True)
        report |= union_alone(prepared, Path(tmp))
    two, one, single = report["2 shards"], report["1 shard"], report["one detector"]
    report["two_shards_over_one_shard"] = round(two["docs_per_second"] / one["docs_per_second"], 2)
    report["two_shards_over_one_detector"] = round(
        two["docs_per_second"] / single["docs_per_second"], 2
    )
    report["shard_state_share"] = round(max(two["state_bytes"]) / max(one["state_bytes"]), 3)
    emit(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
