"""What the dashboard plots: the state's numbers sampled over time, and cluster growth.

A sampler thread reads the state's counters every ``interval`` seconds (a few keys) and keeps
the last ``keep`` samples in memory; the page draws documents and clusters over time and
derives rates (merges and duplicates per minute, documents per second) from them.

Growth of a cluster in the last window is the number of documents that joined it: a
runtime's batches say so exactly (each duplicate adds one document to its cluster; a merge
moves the retired cluster's growth to the survivor). ``neardup serve`` sees no batches, only
the state, so it compares the sizes of the largest clusters from one sample to the next
(growth among the ``followed`` largest only).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter, Gauge

from ..detection import METHODS, BatchResult, ClusterMerged, Duplicate
from ..detection.result import Stage
from .errors import UnavailableError
from .metrics import Metrics, state_numbers
from .sources import StateSource

__all__ = ["Growth", "Timeline"]


class Growth:
    """Documents that joined each cluster, with when, for the last ``window`` seconds."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._joined: dict[int, deque[tuple[float, int]]] = defaultdict(deque)
        self._lock = threading.Lock()

    def add(self, cluster: int, documents: int, at: float) -> None:
        with self._lock:
            self._joined[cluster].append((at, documents))

    def retire(self, survivor: int, retired: int) -> None:
        """The retired cluster's recent growth is now the survivor's."""
        with self._lock:
            moved = self._joined.pop(retired, None)
            if moved:
                merged = sorted([*self._joined[survivor], *moved])
                self._joined[survivor] = deque(merged)

    def fastest(self, limit: int, now: float) -> list[tuple[int, int]]:
        """(cluster, documents joined in the window), most first, then by id."""
        start = now - self.window
        totals: list[tuple[int, int]] = []
        with self._lock:
            for cluster in list(self._joined):
                joined = self._joined[cluster]
                while joined and joined[0][0] < start:
                    joined.popleft()
                if not joined:
                    del self._joined[cluster]
                    continue
                totals.append((cluster, sum(n for _, n in joined)))
        totals.sort(key=lambda item: (-item[1], item[0]))
        return totals[:limit]


@dataclass(frozen=True, slots=True)
class _Sample:
    at: float
    numbers: Mapping[str, int]
    dead_letters: int
    lag: int

    def to_json(self) -> dict[str, Any]:
        n = self.numbers
        return {
            "time": round(self.at, 3),
            "documents": n.get("documents", 0),
            "clusters": n.get("clusters", 0),
            "documents_in_clusters": n.get("documents_in_clusters", 0),
            "merges": n.get("cluster_merges", 0),
            "duplicates": {m: n.get(f"duplicates:{m}", 0) for m in METHODS},
            "largest_cluster": n.get("largest_cluster", 0),
            "dead_letters": self.dead_letters,
            "lag": self.lag,
        }


class Timeline:
    """The sampler, and the growth tracker as a ``BatchListener`` of the runtime."""

    def __init__(
        self,
        source: StateSource,
        metrics: Metrics,
        interval: float = 2.0,
        keep: int = 1800,
        window: float = 60.0,
        followed: int = 0,
    ) -> None:
        self.source = source
        self.metrics = metrics
        self.interval = interval
        self.growth = Growth(window)
        self._samples: deque[_Sample] = deque(maxlen=keep)
        self._followed = followed  # > 0: growth from size changes (no batches to listen to)
        self._sizes: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def batch_done(self, result: BatchResult, seconds: Mapping[Stage, float]) -> None:
        now = time.time()
        for event in result.events:
            if isinstance(event, Duplicate):
                self.growth.add(event.cluster, 1, now)
            elif isinstance(event, ClusterMerged):
                self.growth.retire(event.cluster, event.retired)

    def dead_letter(self, reason: str) -> None:
        pass  # counted by Metrics, which the samples read

    def sample(self) -> None:
        """Read the state's numbers once (the sampler thread does this every interval)."""
        now = time.time()
        try:
            with self.source.reading() as state:
                numbers = state_numbers(state)
                largest = state.view().clusters.largest(self._followed) if self._followed else []
        except UnavailableError:
            return
        if self._followed:
            sizes = dict(largest)
            for root, size in sizes.items():
                before = self._sizes.get(root)
                if before is not None and size > before:
                    self.growth.add(root, size - before, now)
            self._sizes = sizes
        with self._lock:
            lag = _total(self.metrics.consumer_lag)
            self._samples.append(_Sample(now, numbers, _total(self.metrics.dead_letters), lag))

    def samples(self, since: float = 0.0) -> list[dict[str, Any]]:
        with self._lock:
            return [s.to_json() for s in self._samples if s.at > since]

    def start(self) -> None:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="neardup-timeline", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def _total(instrument: Counter | Gauge) -> int:
    """The sum of one of the process's own instruments over its labels (``metrics.py`` turns
    the ``_created`` series off, so every sample is a value)."""
    return int(sum(s.value for metric in instrument.collect() for s in metric.samples))
