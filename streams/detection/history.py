"""The history a writer records for the dashboard, in its batches' transactions.

Every ``every`` seconds of batches, one sample of the state's counters (``state/timeline.py``)
and the clusters that grew most since the sample before: each duplicate adds a document to
its cluster, and a merge moves the retired cluster's growth to the one that keeps its id.
Whoever reads the state later (``neardup serve``) draws the growth from these samples.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from neardup.state import Sample, StateView
from neardup.state.timeline import GROWTH_PER_SAMPLE

from .events import METHODS, ClusterMerged, Duplicate, ItemDuplicate
from .result import BatchResult

__all__ = ["DEFAULT_HISTORY_EVERY", "SAMPLED_COUNTERS", "HistoryRecorder"]

#: seconds of batches between two samples
DEFAULT_HISTORY_EVERY = 2.0

#: the counters a sample keeps: what the dashboard draws (a sample stored before one of them
#: was kept reads it as 0)
SAMPLED_COUNTERS = (
    "documents",
    "clusters",
    "documents_in_clusters",
    "cluster_merges",
    "cluster_splits",
    "contained",
    "dead_letters",
    *(f"duplicates:{method}" for method in METHODS),
    # versions = latest: urls whose content changed, urls deleted (VERSION_COUNTERS)
    "pages_changed",
    "pages_removed",
)


class HistoryRecorder:
    """Adds a sample to a batch's view once ``every`` seconds have passed since the last."""

    def __init__(
        self, every: float = DEFAULT_HISTORY_EVERY, clock: Callable[[], float] = time.time
    ) -> None:
        self.every = every
        self._clock = clock
        self._last = float("-inf")
        self._grew: Counter[int] = Counter()

    def record(self, view: StateView, result: BatchResult) -> None:
        """Count the batch's growth; sample the counters (as the batch leaves them) if it is
        time."""
        grown = 0  # the largest cluster the batch made
        for event in result.events:
            if isinstance(event, (Duplicate, ItemDuplicate)):
                self._grew[event.cluster] += 1
                grown = max(grown, event.cluster_size)
            elif isinstance(event, ClusterMerged):
                grown = max(grown, event.size)
                if event.retired in self._grew:
                    self._grew[event.cluster] += self._grew.pop(event.retired)
        now = self._clock()
        if now - self._last < self.every:
            return
        counters = {name: view.counters.get(name) for name in SAMPLED_COUNTERS}
        # the size index is read as committed: the batch's own events say if it grew further
        committed = view.clusters.largest(1)
        counters["largest_cluster"] = max(grown, committed[0][1] if committed else 0)
        grew = [(cluster, joined) for cluster, joined in self._grew.most_common(GROWTH_PER_SAMPLE)]
        view.timeline.append(Sample(now, counters, grew))
        self._grew.clear()
        self._last = now
