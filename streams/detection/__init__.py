"""Detection: the stages after preparation (exact shortcuts, candidates, verification, union),
and the events they emit."""

from .events import SCHEMA_VERSION, ClusterMerged, DocRef, Duplicate, Event, format_id
from .pipeline import BatchResult, Detector, Match, find_similar

__all__ = [
    "SCHEMA_VERSION",
    "BatchResult",
    "ClusterMerged",
    "Detector",
    "DocRef",
    "Duplicate",
    "Event",
    "Match",
    "find_similar",
    "format_id",
]
