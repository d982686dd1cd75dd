"""SimHash mode's candidates and their check (``Settings.sketch == "simhash"``).

A page is posted under its key in each of Manku's tables (``core/simhash_tables.py``), in
one posting index, capped like the others; every page within Hamming distance k of it
shares one of those keys. A candidate met there passes the length filter at the verifier's
floor (its size class is in its posting entry), then its SimHash is read with its sample:
only a pair within distance k is estimated from the two 16-value samples, and joins at an
estimated resemblance of ``Settings.join_floor`` or more. The distance is the finding; the
sample keeps out pages whose words are alike and whose text is not (docs/simhash.md).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from neardup.core import Estimate, PreparedDoc, Settings, estimate_columns, may_resemble, size_class
from neardup.core.simhash import hamming
from neardup.core.simhash_tables import DEFAULT_DISTANCE
from neardup.state import StateView, unpack_samples, whole_sample

from .verify import pairs_to_estimate

__all__ = ["SIMHASH_DISTANCE", "simhash_candidates", "simhash_query_candidates", "verify_simhash"]

#: k: pairs within this Hamming distance are found (the tables are made for it)
SIMHASH_DISTANCE = DEFAULT_DISTANCE


def simhash_candidates(
    view: StateView,
    docs: list[PreparedDoc],
    settings: Settings,
    posting: list[bool] | None = None,
) -> list[set[int]]:
    """``candidates.batch_candidates`` for SimHash mode: post new documents (admitted as new,
    in order) under their table keys; each one's candidates among the documents before it
    whose size class allows the verifier's floor. ``posting``: as there."""
    counts = np.fromiter((doc.shingle_count for doc in docs), np.int64, len(docs))
    met = view.simhashes.meet_batch(
        [doc.simhash_keys for doc in docs],
        [doc.doc_id for doc in docs],
        size_class(counts).tolist(),
        new_documents=True,
        posting=posting,
    )
    owners = met.owners()
    return met.chosen(may_resemble(counts[owners], met.sizes, settings.join_floor))


def simhash_query_candidates(view: StateView, doc: PreparedDoc) -> set[int]:
    """Every document sharing a (non-stop) table key with ``doc``, without posting it."""
    return view.simhashes.candidates(doc.simhash_keys)


def verify_simhash(
    view: StateView,
    queries: list[tuple[PreparedDoc, set[int]]],
    settings: Settings,
    floor: float,
    local: dict[int, PreparedDoc] | None = None,
) -> tuple[list[list[tuple[int, Estimate]]], int]:
    """``verify.verify_all`` for SimHash mode: of each document's candidates, those within
    ``SIMHASH_DISTANCE`` whose samples estimate a resemblance of at least ``floor`` (with
    ``floor`` 0, every one within the distance), with their estimates and distances; and how
    many pairs were estimated (those within the distance).

    Candidates come from the store, or from ``local`` (documents of the same batch, not
    stored yet). A pair whose shingle counts alone rule out ``floor`` is not read further."""
    local = local or {}
    wanted = set[int]().union(*(cands for _, cands in queries))
    stored = sorted(wanted - local.keys())
    view.documents.prefetch(stored)
    kept: dict[int, tuple[int, int, bytes | memoryview] | None] = {
        doc_id: view.documents.simhash_sketch(doc_id) for doc_id in stored
    }
    for doc_id in wanted & local.keys():
        earlier = local[doc_id]
        kept[doc_id] = earlier.shingle_count, earlier.simhash, whole_sample(earlier.sketch.values)
    owners, records = pairs_to_estimate(queries, kept, floor)
    counts = [record[0] for record in records]
    theirs = [record[1] for record in records]
    samples = [record[2] for record in records]
    found: list[list[tuple[int, Estimate]]] = [[] for _ in queries]
    if not owners:
        return found, 0
    mine = np.fromiter((queries[index][0].simhash for index, _ in owners), np.uint64, len(owners))
    distances = hamming(mine, np.array(theirs, np.uint64))
    close: list[int] = np.flatnonzero(distances <= SIMHASH_DISTANCE).tolist()
    if not close:
        return found, 0
    queried = [queries[owners[at][0]][0] for at in close]
    resemblance, containment, reverse, exact = estimate_columns(
        [doc.sketch.values for doc in queried],
        [doc.shingle_count for doc in queried],
        unpack_samples([samples[at] for at in close]),
        [counts[at] for at in close],
        settings.sample_kept,
    )
    passed: npt.NDArray[np.intp] = np.flatnonzero(resemblance >= floor)
    for position in passed.tolist():
        at = close[position]
        index, candidate = owners[at]
        estimate = Estimate(
            float(resemblance[position]),
            float(containment[position]),
            float(reverse[position]),
            bool(exact[position]),
            int(distances[at]),
        )
        found[index].append((candidate, estimate))
    return found, len(close)
