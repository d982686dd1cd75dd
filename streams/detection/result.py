"""What one batch did: its events and its counts, made once by the detector.

The state's counters, the embedded run's summary and the Kafka detector all take their
numbers from this one value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol, get_args

from .events import METHODS, Event, Method

__all__ = ["STAGES", "BatchListener", "BatchResult", "Stage"]

#: where a batch's time goes, in order: preparing pages (before the detector), finding
#: candidates (fingerprints, index reads and writes, filters), verifying them, storing and
#: joining clusters, and making the batch durable (after the detector)
Stage = Literal["prepare", "candidates", "verify", "union", "commit"]
STAGES: tuple[Stage, ...] = get_args(Stage)


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
    #: clusters retired by a merge, and clusters cut by a split (item mode)
    merges: int = 0
    splits: int = 0
    #: contained events (``Settings.containment_threshold``)
    contained: int = 0
    #: urls whose latest version changed, and urls deleted (``Settings.versions``): the
    #: departed versions leave the count of documents (live urls)
    changed: int = 0
    removed: int = 0
    #: records that made no document: deletions, unchanged fetches, fetches older than
    #: their url's version or the same content again, a version superseded in its batch
    version_records: int = 0
    #: documents the indexes proposed past their filters, and the (document, candidate)
    #: pairs whose resemblance was estimated: the work a document costs
    candidates: int = 0
    pairs_estimated: int = 0
    #: seconds spent in the detector's own stages (candidates, verify, union); not part of
    #: what a batch *did*, so two results compare equal without it
    stage_seconds: Mapping[Stage, float] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )

    @property
    def duplicates(self) -> int:
        return sum(self.duplicates_by_method.values())

    def counter_increments(self) -> dict[str, int]:
        """What the batch adds to the state's stored counters (``neardup stats``)."""
        return {
            "documents": self.documents - self.changed - self.removed,
            "repeats": self.repeats,
            "duplicates": self.duplicates,
            **{f"duplicates:{m}": n for m, n in self.duplicates_by_method.items()},
            "cluster_merges": self.merges,
            "cluster_splits": self.splits,
            "contained": self.contained,
            "pages_changed": self.changed,
            "pages_removed": self.removed,
            "candidates": self.candidates,
            "pairs_estimated": self.pairs_estimated,
        }


class BatchListener(Protocol):
    """What a runtime tells the service (metrics, the dashboard) as it goes."""

    def batch_done(self, result: BatchResult, seconds: Mapping[Stage, float]) -> None:
        """A batch is durable; ``seconds``: the time of each of its stages."""

    def dead_letter(self, reason: str) -> None:
        """A record was refused (``reason``: its dead letter's reason code)."""
