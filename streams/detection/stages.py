"""The detection stages of a batch in one state view: exact, candidates, verify, union."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

import numpy as np
from neardup.core import (
    Estimate,
    PreparedDoc,
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
    StateView,
    pack_sample,
    unpack_samples,
)

from .candidates import batch_candidates
from .containment import (
    ContainmentPair,
    meet_containment,
    post_containment,
    verify_containment,
)
from .events import METHODS, ClusterMerged, Contained, DocRef, Duplicate, Event, Method
from .result import BatchResult

__all__ = [
    "EXACT",
    "Admission",
    "Twin",
    "exact_twin",
    "fingerprint_keys",
    "ingest_batch",
    "ref_of",
    "stored_sketch",
    "verify_all",
]

_EXACT_METHODS: tuple[tuple[FingerprintKind, Method], ...] = (
    (FingerprintKind.RAW, "exact"),
    (FingerprintKind.CANONICAL, "canonical"),
    (FingerprintKind.SHINGLE_SET, "shingle"),
)
#: the estimate of an exact twin: its sets are the same
EXACT = Estimate(1.0, 1.0, 1.0, True)


class Admission(Enum):
    """What admitting a document found, when it is not a twin of a known one."""

    NEW = "new"  # to be sketched, indexed and verified
    REPEAT = "repeat"  # already known (same url and fetched_at): nothing to do


@dataclass(frozen=True, slots=True)
class Twin:
    """The known document a new one is an exact, canonical or shingle-set copy of."""

    doc_id: int
    method: Method


def fingerprint_keys(doc: PreparedDoc) -> list[tuple[bytes, Method]]:
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


def ref_of(view: StateView, doc_id: int) -> DocRef:
    found = view.documents.ref(doc_id)
    return DocRef(doc_id, found.url, found.fetched_at) if found else DocRef(doc_id, "", "")


def exact_twin(view: StateView, doc: PreparedDoc) -> Twin | None:
    for key, method in fingerprint_keys(doc):
        if (twin := view.fingerprints.lookup(key)) is not None:
            return Twin(twin, method)
    return None


def verify_all(
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


def _admit(view: StateView, doc: PreparedDoc, keys: list[tuple[bytes, Method]]) -> Admission | Twin:
    """Register a new document's URL and fingerprints (``keys``: its ``fingerprint_keys``):
    REPEAT for a document already known; else its exact twin, or NEW."""
    if view.documents.exists(doc.doc_id):
        return Admission.REPEAT
    view.urls.add(doc.page.url, doc.page.fetched_at, doc.doc_id)
    twin: Admission | Twin = Admission.NEW
    fingerprints = view.fingerprints
    for key, method in keys:  # the first one known names the twin
        known = fingerprints.lookup(key)
        if known is None:
            fingerprints.register(key, doc.doc_id)
        elif twin is Admission.NEW:
            twin = Twin(known, method)
    return twin


def _store_twin(view: StateView, doc: PreparedDoc, twin: Twin) -> list[Event]:
    """An exact/canonical/shingle twin keeps no sketch and joins the twin's cluster."""
    owner = view.documents.owner_id(twin.doc_id)
    if owner is None or view.documents.ref(twin.doc_id) is None:
        raise StateError(f"fingerprint table points at missing document {twin.doc_id:016x}")
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
    return _join(view, me, [(twin.doc_id, twin.method, EXACT)])


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


def ingest_batch(view: StateView, docs: list[PreparedDoc], settings: Settings) -> BatchResult:
    """Add prepared documents, in order, to the state; the events they cause, in order, and
    what the batch counted (also added to the state's counters).

    The result is the same as adding them one at a time: fingerprints are registered in
    order, each document's candidates are the documents before it (in the batch or already
    stored) that it meets in the indexes and that pass their filters (``candidates.py``), and
    joins happen in order. Only the index reads and writes are grouped, which keeps Python
    work per key to a minimum.
    """
    started = time.perf_counter()
    view.documents.prefetch(doc.doc_id for doc in docs)
    keys = [fingerprint_keys(doc) for doc in docs]
    view.fingerprints.prefetch(key for doc_keys in keys for key, _ in doc_keys)
    admitted: list[tuple[PreparedDoc, Admission | Twin]] = []
    seen: set[int] = set()
    for doc, doc_keys in zip(docs, keys, strict=True):
        if doc.doc_id in seen:  # delivered twice in one batch: stored once, like across batches
            admitted.append((doc, Admission.REPEAT))
        else:
            seen.add(doc.doc_id)
            admitted.append((doc, _admit(view, doc, doc_keys)))
    repeats = sum(found is Admission.REPEAT for _, found in admitted)
    fresh = [doc for doc, found in admitted if found is Admission.NEW]
    candidates = batch_candidates(view, fresh, settings)
    contained_met = None
    if settings.containment_sample:  # the index is kept whether or not events are asked for
        if settings.containment_threshold is not None:
            contained_met = meet_containment(view, fresh)
        post_containment(view, fresh)
    found = time.perf_counter()
    local = {doc.doc_id: doc for doc in fresh}
    verified, estimated = verify_all(
        view, list(zip(fresh, candidates, strict=True)), settings, settings.threshold, local
    )
    matches = {doc.doc_id: matched for doc, matched in zip(fresh, verified, strict=True)}
    contained: dict[int, list[ContainmentPair]] = {}
    if contained_met is not None and settings.containment_threshold is not None:
        pairs, more = verify_containment(
            view, fresh, contained_met, settings, settings.containment_threshold, local
        )
        contained = {doc.doc_id: found for doc, found in zip(fresh, pairs, strict=True)}
        estimated += more
    checked = time.perf_counter()
    events: list[Event] = []
    for doc, admission in admitted:
        if admission is Admission.NEW:
            events.extend(_store_and_join(view, doc, matches[doc.doc_id]))
            events.extend(_contained(view, doc, contained.get(doc.doc_id, []), matches[doc.doc_id]))
        elif isinstance(admission, Twin):
            events.extend(_store_twin(view, doc, admission))
    by_method = Counter(event.method for event in events if isinstance(event, Duplicate))
    result = BatchResult(
        events=tuple(events),
        documents=len(docs) - repeats,
        repeats=repeats,
        duplicates_by_method={method: by_method[method] for method in METHODS},
        merges=sum(isinstance(event, ClusterMerged) for event in events),
        contained=sum(isinstance(event, Contained) for event in events),
        candidates=sum(map(len, candidates)),
        pairs_estimated=estimated,
        stage_seconds=MappingProxyType(
            {
                "candidates": found - started,
                "verify": checked - found,
                "union": time.perf_counter() - checked,
            }
        ),
    )
    view.counters.add_many(result.counter_increments())
    return result


#: contained events per new document at most (the highest containments): a passage quoted
#: everywhere (a licence, a disclaimer) would otherwise name every page that quotes it
MAX_CONTAINED_EVENTS = 100


def _contained(
    view: StateView,
    doc: PreparedDoc,
    found: list[ContainmentPair],
    near: list[tuple[int, Estimate]],
) -> list[Event]:
    """The contained events of a new document: the pairs past the containment threshold,
    but not the near-duplicates it joined (their duplicate event says so)."""
    joined = {doc_id for doc_id, _ in near}
    kept = sorted(
        ((doc_id, e) for doc_id, e in found if doc_id not in joined),
        key=lambda pair: (-max(pair[1].containment, pair[1].containment_reverse), pair[0]),
    )[:MAX_CONTAINED_EVENTS]
    page = doc.page
    me = DocRef(doc.doc_id, page.url, page.fetched_at)
    return [
        Contained(
            me,
            ref_of(view, doc_id),
            e.containment,
            e.containment_reverse,
            e.resemblance,
            e.exact,
        )
        for doc_id, e in kept
    ]


def _join(view: StateView, me: DocRef, matches: list[tuple[int, Method, Estimate]]) -> list[Event]:
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
                survivor, retired, size, me, ref_of(view, survivor), ref_of(view, retired)
            )
        )
    duplicate = Duplicate(
        me,
        ref_of(view, best_id),  # stored: stores go in order, and matches are earlier ones
        method,
        estimate.resemblance,
        estimate.containment,
        survivor,
        size,
    )
    return [duplicate, *merged]
