"""Running in one process: inputs, dead letters, the embedded runner, progress, reports."""

from .embedded import run
from .inputs import DeadLetter, iter_records
from .run_summary import RunSummary

__all__ = ["DeadLetter", "RunSummary", "iter_records", "run"]
