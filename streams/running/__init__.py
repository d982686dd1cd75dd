"""Running in one process: inputs and dead letters, the embedded runner, its progress and
reports."""

from .embedded import run
from .inputs import DeadLetter, iter_records
from .run_summary import RunSummary

__all__ = ["DeadLetter", "RunSummary", "iter_records", "run"]
