"""What one batch did: its events and its counts, made once by the detector.

The state's counters, the embedded run's summary and the Kafka detector all take their
numbers from this one value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .events import METHODS, Event, Method

__all__ = ["BatchResult"]


def _no_duplicates() -> Mapping[Method, int]:
    return MappingProxyType(dict.fromkeys(METHODS, 0))


@dataclass(frozen=True, slots=True)
class BatchResult:
    """The events of a batch, in order, and what it counted."""

    events: tuple[Event, ...] = ()
    #: new documents, and deliveries of documents already known (same url and fetched_at)
    documents: int = 0
    repeats: int = 0
    #: duplicates found, by how they were found
    duplicates_by_method: Mapping[Method, int] = field(default_factory=_no_duplicates)
    #: clusters retired by a merge
    merges: int = 0
    #: documents the indexes proposed past their filters, and the (document, candidate)
    #: pairs whose resemblance was estimated: the work a document costs
    candidates: int = 0
    pairs_estimated: int = 0

    @property
    def duplicates(self) -> int:
        return sum(self.duplicates_by_method.values())

    def counter_increments(self) -> dict[str, int]:
        """What the batch adds to the state's stored counters (``neardup stats``)."""
        return {
            "documents": self.documents,
            "repeats": self.repeats,
            "duplicates": self.duplicates,
            **{f"duplicates:{m}": n for m, n in self.duplicates_by_method.items()},
            "cluster_merges": self.merges,
            "candidates": self.candidates,
            "pairs_estimated": self.pairs_estimated,
        }
