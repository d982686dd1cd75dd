"""What an embedded run has done so far, for its progress line, statistics and summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..detection import BatchResult

__all__ = ["RunSummary"]

#: the counts a run sums from its batches' results (BatchResult has each of them)
_FROM_BATCHES = (
    "documents",
    "repeats",
    "duplicates",
    "merges",
    "candidates",
    "pairs_estimated",
    "changed",
    "removed",
    "version_records",
)
_JSON_NAMES = {"merges": "cluster_merges", "changed": "pages_changed", "removed": "pages_removed"}


@dataclass(slots=True)
class RunSummary:
    records: int = 0
    documents: int = 0
    repeats: int = 0
    duplicates: int = 0
    merges: int = 0
    candidates: int = 0
    pairs_estimated: int = 0
    changed: int = 0
    removed: int = 0
    version_records: int = 0
    dead_letters: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    #: the signal that stopped the run before its input ended (``stopping.py``), if one did
    stopped_by: str | None = None

    def add(self, result: BatchResult) -> None:
        """Count a detected batch (its records are its documents and repeats)."""
        self.records += result.documents + result.repeats + result.version_records
        for name in _FROM_BATCHES:
            setattr(self, name, getattr(self, name) + getattr(result, name))

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            **{_JSON_NAMES.get(name, name): getattr(self, name) for name in _FROM_BATCHES},
            "dead_letters": sum(self.dead_letters.values()),
            "dead_letter_reasons": dict(sorted(self.dead_letters.items())),
            "seconds": round(self.seconds, 3),
            "docs_per_second": round(self.records / self.seconds, 1) if self.seconds else None,
            **({} if self.stopped_by is None else {"stopped_by": self.stopped_by}),
        }

    def describe(self) -> str:
        dead = sum(self.dead_letters.values())
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.dead_letters.items()))
        lines = [
            f"{self.records:,} records in {self.seconds:.1f} s "
            f"({self.records / max(self.seconds, 1e-9):,.0f} records/s)",
            f"{self.documents:,} new documents, {self.repeats:,} already known",
            f"{self.duplicates:,} duplicates found, {self.merges:,} cluster merges",
            f"{self.candidates:,} candidates, {self.pairs_estimated:,} pairs estimated",
            f"{dead:,} dead letters" + (f" ({reasons})" if reasons else ""),
        ]
        if self.changed or self.removed or self.version_records:
            lines.append(
                f"{self.changed:,} pages changed, {self.removed:,} removed, "
                f"{self.version_records:,} records that changed no content"
            )
        if self.stopped_by is not None:
            lines.append(f"stopped by {self.stopped_by}: the input read until then is stored")
        return "\n".join(lines)
