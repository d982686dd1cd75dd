"""neardup.streams: detection wired in one process (embedded) and on Kafka, plus the CLI.

detection/  the stages after preparation, and the events they emit
running/    the embedded runner: inputs, dead letters, progress, reports
kafka/      the Faust topology, the worker, the kafka-python client
cli.py      the ``neardup`` command
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
