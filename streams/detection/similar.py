"""On-the-fly resemblance: the known documents most like any document, state unchanged."""

from __future__ import annotations

from dataclasses import dataclass

from neardup.core import Estimate, PreparedDoc, Settings
from neardup.state import StateView

from .candidates import query_candidates
from .events import DocRef, Method
from .stages import EXACT, exact_twin, ref_of, verify_all

__all__ = ["Match", "find_similar"]


@dataclass(frozen=True, slots=True)
class Match:
    """A known document that resembles the one asked about."""

    doc: DocRef
    method: Method
    estimate: Estimate
    cluster: int


def find_similar(
    view: StateView, doc: PreparedDoc, settings: Settings, floor: float = 0.0
) -> list[Match]:
    """Known documents resembling ``doc``, best first, without changing the state.

    Candidates come from the same indexes as ingestion (exact fingerprints, super-shingles,
    short-document shingles); each is verified, and those with resemblance or containment
    (either way) of at least ``floor`` are returned.
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
    for candidate, e in verified[0]:
        if (
            candidate not in matches
            and max(e.resemblance, e.containment, e.containment_reverse) >= floor
        ):
            ref = ref_of(view, candidate)
            matches[candidate] = Match(ref, "near", e, view.clusters.find(candidate))
    return sorted(
        matches.values(),
        key=lambda m: (-m.estimate.resemblance, -m.estimate.containment, m.doc.doc_id),
    )
