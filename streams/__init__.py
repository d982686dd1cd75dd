"""neardup.streams: detection wired in one process (embedded) and on Kafka, its HTTP service
and the CLI.

detection/  the stages after preparation, the detector, and the events they emit
running/    the embedded runner: inputs, dead letters, preparing, progress, reports
kafka/      the Faust topology, the worker, the log detector, the kafka-python client
service/    the HTTP service: metrics, the dashboard, the JSON query API
cli/        the ``neardup`` command (``python -m neardup.streams`` runs it too)
"""

from .detection import (
    SCHEMA_VERSION,
    BatchResult,
    ClusterMerged,
    Detector,
    DocRef,
    Duplicate,
    Event,
    Match,
    find_similar,
    format_id,
)
from .running import DeadLetter, RunSummary, iter_records, run

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
    "iter_records",
    "run",
]
