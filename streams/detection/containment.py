"""Containment: the earlier documents a document is contained in, or contains.

Found through the containment index (``neardup.core.containment``): a document posts its
containment sample there and meets every earlier document that posted one of its keys. A
pair then passes a filter on the keys it shares before its sketch is read, and is estimated
from both samples (``neardup.core.sketch.estimate_columns`` with an ``ExtraSample``).
"""

from __future__ import annotations

from collections.abc import Set

import numpy as np
import numpy.typing as npt
from neardup.core import (
    Estimate,
    ExtraSample,
    PreparedDoc,
    Settings,
    estimate_columns,
    kept_at_levels,
    level_counts,
    sampled_at,
)
from neardup.state import Meetings, StateView, unpack_samples, whole_sample

__all__ = [
    "ContainmentPair",
    "meet_containment",
    "post_containment",
    "query_containment",
    "verify_containment",
]

I64 = npt.NDArray[np.int64]

#: standard deviations below the expected shared keys that a pair at the threshold may fall
#: and still be estimated: 3 loses about one pair in a thousand to the filter
_SLACK = 3.0

ContainmentPair = tuple[int, Estimate]


def post_containment(view: StateView, docs: list[PreparedDoc]) -> None:
    """Post new documents (admitted as new) in the containment index."""
    view.containment.post_new(
        [doc.containment_posted for doc in docs],
        [doc.doc_id for doc in docs],
        [doc.containment_level for doc in docs],
    )


def meet_containment(
    view: StateView, docs: list[PreparedDoc], posting: list[bool] | None = None
) -> Meetings:
    """What new documents, before they are posted, meet under their lookup keys: the stored
    documents, and the earlier ones of the batch that will be posted (``posting``, by
    default all), by what those will be posted under."""
    stored = view.containment.meet([doc.containment_keys for doc in docs])
    owners, others, shared = _earlier_in_batch(docs)
    if posting is not None:
        kept = np.asarray(posting, np.bool_)[others] if len(others) else others.astype(np.bool_)
        owners, others, shared = owners[kept], others[kept], shared[kept]
    ids = np.fromiter((doc.doc_id for doc in docs), np.uint64, len(docs))
    levels = np.fromiter((doc.containment_level for doc in docs), np.int64, len(docs))
    owner = np.concatenate([stored.owners(), owners])
    doc_ids = np.concatenate([stored.doc_ids, ids[others]])
    order = np.lexsort((doc_ids, owner))
    owner = owner[order]
    zeros = np.zeros(len(order), np.int64)
    return Meetings(
        starts=np.searchsorted(owner, np.arange(len(docs) + 1)).astype(np.int64),
        doc_ids=doc_ids[order],
        shared=np.concatenate([stored.shared, shared])[order],
        sizes=np.concatenate([stored.sizes, levels[others]])[order],
        last=zeros,
        last_other=zeros,
        stopped=stored.stopped,
    )


def _earlier_in_batch(docs: list[PreparedDoc]) -> tuple[I64, I64, I64]:
    """Pairs (j, i), i before j in the batch, with the keys j looks up that i posts, and how
    many: one join of all lookup keys with all posted keys, in numpy."""
    posted = [doc.containment_posted for doc in docs]
    wanted = [doc.containment_keys for doc in docs]
    empty = np.zeros(0, np.int64)
    if not docs or not sum(map(len, posted)) or not sum(map(len, wanted)):
        return empty, empty, empty
    post_keys = np.concatenate(posted)
    post_owner = np.repeat(np.arange(len(docs)), [len(k) for k in posted])
    order = np.argsort(post_keys, kind="stable")
    post_keys, post_owner = post_keys[order], post_owner[order]
    look_keys = np.concatenate(wanted)
    look_owner = np.repeat(np.arange(len(docs)), [len(k) for k in wanted])
    left = np.searchsorted(post_keys, look_keys, "left")
    hits = np.searchsorted(post_keys, look_keys, "right") - left
    firsts = np.cumsum(hits) - hits
    at = np.arange(int(hits.sum())) - np.repeat(firsts, hits) + np.repeat(left, hits)
    later = np.repeat(look_owner, hits)
    earlier = post_owner[at]
    keep = earlier < later
    pair = later[keep] * len(docs) + earlier[keep]
    pairs, shared = np.unique(pair, return_counts=True)
    return pairs // len(docs), pairs % len(docs), shared.astype(np.int64)


def query_containment(view: StateView, doc: PreparedDoc) -> Meetings:
    """What a document asked about (prepared with ``query=True``) meets, without posting it."""
    return view.containment.meet([doc.containment_keys])


def _plausible(
    shared: I64, keys: npt.NDArray[np.float64], threshold: float
) -> npt.NDArray[np.bool_]:
    """Pairs whose shared keys could come from containment at the threshold: a binomial
    count of ``keys`` trials, within ``_SLACK`` deviations of its mean."""
    mean = threshold * keys
    spread = _SLACK * np.sqrt(keys * threshold * (1.0 - threshold))
    kept: npt.NDArray[np.bool_] = shared >= np.floor(mean - spread)
    return kept


def verify_containment(
    view: StateView,
    docs: list[PreparedDoc],
    met: Meetings,
    settings: Settings,
    threshold: float,
    local: dict[int, PreparedDoc] | None = None,
    both_ways: bool = True,
    known: Set[int] = frozenset(),
) -> tuple[list[list[ContainmentPair]], int]:
    """For each document, the documents it met whose estimated containment, one way or the
    other, is at least ``threshold``, with their estimates; and how many pairs were
    estimated. ``local``: documents of the same batch not stored yet. Without
    ``both_ways``, only the documents that contain ``threshold`` of it: the pairs that could
    only pass the other way are not read (most of a query's pairs, with little in common).
    ``known``: documents the caller has estimated already (a query's near matches), left
    out."""
    local = local or {}
    owners = met.owners()
    if not len(owners):
        return [[] for _ in docs], 0
    # what a document looked up: its keys at its lookup level
    levels = np.fromiter((d.containment_lookup for d in docs), np.int64, len(docs))
    counts = [level_counts(d.containment_keys) for d in docs]
    key_totals = np.fromiter((len(d.containment_keys) for d in docs), np.int64, len(docs))
    # a pair compares at the coarser of its two levels (the samples nest)
    level = np.maximum(levels[owners], met.sizes)
    mine = sampled_at(counts, level, owners).astype(np.float64)
    # keys that were stop keys hid their documents: they count on neither side
    seen_share = 1.0 - met.stopped[owners] / np.maximum(key_totals[owners], 1)
    mine *= seen_share
    # the other's keys at the pair's level: at its own level a document keeps more than half
    # of containment_sample (or, at level 0, any number: it is that small)
    theirs_at_least = np.where(
        met.sizes > 0, settings.containment_sample / 2 * np.exp2(met.sizes - level), 1.0
    )
    keep = _plausible(met.shared, mine, threshold)
    if both_ways:
        keep |= _plausible(met.shared, theirs_at_least, threshold)
    rows = np.flatnonzero(keep).tolist()
    if known:
        rows = [r for r in rows if int(met.doc_ids[r]) not in known]
    met_ids = {int(met.doc_ids[r]) for r in rows}
    stored = sorted(met_ids - local.keys())
    view.documents.prefetch(stored)
    kept: dict[int, tuple[int, bytes | memoryview] | None] = {
        doc_id: view.documents.sketch(doc_id) for doc_id in stored
    }
    for doc_id in met_ids & local.keys():  # earlier in the batch: not stored yet
        earlier = local[doc_id]
        kept[doc_id] = earlier.shingle_count, whole_sample(earlier.sketch.values)
    pairs = [(r, sample) for r in rows if (sample := kept[int(met.doc_ids[r])]) is not None]
    if not pairs:
        return [[] for _ in docs], 0
    at = np.fromiter((r for r, _ in pairs), np.int64, len(pairs))
    other_counts = np.fromiter((sample[0] for _, sample in pairs), np.int64, len(pairs))
    other_samples = unpack_samples([sample[1] for _, sample in pairs])
    queried = [docs[int(owners[r])] for r in at.tolist()]
    pair_level = level[at]
    # a complete sketch is the other's whole set: its keys at the level are counted there
    # (only those sketches are counted: most pairs are of larger documents)
    theirs = other_counts / np.exp2(pair_level)
    complete = other_counts <= settings.sample_size
    if complete.any():
        lengths = other_samples.lengths
        values = other_samples.values[np.repeat(complete, lengths)]
        theirs[complete] = kept_at_levels(values, lengths[complete], pair_level[complete])
    resemblance, containment, reverse, exact = estimate_columns(
        [doc.sketch.values for doc in queried],
        [doc.shingle_count for doc in queried],
        other_samples,
        other_counts.tolist(),
        settings.sample_size,
        ExtraSample(
            met.shared[at],
            np.rint(mine[at]).astype(np.int64),
            np.rint(theirs).astype(np.int64),
        ),
    )
    found: list[list[ContainmentPair]] = [[] for _ in docs]
    passing = (
        (containment >= threshold) | (reverse >= threshold)
        if both_ways
        else (containment >= threshold)
    )
    for position in np.flatnonzero(passing).tolist():
        row = int(at[position])
        found[int(owners[row])].append(
            (
                int(met.doc_ids[row]),
                Estimate(
                    float(resemblance[position]),
                    float(containment[position]),
                    float(reverse[position]),
                    bool(exact[position]),
                ),
            )
        )
    return found, len(pairs)
