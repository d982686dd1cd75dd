"""Prometheus metrics: the process's instruments, and the state's numbers read at scrape time.

The state's totals and gauges (documents, duplicates, clusters, index keys) are the counters
the state keeps in the same transaction as each batch, so a scrape reads a few keys, never a
whole table, and the numbers survive restarts and are the same whichever process serves them
(``neardup run``, the worker holding the detector, ``neardup serve``). Latencies, dead letters
and consumer lag belong to the process that sees them.

Every name is listed in docs/metrics.md (a test checks the list against a scrape).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from neardup.state import State, StateView
from neardup.state.postings import INDEX_TABLES
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..detection import METHODS, BatchResult
from ..detection.result import Stage
from ..detection.versions import VERSION_COUNTERS
from .errors import UnavailableError
from .sources import StateSource

__all__ = ["CONTENT_TYPE", "Metrics", "size_class_label"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# a `_created` series per counter and histogram doubles what a scrape says, for a start time
# that Prometheus itself does not use (process-wide: the client has no per-registry switch)
disable_created_metrics()  # type: ignore[no-untyped-call]

#: a batch's stages take from well under a millisecond to seconds (a commit that waits for a
#: flush)
_STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
#: from publish to event: batching and the prepared log add tens of milliseconds; a backlog,
#: minutes
_LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

#: every posting index (the pages' three, SimHash mode's tables, item mode's keys)
_INDEXES = INDEX_TABLES


def size_class_label(size_class: int) -> str:
    """The sizes of a power-of-two class: class 1 is "2-3", class 2 "4-7"."""
    return f"{1 << size_class}-{(2 << size_class) - 1}"


class Metrics:
    """One registry per service (tests run several in one process): the instruments a runtime
    feeds (as a ``BatchListener``) and a collector of the state's numbers."""

    def __init__(self, source: StateSource | None = None) -> None:
        self.registry = CollectorRegistry()
        self.stage_seconds = Histogram(
            "neardup_stage_seconds",
            "Seconds a batch spent in each stage of detection",
            ["stage"],
            buckets=_STAGE_BUCKETS,
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "neardup_dead_letters",
            "Records refused with a reason, written to the dead letters",
            ["reason"],
            registry=self.registry,
        )
        self.consumer_lag = Gauge(
            "neardup_consumer_lag_messages",
            "Messages between a consumed partition's last read offset and its end (Kafka mode)",
            ["topic", "partition"],
            registry=self.registry,
        )
        self.publish_to_event = Histogram(
            "neardup_publish_to_event_seconds",
            "Seconds from a page's publication to the detection of its batch (Kafka mode; the "
            "batch's oldest page)",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        if source is not None:
            self.registry.register(_StateCollector(source))

    def batch_done(self, result: BatchResult, seconds: Mapping[Stage, float]) -> None:
        for stage, spent in seconds.items():
            self.stage_seconds.labels(stage).observe(spent)

    def dead_letter(self, reason: str) -> None:
        self.dead_letters.labels(reason).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


def state_numbers(state: State) -> dict[str, int]:
    """The state's stored counters by name, plus the largest cluster's size: what a scrape
    and the dashboard read (a few keys)."""
    view: StateView = state.view()
    numbers = view.counters.with_prefix("")
    largest = view.clusters.largest(1)
    numbers["largest_cluster"] = largest[0][1] if largest else 0
    return numbers


class _StateCollector(Collector):
    def __init__(self, source: StateSource) -> None:
        self._source = source

    def describe(self) -> Iterable[Metric]:
        return ()  # collected at scrape time only (registering must not read the state)

    def collect(self) -> Iterator[Metric]:
        try:
            with self._source.reading() as state:
                numbers = state_numbers(state)
                disk = state.store.disk_bytes(flush=False)
        except UnavailableError:
            return  # a worker that does not hold the detector has no state numbers
        yield from _totals(numbers)
        yield from _gauges(numbers, disk)


def _counter(name: str, text: str, value: int) -> CounterMetricFamily:
    return CounterMetricFamily(name, text, value=value)


def _gauge(name: str, text: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, text, value=value)


def _totals(numbers: Mapping[str, int]) -> Iterator[Metric]:
    # with versions = latest the stored count is of live urls (departed versions leave it);
    # a counter must not go down: the versions that left are counted back in
    taken = sum(numbers.get(name, 0) for name in ("documents", "pages_changed", "pages_removed"))
    yield _counter("neardup_documents", "Documents taken in (repeats excluded)", taken)
    yield _counter(
        "neardup_repeats",
        "Deliveries of a document already known (same url and fetched_at), ignored",
        numbers.get("repeats", 0),
    )
    duplicates = CounterMetricFamily(
        "neardup_duplicates", "Duplicates found, by how they were found", labels=["method"]
    )
    for method in METHODS:
        duplicates.add_metric([method], numbers.get(f"duplicates:{method}", 0))
    yield duplicates
    yield _counter(
        "neardup_cluster_merges",
        "Clusters retired by joining an older one",
        numbers.get("cluster_merges", 0),
    )
    yield _counter(
        "neardup_cluster_splits",
        "Clusters cut into parts (item mode: a loose cluster, an update, a tombstone)",
        numbers.get("cluster_splits", 0),
    )
    yield _counter(
        "neardup_contained",
        "Contained events: a new document held in an earlier one, or holding one",
        numbers.get("contained", 0),
    )
    versions = CounterMetricFamily(
        "neardup_versions",
        "What re-fetches of known urls did (versions = latest; versions_ignored under all)",
        labels=["what"],
    )
    for what in VERSION_COUNTERS:
        versions.add_metric([what], numbers.get(what, 0))
    yield versions
    yield _counter(
        "neardup_candidates",
        "Documents the indexes proposed past their filters",
        numbers.get("candidates", 0),
    )
    yield _counter(
        "neardup_pairs_estimated",
        "Pairs whose resemblance (or containment) was estimated",
        numbers.get("pairs_estimated", 0),
    )


def _gauges(numbers: Mapping[str, int], disk: int) -> Iterator[Metric]:
    yield _gauge(
        "neardup_clusters", "Clusters of two or more documents", numbers.get("clusters", 0)
    )
    yield _gauge(
        "neardup_documents_in_clusters",
        "Documents in clusters of two or more",
        numbers.get("documents_in_clusters", 0),
    )
    yield _gauge(
        "neardup_largest_cluster_documents",
        "Documents in the largest cluster",
        numbers.get("largest_cluster", 0),
    )
    by_size = GaugeMetricFamily(
        "neardup_clusters_by_size",
        "Clusters of two or more per power-of-two size class",
        labels=["size"],
    )
    prefix = "cluster_sizes:"
    for name, count in sorted(numbers.items()):
        if name.startswith(prefix) and count:
            by_size.add_metric([size_class_label(int(name[len(prefix) :]))], count)
    yield by_size
    keys = GaugeMetricFamily("neardup_index_keys", "Keys of each posting index", labels=["index"])
    stop = GaugeMetricFamily(
        "neardup_index_stop_keys",
        "Keys of each posting index whose list reached the cap (common shingles)",
        labels=["index"],
    )
    for index in _INDEXES:
        keys.add_metric([index], numbers.get(f"index_keys:{index}", 0))
        stop.add_metric([index], numbers.get(f"stop_keys:{index}", 0))
    yield keys
    yield stop
    yield _gauge("neardup_state_bytes", "Bytes of the state directory on disk", disk)
