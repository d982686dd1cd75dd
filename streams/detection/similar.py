"""On-the-fly queries: the known documents most like any document, or containing it; the
state is not changed."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from neardup.core import FINER_LOOKUP, Estimate, PreparedDoc, Settings, StateError
from neardup.state import StateView

from .admission import exact_twin
from .candidates import query_candidates
from .containment import query_containment, verify_containment
from .events import DocRef, Method
from .union import ref_of
from .verify import EXACT, verify_all

__all__ = ["DEFAULT_QUERY_CONTAINMENT", "Match", "MatchMethod", "find_containing", "find_similar"]

#: the containment at which the default query also reports a document it did not find
#: through resemblance: a page holding that much of it (its source, for an excerpt), and,
#: asked for excerpts, a page that much inside it
DEFAULT_QUERY_CONTAINMENT = 0.5

#: how a match was found: a duplicate method, or ``contained`` (through the containment
#: index: one holds at least the asked containment of the other)
MatchMethod = Method | Literal["contained"]


@dataclass(frozen=True, slots=True)
class Match:
    """A known document that resembles the one asked about, or contains it, or is in it."""

    doc: DocRef
    method: MatchMethod
    estimate: Estimate
    cluster: int


def find_similar(
    view: StateView,
    doc: PreparedDoc,
    settings: Settings,
    floor: float = 0.0,
    excerpts: bool = False,
) -> list[Match]:
    """Known documents resembling ``doc`` (prepared with ``query=True``), best first, without
    changing the state; with them, those found through the containment index that contain
    ``DEFAULT_QUERY_CONTAINMENT`` of ``doc``, and, with ``excerpts``, those that ``doc``
    contains at that much.

    Candidates come from the same indexes as ingestion (exact fingerprints, super-shingles,
    short-document shingles, containment); each is verified, and those with resemblance or
    containment (either way) of at least ``floor`` are returned. Excerpts cost most of a
    query: a page half inside ``doc`` may be much smaller than it, so ``doc`` looks up a
    finer sample, and most of what that meets shares too little to tell before its sketch
    is read (3 ms against 1.3 ms on a 100k-document state).
    """
    matches: dict[int, Match] = {}
    twin = exact_twin(view, doc)
    if twin is not None and twin.doc_id != doc.doc_id:
        twin_ref = view.documents.ref(twin.doc_id)
        if view.documents.owner_id(twin.doc_id) is not None and twin_ref is not None:
            matches[twin.doc_id] = Match(
                DocRef(twin.doc_id, twin_ref.url, twin_ref.fetched_at),
                twin.method,
                EXACT,
                view.clusters.find(twin.doc_id),
            )
    verified, _ = verify_all(view, [(doc, query_candidates(view, doc))], settings, 0.0)
    found: list[tuple[int, Estimate, MatchMethod]] = [(c, e, "near") for c, e in verified[0]]
    if settings.containment_sample:
        # a page half in the query is found as a stored page finds what it contains; a page
        # holding half of it, at the query's level less one (see find_containing)
        finer = FINER_LOOKUP if excerpts else _levels_below(DEFAULT_QUERY_CONTAINMENT)
        asking = doc.looking_up_at(doc.containment_level - finer)
        found += [
            (c, e, "contained")
            for c, e in _containing(view, asking, settings, DEFAULT_QUERY_CONTAINMENT, excerpts)
        ]
    for candidate, e, method in found:
        if (
            candidate not in matches
            and candidate != doc.doc_id
            and max(e.resemblance, e.containment, e.containment_reverse) >= floor
        ):
            ref = ref_of(view, candidate)
            matches[candidate] = Match(ref, method, e, view.clusters.find(candidate))
    return sorted(
        matches.values(),
        key=lambda m: (-m.estimate.resemblance, -m.estimate.containment, m.doc.doc_id),
    )


def find_containing(
    view: StateView,
    doc: PreparedDoc,
    settings: Settings,
    threshold: float,
    excerpts: bool = False,
) -> list[Match]:
    """Known documents containing at least ``threshold`` of ``doc`` (prepared with
    ``query=True``): the sources of an excerpt, most containing first; with ``excerpts``,
    also those at least ``threshold`` inside ``doc``, ranked by the larger containment."""
    if not settings.containment_sample:
        raise StateError(
            "this state keeps no containment index (it was built with containment_sample 0): "
            "build one with containment_sample > 0 to ask for containment"
        )
    # a page holding C of the query has at least C times its shingles, so its level is at
    # most log2(1/C) below the query's: the query's keys of that level meet all it shares
    finer = _levels_below(threshold)
    if excerpts:  # a page inside the query may be much smaller: see find_similar
        finer = max(finer, FINER_LOOKUP)
    asking = doc.looking_up_at(doc.containment_level - finer)
    matches = [
        Match(ref_of(view, candidate), "contained", e, view.clusters.find(candidate))
        for candidate, e in _containing(view, asking, settings, threshold, excerpts)
        if candidate != doc.doc_id
    ]
    twin = exact_twin(view, doc)
    listed = {m.doc.doc_id for m in matches}
    if (
        twin is not None
        and twin.doc_id not in listed | {doc.doc_id}
        and view.documents.owner_id(twin.doc_id) is not None
    ):
        cluster = view.clusters.find(twin.doc_id)
        matches.append(Match(ref_of(view, twin.doc_id), twin.method, EXACT, cluster))
    return sorted(
        matches,
        key=lambda m: (
            -max(m.estimate.containment, m.estimate.containment_reverse * excerpts),
            -m.estimate.resemblance,
            m.doc.doc_id,
        ),
    )


def _levels_below(threshold: float) -> int:
    return math.ceil(-math.log2(threshold))


def _containing(
    view: StateView, doc: PreparedDoc, settings: Settings, threshold: float, both_ways: bool
) -> list[tuple[int, Estimate]]:
    met = query_containment(view, doc)
    found, _ = verify_containment(view, [doc], met, settings, threshold, both_ways=both_ways)
    return found[0]
