"""The union stage: joins what the detection shards found for a batch, in document order.

Union-find over the verified pairs of every shard (the oldest matched cluster keeps its id),
the events, the URL history and the batch's counts. Joining is cheap next to looking up and
verifying, so one union stage serves any number of shards; with one shard in the same state
it is the end of the embedded detector (``stages.ingest_batch``).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Sequence
from functools import partial
from types import MappingProxyType

from neardup.core import Estimate, StateError
from neardup.state import StateView, fetched_at_to_micros

from .admission import Admission, Twin, Verdict
from .containment import ContainmentPair
from .events import (
    METHODS,
    ClusterMerged,
    ClusterSplit,
    Contained,
    DocRef,
    Duplicate,
    Event,
    Method,
)
from .heads import DocHead
from .regroup import IDENTICAL, Regrouper
from .result import BatchResult, Stage
from .shard import ShardFindings
from .verify import EXACT
from .versions import follow_versions_in_union, with_versions

__all__ = ["MAX_CONTAINED_EVENTS", "DocHead", "ref_of", "union_records", "union_stage"]

_NEW, _REPEAT = Admission.NEW, Admission.REPEAT  # looked up once, not per document


def union_records(
    view: StateView, heads: Sequence[DocHead], findings: Sequence[ShardFindings]
) -> BatchResult:
    """The union stage of detection shards for a batch of records (``shard.shard_records``):
    where only a url's latest version counts, it decides the records' versions as every
    shard did, makes the departed versions leave the clusters, then joins what the shards
    found for the records they detected."""
    settings = view.settings
    if settings.versions == "all":
        fetched = [head for head in heads if head.status == "fetched"]
        ignored = len(heads) - len(fetched)
        if ignored:  # an archive keeps every fetch: nothing departs
            view.counters.add("versions_ignored", ignored)
        result = union_stage(view, fetched, findings, keep_records=True)
        return dataclasses.replace(result, version_records=ignored) if ignored else result
    ref = partial(ref_of, view)
    versioned = follow_versions_in_union(view, heads, settings, ref)
    chosen = [heads[index] for index in versioned.chosen]
    result = union_stage(view, chosen, findings, keep_records=True)
    return with_versions(view, result, versioned, len(heads), ref)


def union_stage(
    view: StateView,
    heads: Sequence[DocHead],
    findings: Sequence[ShardFindings],
    keep_records: bool,
) -> BatchResult:
    """Join a batch's documents (``heads``, in order) with what every shard found for them;
    the events, in order, and what the batch counted (also added to the state's counters).

    ``keep_records``: the union stage has a state of its own, and keeps there each
    document's url, fetched_at and twin (the shards keep the sketches); without it, the
    shard sharing this state has stored them."""
    started = time.perf_counter()
    verdicts = _agreed(findings, len(heads))
    near, contained = _gathered(findings, len(heads))
    # columns (the heads as decoded, ints, strings), not a new tuple per document: each
    # container object that lives through a batch ages into the garbage collector's oldest
    # generation, and full passes over a large process were a large share of the stage
    added = [head for head, verdict in zip(heads, verdicts, strict=True) if verdict is not _REPEAT]
    if added:
        doc_ids, urls, fetched_ats, *_ = zip(*added, strict=True)
        micros = list(map(fetched_at_to_micros, fetched_ats))
        view.urls.add_many(urls, micros, doc_ids)
        view.clusters.add_singles(doc_ids)
        if keep_records:
            twins = [v.owner if isinstance(v, Twin) else 0 for v in verdicts if v is not _REPEAT]
            view.documents.put_unsketched(added, micros, twins)
            if view.settings.versions == "latest":  # as the shards' admission does
                for head, verdict in zip(heads, verdicts, strict=True):
                    if isinstance(verdict, Twin):
                        view.copies.join(verdict.doc_id, head.doc_id)
    events: list[Event] = []
    gauges: dict[str, int] = {}
    documents = view.documents
    # with split_clusters: the documents whose clusters took in a match, cut again at the end
    touched: set[int] | None = set() if view.settings.split_clusters else None
    edges = view.settings.keeps_edges  # where pages leave, their matches tell what remains
    for head, verdict, matches, pairs in zip(heads, verdicts, near, contained, strict=True):
        if verdict is _NEW:
            if not matches and not pairs:
                continue
            me = DocRef(head.doc_id, head.url, head.fetched_at)
            if matches:
                _join(view, me, matches, "near", gauges, events, touched, edges)
            if pairs:
                events.extend(_contained(view, me, pairs, matches))
        elif isinstance(verdict, Twin):
            if not documents.has(verdict.doc_id):
                raise StateError(
                    f"fingerprint table points at missing document {verdict.doc_id:016x}"
                )
            me = DocRef(head.doc_id, head.url, head.fetched_at)
            match = [(verdict.doc_id, EXACT)]
            _join(view, me, match, verdict.method, gauges, events, touched, edges)
    if touched:
        Regrouper(view, events, gauges, lambda doc_id: ref_of(view, doc_id)).regroup(touched)
    kinds = Counter(map(type, events))  # in C: no Python call per event
    by_method = Counter(event.method for event in events if isinstance(event, Duplicate))
    repeats = len(heads) - len(added)
    seconds: dict[Stage, float] = {
        stage: sum(f.stage_seconds.get(stage, 0.0) for f in findings)
        for stage in ("candidates", "verify")
    }
    seconds["union"] = time.perf_counter() - started
    result = BatchResult(
        events=tuple(events),
        documents=len(heads) - repeats,
        repeats=repeats,
        duplicates_by_method={method: by_method[method] for method in METHODS},
        merges=kinds[ClusterMerged],
        splits=kinds[ClusterSplit],
        contained=kinds[Contained],
        candidates=sum(f.candidates for f in findings),
        pairs_estimated=sum(f.pairs_estimated for f in findings),
        stage_seconds=MappingProxyType(seconds),
    )
    view.counters.add_many(result.counter_increments())
    view.counters.add_many(gauges)
    return result


def _gathered(
    findings: Sequence[ShardFindings], documents: int
) -> tuple[Sequence[Sequence[tuple[int, Estimate]]], Sequence[Sequence[ContainmentPair]]]:
    """Per document, the near-duplicates and containment pairs of every shard together."""
    if len(findings) == 1:
        return findings[0].near, findings[0].contained
    near: list[list[tuple[int, Estimate]]] = [[] for _ in range(documents)]
    contained: list[list[ContainmentPair]] = [[] for _ in range(documents)]
    for found in findings:
        for i, pairs in enumerate(found.near):
            if pairs:
                near[i].extend(pairs)
        for i, pairs in enumerate(found.contained):
            if pairs:
                contained[i].extend(pairs)
    return near, contained


def _agreed(findings: Sequence[ShardFindings], documents: int) -> tuple[Verdict, ...]:
    """The shards' verdicts, which must be the same in every shard (each keeps the whole
    fingerprint table and applies the same log)."""
    if not findings:
        raise ValueError("the union stage needs the findings of at least one shard")
    verdicts = findings[0].verdicts
    if len(verdicts) != documents or any(f.verdicts != verdicts for f in findings[1:]):
        raise StateError(
            "the detection shards disagree on which documents are new: their states were not "
            "built from the same log (rebuild the shard whose state is behind or foreign)"
        )
    return verdicts


def ref_of(view: StateView, doc_id: int) -> DocRef:
    found = view.documents.ref(doc_id)
    return DocRef(doc_id, found.url, found.fetched_at) if found else DocRef(doc_id, "", "")


#: contained events per new document at most (the highest containments): a passage quoted
#: everywhere (a licence, a disclaimer) would otherwise name every page that quotes it
MAX_CONTAINED_EVENTS = 100


def _contained(
    view: StateView,
    me: DocRef,
    found: Sequence[ContainmentPair],
    near: Sequence[tuple[int, Estimate]],
) -> list[Event]:
    """The contained events of a new document: the pairs past the containment threshold,
    but not the near-duplicates it joined (their duplicate event says so)."""
    if not found:
        return []
    joined = {doc_id for doc_id, _ in near}
    kept = sorted(
        ((doc_id, e) for doc_id, e in found if doc_id not in joined),
        key=lambda pair: (-max(pair[1].containment, pair[1].containment_reverse), pair[0]),
    )[:MAX_CONTAINED_EVENTS]
    return [
        Contained(
            me,
            ref_of(view, doc_id),
            e.containment,
            e.containment_reverse,
            e.resemblance,
            e.exact,
        )
        for doc_id, e in kept
    ]


def _join(
    view: StateView,
    me: DocRef,
    matches: Sequence[tuple[int, Estimate]],
    method: Method,
    gauges: dict[str, int],
    events: list[Event],
    touched: set[int] | None,
    keep_edges: bool,
) -> None:
    """Union the new document with every match (doc id, estimate), found by ``method``; the
    oldest matched cluster keeps its id. Only the best match is named, so only its record is
    read. ``gauges``: where the cluster gauges' changes add up, for the batch to count once.
    The events go to ``events``: the duplicate, then each merge. ``keep_edges``: the
    matches are kept as edges; ``touched``: when clusters are cut as well, the document is
    noted there."""
    if keep_edges:
        for doc_id, found in matches:
            score = IDENTICAL if method != "near" else found.resemblance
            view.edges.add(me.doc_id, doc_id, score)
    if touched is not None:
        touched.add(me.doc_id)
    if len(matches) == 1:
        best_id, estimate = matches[0]
        joined = view.clusters.join(me.doc_id, [best_id], gauges)
    else:
        joined = view.clusters.join(me.doc_id, [doc_id for doc_id, _ in matches], gauges)
        best_id, estimate = max(matches, key=_rank)
    survivor, size, retired_sizes = joined
    if retired_sizes:
        size = retired_sizes[-1][1]  # the duplicate names the size after every merge
    distance = estimate.distance  # a SimHash mode match says how far it was
    events.append(
        Duplicate(
            me,
            ref_of(view, best_id),  # stored: stores go in order, and matches are earlier ones
            method if distance is None else "simhash",
            estimate.resemblance,
            estimate.containment,
            survivor,
            size,
            distance,
        )
    )
    for retired, merged_size in retired_sizes:
        events.append(
            ClusterMerged(
                survivor, retired, merged_size, me, ref_of(view, survivor), ref_of(view, retired)
            )
        )


def _rank(match: tuple[int, Estimate]) -> tuple[float, float, int]:
    """The best match is the most resembling, then the most containing, then the oldest id."""
    doc_id, estimate = match
    return estimate.resemblance, estimate.containment, -doc_id
