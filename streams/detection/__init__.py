"""Detection: the stages after preparation, the detector, and the events they emit."""

from .detector import Detector
from .events import (
    METHODS,
    SCHEMA_VERSION,
    ClusterMerged,
    DocRef,
    Duplicate,
    Event,
    Method,
    format_id,
)
from .result import STAGES, BatchListener, BatchResult, Stage
from .similar import Match, find_similar

__all__ = [
    "METHODS",
    "SCHEMA_VERSION",
    "STAGES",
    "BatchListener",
    "BatchResult",
    "ClusterMerged",
    "Detector",
    "DocRef",
    "Duplicate",
    "Event",
    "Match",
    "Method",
    "Stage",
    "find_similar",
    "format_id",
]
