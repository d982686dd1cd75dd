"""Item mode's detector: structured records matched field by field (``neardup.core.items``).

Each item, in order: its probes meet the keys posted by stored items (looked up for the
whole batch at once) and by the batch's earlier items, every candidate is verified by the
combined score of its fields, and a match at the threshold or above joins the item to its
cluster, as a near-duplicate page joins one (the oldest cluster keeps its id; a bridging
item merges clusters). The batch's keys are posted at its end. An item that arrives again
unchanged is a repeat, and is left as it was.

The keys a record posts guarantee that every pair able to reach the threshold shares one
(``core.items.keys``), under the index's cap: a key carried by ``posting_cap`` items becomes
a stop key (a generic name, a city), and the pairs it might have found are counted
(``stopped_keys``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
from neardup.core.items.prepare import PreparedItem, verify, verify_match
from neardup.core.items.schema import ItemSchema
from neardup.core.items.similarity import ItemMatch
from neardup.core.prepared_items import is_tombstone
from neardup.core.records import format_fetched_at
from neardup.state import State, StateView, fetched_at_to_micros
from neardup.state.items import item_doc_id

from .events import (
    METHODS,
    ClusterMerged,
    ClusterSplit,
    DocRef,
    Event,
    ItemDuplicate,
    ItemRemoved,
    ItemUpdated,
)
from .regroup import Regrouper
from .result import BatchResult, Stage

__all__ = ["ItemDetector", "item_keys", "similar_items"]

U32 = npt.NDArray[np.uint32]


def item_keys(keys: Sequence[int]) -> U32:
    """An item's 64-bit keys as the index's 32-bit ones (their high bits), distinct and
    sorted: a collision only proposes a candidate that verification then turns away."""
    # a few dozen keys: a set costs a tenth of numpy's unique
    return np.array(sorted({key >> 32 for key in keys}), dtype=np.uint32)


class ItemDetector:
    """Detection of items over one state, a batch (one transaction) at a time."""

    def __init__(self, state: State, schema: ItemSchema) -> None:
        self.state = state
        self.schema = schema

    def stage(self, items: Sequence[PreparedItem]) -> tuple[StateView, BatchResult]:
        """The batch in a view, uncommitted (the caller commits it), and what it did."""
        view = self.state.view()
        started = time.perf_counter()
        batch = _Batch(view, self.schema, items)
        for at, item in enumerate(items):
            batch.add(at, item)
        batch.post()
        result = batch.result(time.perf_counter() - started)
        view.counters.add_many(result.counter_increments())
        view.counters.add_many(batch.gauges)
        view.counters.add_many(
            {
                "item_stop_keys_met": batch.stopped,
                "items_updated": batch.updated,
                "items_removed": batch.removed,
            }
        )
        return view, result


class _Batch:
    """One batch's items, in order, with what they found and what they changed."""

    def __init__(self, view: StateView, schema: ItemSchema, items: Sequence[PreparedItem]) -> None:
        self.view = view
        self.schema = schema
        self.events: list[Event] = []
        self.gauges: dict[str, int] = {}
        self.documents = self.repeats = self.candidates = self.pairs = self.stopped = 0
        self.updated = self.removed = 0
        self._last = 0
        # what the stored items' keys propose, for the whole batch in one lookup
        live = [at for at, item in enumerate(items) if not is_tombstone(item)]
        self._probes = {at: item_keys(items[at].probes) for at in live}
        met = view.item_keys.meet(list(self._probes.values()))
        self._met = {at: met.met(row) for row, at in enumerate(live)}
        self._stopped = {at: int(met.stopped[row]) for row, at in enumerate(live)}
        # the items the batch reads, as the batch leaves them (None: removed)
        known = sorted({item_doc_id(item.id) for item in items}.union(*self._met.values()))
        self._items = dict(zip(known, view.items.get_many(known), strict=True))
        # the keys the batch's items posted so far, with their posters
        self._posted: dict[int, list[int]] = {}
        self._posts: list[tuple[U32, int]] = []
        self._regroup = Regrouper(view, self.events, self.gauges, self._ref).regroup

    def post(self) -> None:
        """The batch's keys into the index, in one write."""
        self.view.item_keys.post_new(
            [keys for keys, _ in self._posts],
            [doc_id for _, doc_id in self._posts],
            [0] * len(self._posts),
        )

    def _candidates(self, at: int, item: PreparedItem, doc_id: int) -> list[int]:
        """What the item's probes meet: stored items, and the batch's earlier items."""
        met = set(self._met[at])
        self.stopped += self._stopped[at]
        posted = self._posted
        for key in self._probes[at].tolist():
            met.update(posted.get(key, ()))
        met.discard(doc_id)
        return sorted(met)

    def add(self, at: int, item: PreparedItem) -> None:
        view = self.view
        doc_id = item_doc_id(item.id)
        old = self._items[doc_id]
        if is_tombstone(item):
            if old is None:
                self.repeats += 1  # nothing to remove: a deletion delivered twice
                return
            self._remove(doc_id, old)
            return
        if old is not None and old.encode() == item.encode():
            self.repeats += 1
            return
        touched = {doc_id}
        if old is None:
            # an item's time is when it arrived: the older cluster keeps its id, and a new
            # item never renames the cluster it joins
            arrived = fetched_at_to_micros(format_fetched_at(datetime.now(UTC)))
            self._last = max(arrived, self._last + 1)
            view.documents.put_unsketched([(doc_id, item.id, "", 0)], [self._last], [0])
            view.clusters.add_singles([doc_id])
            self.documents += 1
        else:  # a new version: its old matches are checked again, as a new item's are
            touched.update(view.edges.remove_all(doc_id))
            touched.update(view.clusters.members_of(view.clusters.find(doc_id))[0])
            self.updated += 1
        candidates = self._candidates(at, item, doc_id)
        self.candidates += len(candidates)
        matches = self._verified(item, candidates)
        for other, _, match in matches:
            view.edges.add(doc_id, other, match.score)
        view.items.put(doc_id, item)
        self._items[doc_id] = item
        keys = item_keys(item.keys)
        self._posts.append((keys, doc_id))
        for key in keys.tolist():
            self._posted.setdefault(key, []).append(doc_id)
        if old is None and not matches:
            return  # a new item alone: a cluster of its own, nothing to tell
        touched.update(other for other, _, _ in matches)
        self._report(doc_id, item, matches, self._regroup(touched), updated=old is not None)

    def _remove(self, doc_id: int, old: PreparedItem) -> None:
        """A tombstone: the item goes, with its matches; its cluster is cut again."""
        view = self.view
        root = view.clusters.find(doc_id)
        members = view.clusters.members_of(root)[0]
        view.edges.remove_all(doc_id)
        view.items.delete(doc_id)
        self._items[doc_id] = None
        self.removed += 1
        self.events.append(ItemRemoved(DocRef(doc_id, old.id, ""), root))
        self._regroup(set(members), gone=doc_id)

    def _verified(
        self, item: PreparedItem, candidates: list[int]
    ) -> list[tuple[int, PreparedItem, ItemMatch]]:
        """The candidates whose combined score reaches the threshold, best first (an item
        no longer stored, removed or replaced by a tombstone, is left out)."""
        found = []
        for candidate in candidates:
            other = self._items[candidate]
            if other is None or not self._may_link(item, other):
                continue
            self.pairs += 1
            match = verify_match(item, other, self.schema)
            if match is not None:
                found.append((candidate, other, match))
        found.sort(key=lambda found: (-found[2].score, found[0]))
        return found

    def _may_link(self, item: PreparedItem, other: PreparedItem) -> bool:
        """``link = "across"``: only items of different sources are compared."""
        return self.schema.link != "across" or item.source != other.source

    def _report(
        self,
        doc_id: int,
        item: PreparedItem,
        matches: list[tuple[int, PreparedItem, ItemMatch]],
        regrouped: tuple[dict[int, list[int]], dict[int, int]],
        updated: bool,
    ) -> None:
        """The events of an item that arrived: its update, its duplicate (when it shares a
        cluster with what it matched), and each cluster its cluster took in."""
        after, old_roots = regrouped
        root = next(root for root, group in after.items() if doc_id in group)
        members = after[root]
        me = DocRef(doc_id, item.id, "")
        if updated:
            self.events.append(ItemUpdated(me, root, len(members)))
        joined = [(other, found, match) for other, found, match in matches if other in members]
        if joined:
            best, other, match = joined[0]
            self.events.append(
                ItemDuplicate(
                    me, DocRef(best, other.id, ""), match.score, match.fields, root, len(members)
                )
            )
        taken = {old_roots[member] for member in members if member != doc_id}
        for retired in sorted(taken - {root}, key=self.view.clusters.age):
            self.events.append(
                ClusterMerged(root, retired, len(members), me, self._ref(root), self._ref(retired))
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
            splits=kinds[ClusterSplit],
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
