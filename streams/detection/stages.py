"""The embedded detector's batch: one detection shard keeping every document, and the union
stage, in one state view (``shard.py``, ``union.py``)."""

from __future__ import annotations

from neardup.core import PreparedDoc, Settings
from neardup.state import StateView

from .result import BatchResult
from .shard import shard_stage
from .union import DocHead, union_stage

__all__ = ["ingest_batch"]


def ingest_batch(view: StateView, docs: list[PreparedDoc], settings: Settings) -> BatchResult:
    """Add prepared documents, in order, to the state; the events they cause, in order, and
    what the batch counted (also added to the state's counters).

    The result is the same as adding them one at a time: fingerprints are registered in
    order, each document's candidates are the documents before it (in the batch or already
    stored) that it meets in the indexes and that pass their filters (``candidates.py``), and
    joins happen in order. Only the index reads and writes are grouped, which keeps Python
    work per key to a minimum.
    """
    findings = shard_stage(view, docs, settings)
    return union_stage(view, [DocHead.of(doc) for doc in docs], [findings], keep_records=False)
