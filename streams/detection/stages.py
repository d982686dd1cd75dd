"""The embedded detector's batch: one detection shard keeping every document, and the union
stage, in one state view (``shard.py``, ``union.py``)."""

from __future__ import annotations

import dataclasses
from functools import partial

from neardup.core import PreparedDoc, Settings
from neardup.state import StateView

from .result import BatchResult
from .shard import shard_stage
from .union import DocHead, ref_of, union_stage
from .versions import follow_versions, with_versions

__all__ = ["ingest_batch"]


def ingest_batch(view: StateView, docs: list[PreparedDoc], settings: Settings) -> BatchResult:
    """Add prepared documents, in order, to the state; the events they cause, in order, and
    what the batch counted (also added to the state's counters).

    The result is the same as adding them one at a time: fingerprints are registered in
    order, each document's candidates are the documents before it (in the batch or already
    stored) that it meets in the indexes and that pass their filters (``candidates.py``), and
    joins happen in order. Only the index reads and writes are grouped, which keeps Python
    work per key to a minimum. Where only a url's latest version counts, the versions a
    batch supersedes or deletes leave first (``versions.py``), then the rest is detected.
    """
    if settings.versions == "all":
        fetched = [doc for doc in docs if doc.page.status == "fetched"]
        ignored = len(docs) - len(fetched)
        if ignored:  # an archive keeps every fetch: nothing departs
            view.counters.add("versions_ignored", ignored)
        findings = shard_stage(view, fetched, settings)
        result = union_stage(
            view, [DocHead.of(doc) for doc in fetched], [findings], keep_records=False
        )
        return dataclasses.replace(result, version_records=ignored) if ignored else result
    ref = partial(ref_of, view)
    heads = [DocHead.of(doc) for doc in docs]  # once: the versions' and the union stage's
    versioned = follow_versions(view, heads, settings, ref)
    findings = shard_stage(view, [docs[index] for index in versioned.chosen], settings)
    chosen = [heads[index] for index in versioned.chosen]
    result = union_stage(view, chosen, [findings], keep_records=False)
    view.sweep.step()
    return with_versions(view, result, versioned, len(docs), ref)
