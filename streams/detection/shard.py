"""A detection shard: what a batch finds among the documents one state keeps.

Detection splits in two (see docs/architecture.md, "Detection shards"). A shard reads every
document of the batch, in order: it admits each one (the fingerprint table is whole in every
shard, so every shard gives the same verdicts), looks each new one up in its own indexes,
verifies the candidates it keeps, and posts and stores only the documents it keeps. The
union stage (``union.py``) then joins what the shards found. With one shard keeping every
document, this is the whole detector (``stages.ingest_batch``).

Each shard caps its own posting lists (``posting_cap``, ``containment_cap``): a key that a
shard's documents carry that often is a stop key in that shard.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from neardup.core import Estimate, PreparedDoc, Settings
from neardup.state import DocRecord, StateView

from .admission import Admission, Twin, Verdict, admit_batch
from .candidates import batch_candidates
from .containment import ContainmentPair, meet_containment, post_containment, verify_containment
from .result import Stage
from .simhash import simhash_candidates, verify_simhash
from .verify import verify_all
from .versions import follow_versions_in_shard, standing, standing_candidates, standing_pairs

__all__ = ["Ownership", "ShardFindings", "shard_records", "shard_stage"]

#: per document of a batch: (earlier document, estimate) pairs
Found = tuple[tuple[tuple[int, Estimate], ...], ...]


@dataclass(frozen=True, slots=True)
class Ownership:
    """Shard ``index`` of ``shards`` keeps the documents whose id is ``index`` modulo
    ``shards`` (ids are 64-bit hashes of url and fetched_at: the shards fill evenly)."""

    index: int
    shards: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.shards:
            raise ValueError(
                f"Ownership(index={self.index}, shards={self.shards}): a shard index is 0 to "
                "shards - 1"
            )

    def keeps(self, doc_id: int) -> bool:
        return doc_id % self.shards == self.index


@dataclass(frozen=True, slots=True)
class ShardFindings:
    """What one shard found for a batch, per document in batch order."""

    verdicts: tuple[Verdict, ...]
    #: near-duplicates among the shard's documents: resemblance at or above the threshold
    near: Found
    #: pairs past the containment threshold, either way (with ``containment_threshold``)
    contained: Found
    candidates: int = 0
    pairs_estimated: int = 0
    stage_seconds: Mapping[Stage, float] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )


def shard_stage(
    view: StateView,
    docs: Sequence[PreparedDoc],
    settings: Settings,
    ownership: Ownership | None = None,
) -> ShardFindings:
    """Admit, look up, verify and keep a batch in one shard (``ownership``; by default the
    shard keeps every document)."""
    started = time.perf_counter()
    keeps = None if ownership is None else ownership.keeps
    latest = settings.versions == "latest"
    verdicts = admit_batch(view, docs, keeps, live=standing if latest else None)
    fresh = [doc for doc, verdict in zip(docs, verdicts, strict=True) if verdict is Admission.NEW]
    posting = None if keeps is None else [keeps(doc.doc_id) for doc in fresh]
    own = fresh if posting is None else [d for d, kept in zip(fresh, posting, strict=True) if kept]
    simhash = settings.sketch == "simhash"
    find = simhash_candidates if simhash else batch_candidates
    candidates = find(view, fresh, settings, posting)
    # a departed document's postings lead to its heir (where it has one), or nowhere
    heirs = latest and view.departed.any()
    if heirs:
        candidates = standing_candidates(view, candidates)
    contained_met = None
    if settings.containment_sample:  # the index is kept whether or not events are asked for
        if settings.containment_threshold is not None:
            contained_met = meet_containment(view, fresh, posting)
        post_containment(view, own)
    found = time.perf_counter()
    local = {doc.doc_id: doc for doc in own}
    verify = verify_simhash if simhash else verify_all
    verified, estimated = verify(
        view, list(zip(fresh, candidates, strict=True)), settings, settings.join_floor, local
    )
    near = {doc.doc_id: tuple(pairs) for doc, pairs in zip(fresh, verified, strict=True)}
    contained: dict[int, tuple[ContainmentPair, ...]] = {}
    if contained_met is not None and settings.containment_threshold is not None:
        pairs, more = verify_containment(
            view, fresh, contained_met, settings, settings.containment_threshold, local
        )
        if heirs:
            pairs = standing_pairs(view, pairs)
        contained = {doc.doc_id: tuple(p) for doc, p in zip(fresh, pairs, strict=True)}
        estimated += more
    checked = time.perf_counter()
    for doc, verdict in zip(docs, verdicts, strict=True):
        if keeps is None or keeps(doc.doc_id):
            _keep(view, doc, verdict, simhash)
    return ShardFindings(
        verdicts=tuple(verdicts),
        near=tuple(
            near.get(doc.doc_id, ()) if v is Admission.NEW else ()
            for doc, v in zip(docs, verdicts, strict=True)
        ),
        contained=tuple(
            contained.get(doc.doc_id, ()) if v is Admission.NEW else ()
            for doc, v in zip(docs, verdicts, strict=True)
        ),
        candidates=sum(map(len, candidates)),
        pairs_estimated=estimated,
        stage_seconds=MappingProxyType({"candidates": found - started, "verify": checked - found}),
    )


def shard_records(
    view: StateView, docs: Sequence[PreparedDoc], settings: Settings, ownership: Ownership
) -> ShardFindings:
    """A batch of records (fetches, and deletions and unchanged fetches) in a shard of a
    deployment: the versions they supersede depart first where only a url's latest version
    counts (``versions.py``), the rest is detected (``shard_stage``). The union stage
    (``union.union_records``) decides the same versions from the documents' heads."""
    if settings.versions == "all":  # an archive: every fetch is a document, nothing departs
        chosen = [doc for doc in docs if doc.page.status == "fetched"]
        return shard_stage(view, chosen, settings, ownership)
    chosen = follow_versions_in_shard(view, docs, settings, ownership.keeps)
    findings = shard_stage(view, chosen, settings, ownership)
    view.sweep.step()
    return findings


def _keep(view: StateView, doc: PreparedDoc, verdict: Verdict, simhash: bool) -> None:
    """Store a document this shard keeps: its sketch (and in SimHash mode its SimHash), or
    for a twin the document whose sketch it shares."""
    page = doc.page
    if verdict is Admission.NEW:
        record = DocRecord(
            page.url,
            page.fetched_at,
            doc.shingle_count,
            doc.sketch.values,
            simhash=doc.simhash if simhash else None,
            packed=doc.packed_sketch,
        )
    elif isinstance(verdict, Twin):
        empty = np.zeros(0, np.uint32)
        record = DocRecord(
            page.url, page.fetched_at, doc.shingle_count, empty, duplicate_of=verdict.owner
        )
    else:
        return
    view.documents.put(doc.doc_id, record)
