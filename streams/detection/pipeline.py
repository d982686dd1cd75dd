"""The detection stages after ``prepare``: exact shortcuts, candidates, verification, union.

``ingest`` runs them for one prepared document against a StateView; ``Detector`` runs a whole
batch of pages in one transaction. The Kafka topology calls the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from neardup.core import (
    Estimate,
    Page,
    PreparedDoc,
    Preparer,
    Settings,
    Sketch,
    StateError,
    estimate_columns,
    sketch_family,
)
from neardup.state import (
    DocRecord,
    FingerprintKind,
    FingerprintTable,
    State,
    StateView,
    pack_sample,
    unpack_samples,
)

from .candidates import batch_candidates, query_candidates
from .events import ClusterMerged, DocRef, Duplicate, Event

__all__ = [
    "BatchResult",
    "Detector",
    "Match",
    "find_similar",
    "ingest",
    "ingest_batch",
    "stored_sketch",
]

_EXACT_METHODS = (
    (FingerprintKind.RAW, "exact"),
    (FingerprintKind.CANONICAL, "canonical"),
    (FingerprintKind.SHINGLE_SET, "shingle"),
)
_EXACT = Estimate(1.0, 1.0, 1.0, True)


def _fingerprint_keys(doc: PreparedDoc) -> list[tuple[bytes, str]]:
    """The document's fingerprint-table keys with their methods, in the order they count."""
    prints = doc.fingerprints
    return [
        (FingerprintTable.key(kind, fingerprint), method)
        for (kind, method), fingerprint in zip(
            _EXACT_METHODS, (prints.raw, prints.canonical, prints.shingle_set), strict=True
        )
        if fingerprint is not None
    ]


def stored_sketch(record: DocRecord, settings: Settings) -> Sketch:
    return Sketch(
        record.sketch, record.shingle_count, settings.sample_size, sketch_family(settings)
    )


@dataclass(frozen=True, slots=True)
class Match:
    """A known document that resembles the one asked about."""

    doc: DocRef
    method: str
    estimate: Estimate
    cluster: int


def _ref_of(view: StateView, doc_id: int) -> DocRef:
    found = view.documents.ref(doc_id)
    return DocRef(doc_id, found[1], found[0]) if found else DocRef(doc_id, "", "")


def _exact_twin(view: StateView, doc: PreparedDoc) -> tuple[int, str] | None:
    for key, method in _fingerprint_keys(doc):
        if (twin := view.fingerprints.lookup(key)) is not None:
            return twin, method
    return None


def _verify_all(
    view: StateView,
    queries: list[tuple[PreparedDoc, set[int]]],
    settings: Settings,
    floor: float,
    local: dict[int, PreparedDoc] | None = None,
) -> tuple[list[list[tuple[int, Estimate]]], int]:
    """Estimate every (document, candidate) pair in one vectorised call; for each document,
    the candidates whose estimate passes ``floor`` (resemblance, or with ``floor`` 0 all),
    with their estimates; and how many pairs were estimated.

    Candidates come from the store, or from ``local``: documents of the same batch that are
    not stored yet. A pair whose shingle counts alone rule out resemblance ``floor``
    (J <= min/max) is not estimated.
    """
    local = local or {}
    wanted = set[int]().union(*(cands for _, cands in queries))
    stored = sorted(wanted - local.keys())
    view.documents.prefetch(stored)
    kept: dict[int, tuple[int, bytes | memoryview] | None] = {
        doc_id: view.documents.sketch(doc_id) for doc_id in stored
    }
    for doc_id in wanted & local.keys():  # each packed once, however many documents meet it
        earlier = local[doc_id]
        kept[doc_id] = earlier.shingle_count, pack_sample(earlier.sketch.values)
    samples: list[bytes | memoryview] = []
    counts: list[int] = []
    owners: list[tuple[int, int]] = []
    for index, (doc, candidates) in enumerate(queries):
        count = doc.shingle_count
        for candidate in sorted(candidates - {doc.doc_id}):
            if (sample := kept[candidate]) is None:
                continue  # gone, or a twin: its original is the candidate that counts
            if floor > 0 and min(count, sample[0]) < floor * max(count, sample[0]):
                continue
            counts.append(sample[0])
            samples.append(sample[1])
            owners.append((index, candidate))
    queried = [queries[index][0] for index, _ in owners]
    resemblance, containment, reverse, exact = estimate_columns(
        [doc.sketch.values for doc in queried],
        [doc.shingle_count for doc in queried],
        unpack_samples(samples),
        counts,
        settings.sample_size,
    )
    found: list[list[tuple[int, Estimate]]] = [[] for _ in queries]
    for position in np.flatnonzero(resemblance >= floor).tolist():
        index, candidate = owners[position]
        estimate = Estimate(
            float(resemblance[position]),
            float(containment[position]),
            float(reverse[position]),
            bool(exact[position]),
        )
        found[index].append((candidate, estimate))
    return found, len(owners)


def _admit(
    view: StateView, doc: PreparedDoc, keys: list[tuple[bytes, str]]
) -> tuple[int, str] | bool | None:
    """Register a new document's URL and fingerprints (``keys``: its ``_fingerprint_keys``).
    False for a document already known; else its exact twin (doc id, method), or None. The
    caller counts documents and repeats."""
    if view.documents.exists(doc.doc_id):
        return False
    view.urls.add(doc.page.url, doc.page.fetched_at, doc.doc_id)
    twin = None
    fingerprints = view.fingerprints
    for key, method in keys:  # the first one known names the twin
        known = fingerprints.lookup(key)
        if known is None:
            fingerprints.register(key, doc.doc_id)
        elif twin is None:
            twin = known, method
    return twin


def _store_twin(view: StateView, doc: PreparedDoc, twin: tuple[int, str]) -> list[Event]:
    """An exact/canonical/shingle twin keeps no sketch and joins the twin's cluster."""
    twin_id, method = twin
    owner = view.documents.owner_id(twin_id)
    twin_ref = view.documents.ref(twin_id)
    if owner is None or twin_ref is None:
        raise StateError(f"fingerprint table points at missing document {twin_id:016x}")
    page = doc.page
    view.documents.put(
        doc.doc_id,
        DocRecord(
            page.url,
            page.fetched_at,
            doc.shingle_count,
            np.zeros(0, np.uint32),
            duplicate_of=owner,
        ),
    )
    me = DocRef(doc.doc_id, page.url, page.fetched_at)
    return _join(view, me, [(twin_id, method, _EXACT)])


def _store_and_join(
    view: StateView, doc: PreparedDoc, found: list[tuple[int, Estimate]]
) -> list[Event]:
    page = doc.page
    view.documents.put(
        doc.doc_id, DocRecord(page.url, page.fetched_at, doc.shingle_count, doc.sketch.values)
    )
    if not found:
        return []
    me = DocRef(doc.doc_id, page.url, page.fetched_at)
    return _join(view, me, [(candidate, "near", estimate) for candidate, estimate in found])


def ingest_batch(view: StateView, docs: list[PreparedDoc], settings: Settings) -> list[Event]:
    """Add prepared documents, in order, to the state; the events they cause, in order.

    The result is the same as adding them one at a time: fingerprints are registered in
    order, each document's candidates are the documents before it (in the batch or already
    stored) that it meets in the indexes and that pass their filters (``candidates.py``), and
    joins happen in order. Only the index reads and writes are grouped, which keeps Python
    work per key to a minimum.
    """
    view.documents.prefetch(doc.doc_id for doc in docs)
    keys = [_fingerprint_keys(doc) for doc in docs]
    view.fingerprints.prefetch(key for doc_keys in keys for key, _ in doc_keys)
    admitted: list[tuple[PreparedDoc, tuple[int, str] | bool | None]] = []
    seen: set[int] = set()
    for doc, doc_keys in zip(docs, keys, strict=True):
        if doc.doc_id in seen:  # delivered twice in one batch: stored once, like across batches
            admitted.append((doc, False))
        else:
            seen.add(doc.doc_id)
            admitted.append((doc, _admit(view, doc, doc_keys)))
    repeats = sum(twin is False for _, twin in admitted)
    view.counters.add("repeats", repeats)
    view.counters.add("documents", len(docs) - repeats)
    fresh = [doc for doc, twin in admitted if twin is None]
    candidates = batch_candidates(view, fresh, settings)
    verified, estimated = _verify_all(
        view,
        list(zip(fresh, candidates, strict=True)),
        settings,
        settings.threshold,
        local={doc.doc_id: doc for doc in fresh},
    )
    # the work the corpus asks for: what an operator watches when time per document grows
    view.counters.add("candidates", sum(map(len, candidates)))
    view.counters.add("pairs_estimated", estimated)
    matches = {doc.doc_id: found for doc, found in zip(fresh, verified, strict=True)}
    events: list[Event] = []
    for doc, twin in admitted:
        if twin is None:
            events.extend(_store_and_join(view, doc, matches[doc.doc_id]))
        elif twin is not False:
            assert not isinstance(twin, bool)
            events.extend(_store_twin(view, doc, twin))
    view.counters.add("duplicates", sum(isinstance(event, Duplicate) for event in events))
    return events


def ingest(view: StateView, doc: PreparedDoc, settings: Settings) -> list[Event]:
    """Add one prepared document to the state; the events it causes, in order."""
    return ingest_batch(view, [doc], settings)


def _join(view: StateView, me: DocRef, matches: list[tuple[int, str, Estimate]]) -> list[Event]:
    """Union the new document with every match (doc id, method, estimate); the oldest matched
    cluster keeps its id. Only the best match is named, so only its record is read."""
    clusters = view.clusters
    roots = {clusters.find(doc_id) for doc_id, _, _ in matches}
    ordered = sorted(roots, key=clusters.age)
    survivor = ordered[0]
    size = clusters.merge(survivor, me.doc_id)
    best_id, method, estimate = max(
        matches, key=lambda m: (m[2].resemblance, m[2].containment, -m[0])
    )
    merged: list[Event] = []
    for retired in ordered[1:]:
        size = clusters.merge(survivor, retired)
        merged.append(
            ClusterMerged(
                survivor, retired, size, me, _ref_of(view, survivor), _ref_of(view, retired)
            )
        )
    duplicate = Duplicate(
        me,
        _ref_of(view, best_id),  # stored: stores go in order, and matches are earlier ones
        method,
        estimate.resemblance,
        estimate.containment,
        survivor,
        size,
    )
    return [duplicate, *merged]


def find_similar(
    view: StateView, doc: PreparedDoc, settings: Settings, floor: float = 0.0
) -> list[Match]:
    """Known documents resembling ``doc``, best first, without changing the state.

    Candidates come from the same indexes as ingestion (exact fingerprints, super-shingles,
    short-document shingles); each is verified, and those with resemblance or containment
    (either way) of at least ``floor`` are returned.
    """
    matches: dict[int, Match] = {}
    twin = _exact_twin(view, doc)
    if twin is not None:
        owner = view.documents.owner_id(twin[0])
        twin_ref = view.documents.ref(twin[0])
        if owner is not None and twin_ref is not None and twin[0] != doc.doc_id:
            matches[twin[0]] = Match(
                DocRef(twin[0], twin_ref[1], twin_ref[0]),
                twin[1],
                _EXACT,
                view.clusters.find(twin[0]),
            )
    verified, _ = _verify_all(view, [(doc, query_candidates(view, doc))], settings, 0.0)
    for candidate, e in verified[0]:
        if (
            candidate not in matches
            and max(e.resemblance, e.containment, e.containment_reverse) >= floor
        ):
            ref = _ref_of(view, candidate)
            matches[candidate] = Match(ref, "near", e, view.clusters.find(candidate))
    return sorted(
        matches.values(),
        key=lambda m: (-m.estimate.resemblance, -m.estimate.containment, m.doc.doc_id),
    )


@dataclass(slots=True)
class BatchResult:
    events: list[Event] = field(default_factory=list)
    documents: int = 0
    repeats: int = 0
    #: documents proposed by the indexes past their filters, and (document, candidate) pairs
    #: whose resemblance was estimated
    candidates: int = 0
    pairs_estimated: int = 0


class Detector:
    """The embedded detector: batches of pages in, events out, one transaction per batch."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.settings = state.settings

    @cached_property
    def preparer(self) -> Preparer:
        """Made when first used: the embedded runner and the Kafka worker prepare pages
        elsewhere (a thread or a child process) and only ``ingest`` here."""
        return Preparer(self.settings)

    def process(self, pages: list[Page]) -> BatchResult:
        return self.ingest(self.preparer.prepare(pages))

    def ingest(self, prepared: list[PreparedDoc]) -> BatchResult:
        """The second half of ``process``, for pages prepared elsewhere (another thread)."""
        view, result = self.stage(prepared)
        view.commit()
        return result

    def stage(self, prepared: list[PreparedDoc]) -> tuple[StateView, BatchResult]:
        """``ingest`` without the commit: the caller may act on the events (send them) and
        add writes of its own before ``view.commit()`` makes the batch durable, or drop the
        view to forget the batch."""
        view = self.state.view()
        result = BatchResult()
        counted = ("repeats", "candidates", "pairs_estimated")
        before = [view.counters.get(name) for name in counted]
        result.events = ingest_batch(view, prepared, self.settings)
        result.repeats, result.candidates, result.pairs_estimated = (
            view.counters.get(name) - start for name, start in zip(counted, before, strict=True)
        )
        result.documents = len(prepared) - result.repeats
        return view, result
