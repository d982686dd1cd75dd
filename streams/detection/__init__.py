"""Detection: the stages after preparation, the detector, and the events they emit."""

from .detector import Detector
from .events import (
    METHODS,
    SCHEMA_VERSION,
    ClusterMerged,
    Contained,
    DocRef,
    Duplicate,
    Event,
    Method,
    encode_event,
    format_id,
)
from .result import STAGES, BatchListener, BatchResult, Stage
from .similar import DEFAULT_QUERY_CONTAINMENT, Match, find_containing, find_similar

__all__ = [
    "DEFAULT_QUERY_CONTAINMENT",
    "METHODS",
    "SCHEMA_VERSION",
    "STAGES",
    "BatchListener",
    "BatchResult",
    "ClusterMerged",
    "Contained",
    "Detector",
    "DocRef",
    "Duplicate",
    "Event",
    "Match",
    "Method",
    "Stage",
    "encode_event",
    "find_containing",
    "find_similar",
    "format_id",
]
