"""neardup.streams: the pipeline wired in one process (embedded) and on Kafka, plus the CLI."""

from .embedded import run
from .events import SCHEMA_VERSION, ClusterMerged, DocRef, Duplicate, Event, format_id
from .inputs import DeadLetter, iter_records
from .pipeline import BatchResult, Detector, Match, find_similar, ingest
from .run_summary import RunSummary

__all__ = [
    "SCHEMA_VERSION",
    "BatchResult",
    "ClusterMerged",
    "DeadLetter",
    "Detector",
    "DocRef",
    "Duplicate",
    "Event",
    "Match",
    "RunSummary",
    "find_similar",
    "format_id",
    "ingest",
    "iter_records",
    "run",
]
