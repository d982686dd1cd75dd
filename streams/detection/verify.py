"""Verification: estimated resemblance and containment of (document, candidate) pairs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import numpy as np
from neardup.core import (
    Estimate,
    PreparedDoc,
    Samples,
    Settings,
    Sketch,
    estimate_columns,
    sketch_family,
)
from neardup.state import DocRecord, StateView, unpack_samples, whole_sample

__all__ = ["EXACT", "pairs_to_estimate", "stored_sketch", "verify_all"]

#: the estimate of an exact twin: its sets are the same
EXACT = Estimate(1.0, 1.0, 1.0, True)


def stored_sketch(record: DocRecord, settings: Settings) -> Sketch:
    return Sketch(
        record.sketch, record.shingle_count, settings.sample_kept, sketch_family(settings)
    )


Record = TypeVar("Record", bound=tuple[Any, ...])


def pairs_to_estimate(
    queries: list[tuple[PreparedDoc, set[int]]],
    kept: Mapping[int, Record | None],
    floor: float,
) -> tuple[list[tuple[int, int]], list[Record]]:
    """The (query index, candidate) pairs worth estimating, in order, with each candidate's
    kept record (its shingle count first): a candidate without one (gone, or a twin: its
    original is the candidate that counts) is left out, and so is a pair whose shingle counts
    alone rule out resemblance ``floor`` (J <= min/max)."""
    owners: list[tuple[int, int]] = []
    records: list[Record] = []
    for index, (doc, candidates) in enumerate(queries):
        count = doc.shingle_count
        for candidate in sorted(candidates - {doc.doc_id}):
            if (record := kept[candidate]) is None:
                continue
            if floor > 0 and min(count, record[0]) < floor * max(count, record[0]):
                continue
            owners.append((index, candidate))
            records.append(record)
    return owners, records


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
        kept[doc_id] = earlier.shingle_count, whole_sample(earlier.sketch.values)
    owners, records = pairs_to_estimate(queries, kept, floor)
    counts = [record[0] for record in records]
    queried = [queries[index][0] for index, _ in owners]
    resemblance, containment, reverse, exact = estimate_columns(
        [doc.sketch.values for doc in queried],
        [doc.shingle_count for doc in queried],
        _candidate_samples(owners, records),
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


def _candidate_samples(
    owners: list[tuple[int, int]], records: list[tuple[int, bytes | memoryview]]
) -> Samples:
    """Each pair's candidate sketch, each candidate unpacked once however many documents of
    the batch meet it (a quarter of the pairs of the 20k corpus)."""
    first: dict[int, int] = {}
    parts: list[bytes | memoryview] = []
    for (_, candidate), (_, part) in zip(owners, records, strict=True):
        if candidate not in first:
            first[candidate] = len(parts)
            parts.append(part)
    unpacked = unpack_samples(parts)
    if len(parts) == len(owners):
        return unpacked
    return unpacked.take(np.fromiter((first[c] for _, c in owners), np.intp, len(owners)))
