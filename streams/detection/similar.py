"""On-the-fly queries: the known documents most like any document, or containing it; the
state is not changed."""

from __future__ import annotations

import math
from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import Literal

from neardup.core import FINER_LOOKUP, Estimate, PreparedDoc, Settings, StateError
from neardup.state import StateView

from .admission import exact_twin
from .candidates import query_candidates
from .containment import query_containment, verify_containment
from .events import DocRef, Method
from .simhash import simhash_query_candidates, verify_simhash
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
    limit: int | None = None,
) -> list[Match]:
    """Known documents resembling ``doc`` (prepared with ``query=True``), best first, without
    changing the state; with them, those found through the containment index that contain
    ``DEFAULT_QUERY_CONTAINMENT`` of ``doc``, and, with ``excerpts``, those that ``doc``
    contains at that much.

    Candidates come from the same indexes as ingestion (exact fingerprints, super-shingles,
    short-document shingles, containment; in SimHash mode the SimHash tables, where every
    page within the distance is a match, method ``near``, with its estimate and distance);
    each is verified, and those with resemblance or containment (either way) of at least
    ``floor`` are returned. Excerpts cost most of a
    query: a page half inside ``doc`` may be much smaller than it, so ``doc`` looks up a
    finer sample, and most of what that meets shares too little to tell before its sketch
    is read (docs/containment.md, "Cost").

    ``limit``: the best that many only. Ranking needs only the estimates, so only the kept
    matches read their URLs and clusters (a short query may verify hundreds of candidates).
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
    if settings.sketch == "simhash":  # every page within the distance, with its estimate
        asked = [(doc, simhash_query_candidates(view, doc))]
        verified, _ = verify_simhash(view, asked, settings, 0.0)
    else:
        verified, _ = verify_all(view, [(doc, query_candidates(view, doc))], settings, 0.0)
    found: list[tuple[int, Estimate, MatchMethod]] = [(c, e, "near") for c, e in verified[0]]
    if settings.containment_sample:
        # a page half in the query is found as a stored page finds what it contains; a page
        # holding half of it, at the query's level less one (see find_containing)
        finer = FINER_LOOKUP if excerpts else _levels_below(DEFAULT_QUERY_CONTAINMENT)
        asking = doc.looking_up_at(doc.containment_level - finer)
        near = {c for c, _, _ in found} | matches.keys()  # estimated already: kept as they are
        found += [
            (c, e, "contained")
            for c, e in _containing(
                view, asking, settings, DEFAULT_QUERY_CONTAINMENT, excerpts, near
            )
        ]
    ranked: dict[int, tuple[Estimate, MatchMethod]] = {}
    for candidate, e, method in found:
        if (
            candidate not in matches
            and candidate not in ranked
            and candidate != doc.doc_id
            and max(e.resemblance, e.containment, e.containment_reverse) >= floor
        ):
            ranked[candidate] = (e, method)
    kept = _best(
        [(m.doc.doc_id, m.estimate) for m in matches.values()]
        + [(c, e) for c, (e, _) in ranked.items()],
        lambda e: (-e.resemblance, -e.containment),
        limit,
    )
    _prefetch(view, [c for c in kept if c not in matches])
    return [
        matches[c]
        if c in matches
        else Match(ref_of(view, c), ranked[c][1], ranked[c][0], view.clusters.find(c))
        for c in kept
    ]


def find_containing(
    view: StateView,
    doc: PreparedDoc,
    settings: Settings,
    threshold: float,
    excerpts: bool = False,
    limit: int | None = None,
) -> list[Match]:
    """Known documents containing at least ``threshold`` of ``doc`` (prepared with
    ``query=True``): the sources of an excerpt, most containing first; with ``excerpts``,
    also those at least ``threshold`` inside ``doc``, ranked by the larger containment;
    ``limit``: the best that many only (see find_similar)."""
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
    found: dict[int, tuple[Estimate, MatchMethod]] = {
        candidate: (e, "contained")
        for candidate, e in _containing(view, asking, settings, threshold, excerpts)
        if candidate != doc.doc_id
    }
    twin = exact_twin(view, doc)
    if (
        twin is not None
        and twin.doc_id not in found
        and twin.doc_id != doc.doc_id
        and view.documents.owner_id(twin.doc_id) is not None
    ):
        found[twin.doc_id] = (EXACT, twin.method)
    kept = _best(
        [(c, e) for c, (e, _) in found.items()],
        lambda e: (-max(e.containment, e.containment_reverse * excerpts), -e.resemblance),
        limit,
    )
    _prefetch(view, kept)
    return [Match(ref_of(view, c), found[c][1], found[c][0], view.clusters.find(c)) for c in kept]


def _prefetch(view: StateView, doc_ids: list[int]) -> None:
    """The refs and clusters of a query's matches, read at once."""
    view.documents.prefetch_refs(doc_ids)
    view.clusters.prefetch(doc_ids)


def _best(
    found: list[tuple[int, Estimate]],
    rank: Callable[[Estimate], tuple[float, float]],
    limit: int | None,
) -> list[int]:
    """The documents of ``found`` best first by ``rank`` (then by id), at most ``limit``."""
    order = sorted(found, key=lambda pair: (*rank(pair[1]), pair[0]))
    return [doc_id for doc_id, _ in order[:limit]]


def _levels_below(threshold: float) -> int:
    return math.ceil(-math.log2(threshold))


def _containing(
    view: StateView,
    doc: PreparedDoc,
    settings: Settings,
    threshold: float,
    both_ways: bool,
    known: Set[int] = frozenset(),
) -> list[tuple[int, Estimate]]:
    met = query_containment(view, doc)
    found, _ = verify_containment(
        view, [doc], met, settings, threshold, both_ways=both_ways, known=known
    )
    return found[0]
