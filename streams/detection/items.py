"""Item mode's detector: structured records matched field by field (``neardup.core.items``).

Each item, in order: its probes are looked up in the index of item keys (and among the
batch's earlier items), every candidate is verified by the combined score of its fields,
and a match at the threshold or above joins the item to its cluster, as a near-duplicate
page joins one (the oldest cluster keeps its id; a bridging item merges clusters). Then the
item's keys are posted. An item whose id is known is a repeat, and is left as it was.

The keys a record posts guarantee that every pair able to reach the threshold shares one
(``core.items.keys``), under the index's cap: a key carried by ``posting_cap`` items becomes
a stop key (a generic name, a city), and the pairs it might have found are counted
(``stopped_keys``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
from neardup.core.items.prepare import PreparedItem, verify
from neardup.core.items.schema import ItemSchema
from neardup.core.items.similarity import ItemMatch
from neardup.state import State, StateView
from neardup.state.items import item_doc_id

from .events import METHODS, ClusterMerged, DocRef, ItemDuplicate
from .result import BatchResult, Stage

__all__ = ["ItemDetector", "item_keys", "similar_items"]

U32 = npt.NDArray[np.uint32]


def item_keys(keys: Sequence[int]) -> U32:
    """An item's 64-bit keys as the index's 32-bit ones (their high bits): a collision only
    proposes a candidate that verification then turns away."""
    return np.unique(np.asarray(keys, dtype=np.uint64) >> np.uint64(32)).astype(np.uint32)


class ItemDetector:
    """Detection of items over one state, a batch (one transaction) at a time."""

    def __init__(self, state: State, schema: ItemSchema) -> None:
        self.state = state
        self.schema = schema

    def stage(self, items: Sequence[PreparedItem]) -> tuple[StateView, BatchResult]:
        """The batch in a view, uncommitted (the caller commits it), and what it did."""
        view = self.state.view()
        started = time.perf_counter()
        batch = _Batch(view, self.schema)
        for item in items:
            batch.add(item)
        result = batch.result(time.perf_counter() - started)
        view.counters.add_many(result.counter_increments())
        view.counters.add_many(batch.gauges)
        view.counters.add("item_stop_keys_met", batch.stopped)
        return view, result


class _Batch:
    """One batch's items, in order, with what they found."""

    def __init__(self, view: StateView, schema: ItemSchema) -> None:
        self.view = view
        self.schema = schema
        self.events: list[ClusterMerged | ItemDuplicate] = []
        self.gauges: dict[str, int] = {}
        self.documents = self.repeats = self.candidates = self.pairs = self.stopped = 0
        #: the batch's items, by id, until it is committed (the index holds their keys)
        self._mine: dict[int, PreparedItem] = {}

    def add(self, item: PreparedItem) -> None:
        view = self.view
        doc_id = item_doc_id(item.id)
        if doc_id in self._mine or view.items.get(doc_id) is not None:
            self.repeats += 1
            return
        probes = item_keys(item.probes)
        met = view.item_keys.meet([probes])
        self.stopped += int(met.stopped[0])
        candidates = sorted(met.met(0) - {doc_id})
        self.candidates += len(candidates)
        matches = self._verified(item, candidates)
        view.items.put(doc_id, item)
        view.documents.put_unsketched([(doc_id, item.id, "", 0)], [0], [0])
        view.clusters.add_singles([doc_id])
        view.item_keys.post_new([item_keys(item.keys)], [doc_id], [0])
        self._mine[doc_id] = item
        self.documents += 1
        if matches:
            self._join(doc_id, item, matches)

    def _verified(
        self, item: PreparedItem, candidates: list[int]
    ) -> list[tuple[int, PreparedItem, ItemMatch]]:
        """The candidates whose combined score reaches the threshold, best first."""
        stored = self.view.items.get_many([c for c in candidates if c not in self._mine])
        others = dict(zip([c for c in candidates if c not in self._mine], stored, strict=True))
        found = []
        for candidate in candidates:
            other = self._mine.get(candidate) or others.get(candidate)
            if other is None or not self._may_link(item, other):
                continue
            self.pairs += 1
            match = verify(item, other, self.schema)
            if match.matched:
                found.append((candidate, other, match))
        found.sort(key=lambda found: (-found[2].score, found[0]))
        return found

    def _may_link(self, item: PreparedItem, other: PreparedItem) -> bool:
        """``link = "across"``: only items of different sources are compared."""
        return self.schema.link != "across" or item.source != other.source

    def _join(
        self, doc_id: int, item: PreparedItem, matches: list[tuple[int, PreparedItem, ItemMatch]]
    ) -> None:
        survivor, size, retired = self.view.clusters.join(
            doc_id, [candidate for candidate, _, _ in matches], self.gauges
        )
        if retired:
            size = retired[-1][1]  # the duplicate names the size after every merge
        best, other, match = matches[0]
        me = DocRef(doc_id, item.id, "")
        self.events.append(
            ItemDuplicate(me, DocRef(best, other.id, ""), match.score, match.fields, survivor, size)
        )
        for root, merged in retired:
            self.events.append(
                ClusterMerged(survivor, root, merged, me, self._ref(survivor), self._ref(root))
            )

    def _ref(self, doc_id: int) -> DocRef:
        found = self.view.documents.ref(doc_id)
        return DocRef(doc_id, found.url if found else "", "")

    def result(self, seconds: float) -> BatchResult:
        kinds = Counter(map(type, self.events))
        timing: dict[Stage, float] = {"verify": seconds}
        return BatchResult(
            events=tuple(self.events),
            documents=self.documents,
            repeats=self.repeats,
            duplicates_by_method={
                method: kinds[ItemDuplicate] if method == "item" else 0 for method in METHODS
            },
            merges=kinds[ClusterMerged],
            candidates=self.candidates,
            pairs_estimated=self.pairs,
            stage_seconds=MappingProxyType(timing),
        )


def similar_items(
    view: StateView, schema: ItemSchema, item: PreparedItem, limit: int
) -> list[tuple[int, PreparedItem, ItemMatch]]:
    """The stored items most like ``item`` (which is not stored), best first: those its
    probes meet in the index, each with its combined and per-field scores, the matches at
    the threshold first (``ItemMatch.matched``), then the others by score."""
    doc_id = item_doc_id(item.id)
    met = sorted(view.item_keys.meet([item_keys(item.probes)]).met(0) - {doc_id})
    scored = []
    for candidate, other in zip(met, view.items.get_many(met), strict=True):
        if other is not None:
            scored.append((candidate, other, verify(item, other, schema)))
    scored.sort(key=lambda found: (-found[2].score, found[0]))
    return scored[:limit]
