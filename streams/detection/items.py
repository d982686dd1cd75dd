"""Item mode's detector: structured records matched field by field (``neardup.core.items``).

Each item, in order: an item whose values all equal a stored item's is its copy (one edge,
no candidates: a record scraped again costs a lookup). Otherwise its keys, under the
state's model (``core.items.blocking``), meet the keys posted by stored items (looked up for
the whole batch at once) and by the batch's earlier items; each candidate is scored by the
model (``core.items.scorer``), and a match at the schema's threshold or above is an edge of
the graph of matches. The item joins the cluster of its matches; when they lie in several
clusters, or the item changed, or with ``link = "across"``, the clusters around it are cut
again from the graph (``regroup.py``). The oldest cluster keeps its id. Two items of a
source that lists each entity once (``link = "across"``: every source; ``once``: those
named) are never compared.

Dense groups are thinned: an item with more than ``DENSE`` candidates verifies them best
first (most keys shared) and stops at ``ENOUGH`` matches, and it posts only the keys that
fewer than ``ENOUGH`` of its matches already carry. A thousand records of one entity then
cost a few candidates each instead of a thousand, and its posting lists stay short. The cut
stays right: each such item holds to its group by ``ENOUGH`` matches, as many as hold a part
whatever its size (``communities.HOLD``), and an entity that does not match the group finds
its own keys.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
import xxhash
from neardup.core import AbandonedError
from neardup.core.items.blocking import Blocker
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.items.scorer import ItemFeatures, Scorer
from neardup.core.items.similarity import ItemMatch
from neardup.core.items.values import FieldValue
from neardup.core.prepared_items import is_tombstone
from neardup.core.records import format_fetched_at
from neardup.state import FingerprintKind, FingerprintTable, State, StateView, fetched_at_to_micros
from neardup.state.items import item_doc_id, stored_model

from .communities import HOLD
from .events import (
    ITEM_EVENT_COUNTER,
    METHODS,
    ClusterMerged,
    ClusterSplit,
    DocRef,
    Event,
    ItemDuplicate,
    ItemRemoved,
    ItemUpdated,
    numbered,
)
from .regroup import IDENTICAL, Regrouper
from .result import BatchResult, Stage

__all__ = [
    "DENSE",
    "ENOUGH",
    "ItemDetector",
    "ItemScoring",
    "item_keys",
    "number_events",
    "similar_items",
]

U32 = npt.NDArray[np.uint32]
#: an item with more candidates than this is in a dense group: thinned (module docstring)
DENSE = 32
#: matches that hold an item to a dense group: the cut leaves a part so held whole
ENOUGH = HOLD
#: items between two checks for a stop
_STOP_EVERY = 16
#: readied items an ``ItemScoring`` keeps (a few kB each)
_READY_KEPT = 50_000


def item_keys(keys: Sequence[int]) -> U32:
    """An item's 64-bit keys as the index's 32-bit ones (their high bits), distinct and
    sorted: a collision only proposes a candidate that verification then turns away."""
    # a few dozen keys: a set costs a tenth of numpy's unique
    return np.array(sorted({key >> 32 for key in keys}), dtype=np.uint32)


def values_fingerprint(item: PreparedItem) -> int:
    """A fingerprint of an item's values (not its id, url or source)."""
    return xxhash.xxh3_64_intdigest(PreparedItem("", None, item.values).encode())


def _print_key(fingerprint: int) -> bytes:
    return FingerprintTable.key(FingerprintKind.ITEM_VALUES, fingerprint)


class ItemScoring:
    """The state's model, and the scorer and keys it makes (the schema's prior until a model
    is fitted: ``item_fit.py``)."""

    def __init__(self, schema: ItemSchema, model: ItemModel | None) -> None:
        self.schema = schema
        self.model = ItemModel.prior_of(schema) if model is None else model
        self.scorer = Scorer(schema, self.model)
        self.blocker = Blocker(schema, self.model)
        # readied items across batches: a stored item is a candidate of many later ones,
        # and readying it costs several times scoring a pair (kept with the values they
        # were made from, so a changed item, or a batch rolled back, is readied again)
        self._ready: dict[int, tuple[tuple[FieldValue | None, ...], ItemFeatures]] = {}

    def features(self, doc_id: int, item: PreparedItem) -> ItemFeatures:
        """The item readied for scoring (``Scorer.features``), kept for later batches."""
        found = self._ready.get(doc_id)
        if found is not None and found[0] == item.values:
            return found[1]
        features = self.scorer.features(item.values)
        if len(self._ready) >= _READY_KEPT:
            del self._ready[next(iter(self._ready))]  # the oldest readied
        self._ready[doc_id] = (item.values, features)
        return features

    @classmethod
    def of(cls, state: State, schema: ItemSchema) -> ItemScoring:
        return cls(schema, stored_model(state.store))

    def may_link(self, item: PreparedItem, other: PreparedItem) -> bool:
        """Whether two items may be compared (``ItemSchema.compares``)."""
        return self.schema.compares(item.source, other.source)


class ItemDetector:
    """Detection of items over one state, a batch (one transaction) at a time."""

    def __init__(
        self,
        state: State,
        schema: ItemSchema,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        """``should_stop``: asked every few items; when it says so, the batch is abandoned
        (``item_fit.AbandonedError``): nothing of it is kept, and the next run does it again."""
        self.state = state
        self.schema = schema
        self.scoring = ItemScoring.of(state, schema)
        self.should_stop = should_stop

    def stage(self, items: Sequence[PreparedItem]) -> tuple[StateView, BatchResult]:
        """The batch in a view, uncommitted (the caller commits it), and what it did."""
        view = self.state.view()
        started = time.perf_counter()
        batch = _Batch(view, self.scoring, items)
        for at, item in enumerate(items):
            if at % _STOP_EVERY == 0 and self.should_stop is not None and self.should_stop():
                raise AbandonedError
            batch.add(at, item)
        batch.finish()
        result = batch.result(time.perf_counter() - started)
        batch.count(result)
        return view, result


class _Batch:
    """One batch's items, in order, with what they found and what they changed."""

    def __init__(
        self,
        view: StateView,
        scoring: ItemScoring,
        items: Sequence[PreparedItem],
        rescoring: bool = False,
    ) -> None:
        self.view = view
        self.scoring = scoring
        self.schema = scoring.schema
        self.events: list[Event] = []
        self.gauges: dict[str, int] = {}
        self.documents = self.repeats = self.candidates = self.pairs = self.stopped = 0
        self.updated = self.removed = self.copies = 0
        # scoring stored items again under a new model (``item_fit.py``): their edges and
        # keys only; the clusters are regrouped once, after all of them
        self._rescoring = rescoring
        self._last = 0
        blocker = scoring.blocker
        live = [at for at, item in enumerate(items) if not is_tombstone(item)]
        self._keys: dict[int, tuple[U32, U32]] = {}
        for at in live:
            posted, probes = blocker.keys(items[at].values)
            self._keys[at] = (item_keys(posted), item_keys(probes))
        # what the stored items' keys propose, for the whole batch in one lookup
        met = view.item_keys.meet([self._keys[at][1] for at in live])
        self._met: dict[int, dict[int, int]] = {}
        for row, at in enumerate(live):
            rows = met.rows(row)
            self._met[at] = dict(
                zip(met.doc_ids[rows].tolist(), met.shared[rows].tolist(), strict=True)
            )
        self._stopped = {at: int(met.stopped[row]) for row, at in enumerate(live)}
        # the items the batch reads, as the batch leaves them (None: removed), read at once:
        # those of the batch and the stored ones that can be candidates (a stored item's
        # count of shared keys is final here, and the least a candidate needs only grows)
        known = sorted(
            {item_doc_id(item.id) for item in items}.union(
                *(self._may_be_candidates(met) for met in self._met.values())
            )
        )
        self._items = dict(zip(known, view.items.get_many(known), strict=True))
        self._item_keys: dict[int, list[int]] = {}
        self._prints = {at: values_fingerprint(items[at]) for at in live}
        keys = {at: _print_key(fp) for at, fp in self._prints.items()}
        found = view.fingerprints.lookup_many(keys.values())
        # each fingerprint's first holder: stored, or registered by the batch
        self._holders = {
            self._prints[at]: entry[0] for at, key in keys.items() if (entry := found[key])
        }
        # items that arrived or changed, clustered at the batch's end (``flush``): a
        # cluster's edges are read once a batch, not once an item
        self._pending: list[
            tuple[int, PreparedItem, list[tuple[int, PreparedItem, ItemMatch]], bool]
        ] = []
        self._touched: set[int] = set()
        # the keys the batch's items posted so far, with their posters
        self._posted: dict[int, list[int]] = {}
        self._posts: list[tuple[U32, int]] = []
        linked = self.schema.link == "across" or bool(self.schema.once)
        self.regroup = Regrouper(
            view,
            self.events,
            self.gauges,
            self.ref,
            self._sources_of if linked else None,
            every_source=self.schema.link == "across",
        ).regroup

    def _sources_of(self, doc_id: int) -> set[str | None]:
        """The item's source where it lists each entity once (any, with ``link = "across"``)."""
        item = self._item(doc_id)
        source = None if item is None else item.source
        return {source} if self.schema.listed_once(source) else set()

    def _may_be_candidates(self, met: dict[int, int]) -> list[int]:
        """Those of ``met`` (keys shared by each) sharing at least the model's
        ``least_shared`` keys, or as many as the one sharing most, if it shares fewer."""
        least = min(self.scoring.model.least_shared, max(met.values(), default=0))
        return [other for other, shared in met.items() if shared >= least]

    def _item(self, doc_id: int) -> PreparedItem | None:
        if doc_id not in self._items:
            self._items[doc_id] = self.view.items.get(doc_id)
        return self._items[doc_id]

    def _ready(self, doc_id: int, item: PreparedItem) -> ItemFeatures:
        return self.scoring.features(doc_id, item)

    def finish(self) -> None:
        """The batch's new items clustered, and its keys posted."""
        self.flush()
        self.post()

    def post(self) -> None:
        """The batch's keys into the index, in one write."""
        self.view.item_keys.post_new(
            [keys for keys, _ in self._posts],
            [doc_id for _, doc_id in self._posts],
            [0] * len(self._posts),
        )

    def _candidates(self, at: int, doc_id: int) -> list[int]:
        """What the item's probes meet, stored and earlier in the batch, most keys shared
        first (then by id), but those sharing fewer keys than the model's ``least_shared``
        (or than the best candidate, if it shares fewer)."""
        met = Counter(self._met[at])
        self.stopped += self._stopped[at]
        for key in self._keys[at][1].tolist():
            for other in self._posted.get(key, ()):
                met[other] += 1
        met.pop(doc_id, None)
        return sorted(self._may_be_candidates(met), key=lambda other: (-met[other], other))

    def add(self, at: int, item: PreparedItem) -> None:
        view = self.view
        doc_id = item_doc_id(item.id)
        old = self._items.get(doc_id)
        if is_tombstone(item):
            if old is None:
                self.repeats += 1  # nothing to remove: a deletion delivered twice
                return
            self._remove(doc_id, old)
            return
        if self._rescoring:
            self._match(at, doc_id, item)
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
            self._hand_over(doc_id, old)
            touched.update(view.edges.remove_all(doc_id))
            touched.update(view.clusters.members_of(view.clusters.find(doc_id))[0])
            self.updated += 1
        view.items.put(doc_id, item)
        self._items[doc_id] = item
        self._item_keys.pop(doc_id, None)
        matches = self._match(at, doc_id, item)
        if old is None and not matches:
            return  # a new item alone: a cluster of its own, nothing to tell
        touched.update(other for other, _, _ in matches)
        self._touched |= touched
        self._pending.append((doc_id, item, matches, old is not None))

    def _match(
        self, at: int, doc_id: int, item: PreparedItem
    ) -> list[tuple[int, PreparedItem, ItemMatch]]:
        """The item's matches, kept as edges, and its keys posted: a copy's one original, or
        the candidates its keys meet that the model verifies."""
        copy_of = self._copy_of(at, doc_id, item)
        if copy_of is not None:
            self.copies += 1
            original = self._item(copy_of)
            assert original is not None
            self.view.edges.add(doc_id, copy_of, IDENTICAL)
            return [(copy_of, original, ItemMatch(1.0, {}, True))]
        candidates = self._candidates(at, doc_id)
        self.candidates += len(candidates)
        matches = self._verified(doc_id, item, candidates)
        for other, _, match in matches:
            self.view.edges.add(doc_id, other, match.score)
        self._post(at, doc_id, matches)
        return matches

    def _copy_of(self, at: int, doc_id: int, item: PreparedItem) -> int | None:
        """The item this one copies (all values equal), or None; registers the item as the
        first holder of its values when no live item holds them."""
        fingerprint = self._prints[at]
        first = self._holders.get(fingerprint)
        held = None if first is None or first == doc_id else self._item(first)
        if held is not None and held.values == item.values:
            return first if self.scoring.may_link(item, held) else None
        if first is None or first == doc_id or held is None:
            self.view.fingerprints.register(_print_key(fingerprint), doc_id)
            self._holders[fingerprint] = doc_id
        return None

    def _post(
        self, at: int, doc_id: int, matches: list[tuple[int, PreparedItem, ItemMatch]]
    ) -> None:
        """Post the item's keys, but those that ``ENOUGH`` of its matches already carry."""
        keys = self._keys[at][0]
        if len(matches) >= ENOUGH:
            carried = Counter(
                key for other, held, _ in matches for key in self._posted_by(other, held)
            )
            keys = np.array(
                [key for key in keys.tolist() if carried[key] < ENOUGH], dtype=np.uint32
            )
        self._post_keys(keys, doc_id)

    def _post_keys(self, keys: U32, doc_id: int) -> None:
        if len(keys):
            self._posts.append((keys, doc_id))
            for key in keys.tolist():
                self._posted.setdefault(key, []).append(doc_id)

    def _posted_by(self, doc_id: int, item: PreparedItem) -> list[int]:
        """The keys an item posts under the model (a dense group's members are asked again
        and again: kept for the batch)."""
        found = self._item_keys.get(doc_id)
        if found is None:
            posted = self.scoring.blocker.keys(item.values)[0]
            found = self._item_keys[doc_id] = item_keys(posted).tolist()
        return found

    def flush(self) -> None:
        """Cluster the items that arrived or changed since the last flush, together, and
        tell what happened: each one's update and duplicate, each cluster taken in."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        touched, self._touched = self._touched, set()
        after, old_roots = self.regroup(touched)
        root_of = {member: root for root, group in after.items() for member in group}
        new = {doc_id for doc_id, _, _, updated in pending if not updated}
        first: dict[int, DocRef] = {}
        for doc_id, item, matches, updated in pending:
            root = root_of[doc_id]
            members = set(after[root])
            me = DocRef(doc_id, item.id, "")
            first.setdefault(root, me)
            if updated:
                self.events.append(ItemUpdated(me, root, len(members)))
            joined = [found for found in matches if found[0] in members]
            if not joined and len(members) > 1:
                joined = self._held_by(doc_id, item, members)
            if joined:
                best, other, match = joined[0]
                self.events.append(
                    ItemDuplicate(
                        me,
                        DocRef(best, other.id, ""),
                        match.score,
                        match.fields,
                        root,
                        len(members),
                    )
                )
        self.tell_merges(after, old_roots, new, first)

    def _held_by(
        self, doc_id: int, item: PreparedItem, members: set[int]
    ) -> list[tuple[int, PreparedItem, ItemMatch]]:
        """What holds an item in its cluster when none of the matches it arrived with is
        there any more (the item it copied changed later in the batch): its best edge into
        the cluster, for its ``duplicate`` event."""
        near = self.view.edges.neighbours(doc_id)
        inside = sorted((-score, other) for other, score in near.items() if other in members)
        for _, other in inside:
            held = self._item(other)
            if held is None:
                continue
            if near[other] == IDENTICAL:
                return [(other, held, ItemMatch(1.0, {}, True))]
            scorer = self.scoring.scorer
            mine, theirs = self._ready(doc_id, item), self._ready(other, held)
            return [(other, held, scorer.score(mine, theirs))]
        return []

    def tell_merges(
        self,
        after: dict[int, list[int]],
        old_roots: dict[int, int],
        new: set[int],
        first: dict[int, DocRef],
    ) -> None:
        """A ``cluster_merged`` for each cluster a group took in (``_retired``); ``first``:
        the item that brought each group together, where the batch knows it."""
        for root, group in sorted(after.items()):
            retired = _retired(group, root, old_roots, new)
            for gone in sorted(retired, key=self.view.clusters.age):
                self.events.append(
                    ClusterMerged(
                        root,
                        gone,
                        len(group),
                        first.get(root, self.ref(root)),
                        self.ref(root),
                        self.ref(gone),
                    )
                )

    def _remove(self, doc_id: int, old: PreparedItem) -> None:
        """A tombstone: the item goes, with its matches (its copies now hold to the first of
        them); its cluster is cut again."""
        self.flush()
        view = self.view
        root = view.clusters.find(doc_id)
        members = view.clusters.members_of(root)[0]
        self._hand_over(doc_id, old)
        view.edges.remove_all(doc_id)
        view.items.delete(doc_id)
        self._items[doc_id] = None
        self._item_keys.pop(doc_id, None)
        self.removed += 1
        self.events.append(ItemRemoved(DocRef(doc_id, old.id, ""), root))
        self.regroup(set(members), gone=doc_id)

    def _hand_over(self, doc_id: int, old: PreparedItem) -> None:
        """An item leaving its values (removed, or changed): when it held them for copies,
        the first copy holds them now, with the copies' edges, its matches and its keys
        (the copies would otherwise hang on an item that no longer has their values)."""
        view = self.view
        near = view.edges.neighbours(doc_id)
        copies = sorted(other for other, score in near.items() if score == IDENTICAL)
        fingerprint = values_fingerprint(old)
        if not copies or self._holders.get(fingerprint, doc_id) != doc_id:
            return
        holder = copies[0]
        for other in copies[1:]:
            view.edges.add(holder, other, IDENTICAL)
        for other, score in near.items():
            if score != IDENTICAL:
                view.edges.add(holder, other, score)
        self._holders[fingerprint] = holder
        view.fingerprints.register(_print_key(fingerprint), holder)
        self._post_keys(item_keys(self.scoring.blocker.keys(old.values)[0]), holder)

    def _verified(
        self, doc_id: int, item: PreparedItem, candidates: list[int]
    ) -> list[tuple[int, PreparedItem, ItemMatch]]:
        """The candidates whose match probability reaches the threshold, best first (an item
        no longer stored is left out); a dense group's are thinned (module docstring)."""
        scorer = self.scoring.scorer
        mine = self._ready(doc_id, item)
        dense = len(candidates) > DENSE
        found = []
        for candidate in candidates:
            other = self._item(candidate)
            if other is None or not self.scoring.may_link(item, other):
                continue
            self.pairs += 1
            match = scorer.verify(mine, self._ready(candidate, other))
            if match is not None and match.matched:
                found.append((candidate, other, match))
                if dense and len(found) >= ENOUGH:
                    break
        found.sort(key=lambda found: (-found[2].score, found[0]))
        return found

    def ref(self, doc_id: int) -> DocRef:
        found = self.view.documents.ref(doc_id)
        return DocRef(doc_id, found.url if found else "", "")

    def result(self, seconds: float) -> BatchResult:
        """What the batch did, its events numbered in the view (``number_events``)."""
        kinds = Counter(map(type, self.events))
        timing: dict[Stage, float] = {"verify": seconds}
        return BatchResult(
            events=number_events(self.view, self.events),
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

    def count(self, result: BatchResult) -> None:
        counters = self.view.counters
        counters.add_many(result.counter_increments())
        counters.add_many(self.gauges)
        counters.add_many(
            {
                "item_stop_keys_met": self.stopped,
                "items_updated": self.updated,
                "items_removed": self.removed,
                "item_copies": self.copies,
            }
        )


def number_events(view: StateView, events: Sequence[Event]) -> tuple[Event, ...]:
    """``events`` numbered after the state's item events so far (``events.numbered``), the
    count kept in the view's transaction."""
    first = view.counters.get(ITEM_EVENT_COUNTER)
    view.counters.add(ITEM_EVENT_COUNTER, len(events))
    return numbered(events, first)


def _retired(group: Sequence[int], root: int, old_roots: dict[int, int], new: set[int]) -> set[int]:
    """The clusters a group took in whole enough to say so: those whose root (their oldest
    item) is in it. A cluster cut apart, its root elsewhere, is told by its split."""
    members = set(group)
    return {
        old_roots[member] for member in group if member not in new and old_roots[member] in members
    } - {root}


def similar_items(
    view: StateView, scoring: ItemScoring, item: PreparedItem, limit: int
) -> list[tuple[int, PreparedItem, ItemMatch]]:
    """The stored items most like ``item`` (which is not stored), best first: those its
    keys meet in the index, each with its match probability and per-field similarities,
    the matches at the threshold first (``ItemMatch.matched``), then the others by score.
    With ``link = "across"``, items of the query's own source are left out."""
    doc_id = item_doc_id(item.id)
    probes = item_keys(scoring.blocker.keys(item.values)[1])
    met = sorted(view.item_keys.meet([probes]).met(0) - {doc_id})
    mine = scoring.scorer.features(item.values)
    scored = []
    for candidate, other in zip(met, view.items.get_many(met), strict=True):
        if other is not None and (item.source is None or scoring.may_link(item, other)):
            scored.append(
                (
                    candidate,
                    other,
                    scoring.scorer.score(mine, scoring.scorer.features(other.values)),
                )
            )
    scored.sort(key=lambda found: (-found[2].score, found[0]))
    return scored[:limit]
