"""Ground truth by brute force: exact Jaccard and containment of every pair sharing a shingle.

Ground truth by brute force: exact Jaccard and containment of every pair of documents that
shares at least one shingle, connected components at a threshold, and pair-counting scores.

The caller supplies, per document, its set of shingle fingerprints as a numpy ``uint64`` array
of unique values (e.g. from neardup's own ``shingle_sets``); nothing is sampled or skipped.

Method (numpy only, no Python work per shingle or per pair):

1. all (fingerprint, doc) entries are sorted by fingerprint: each run of equal fingerprints is
   the posting list of one shingle, doc ids ascending (stable sort);
2. runs of length 1 are dropped (they add to set sizes, never to an intersection);
3. an entry at position g of a run pairs with the entries after it in the run, so every
   co-occurrence (i < j, shingle) is generated exactly once; entries are taken in blocks of
   documents and the co-occurrences of a block are counted with one ``np.bincount`` over keys
   ``(i - block_start) * n + j``: the counts are the intersection sizes.

Cost: O(N log N) for the sort of the N = sum |S_i| entries, plus O(sum over shingles of
df * (df - 1) / 2) for the counting, in blocks bounded to ``BLOCK_WORK`` co-occurrences and
``BLOCK_BINS`` counters (so the extra memory is ~ 50 bytes x BLOCK_WORK + 8 bytes x
BLOCK_BINS, ~250 MB), beside the sorted entries and the output arrays, which grow with N
and with the pairs scored.  The co-occurrence term grows roughly quadratically with n,
because the source text is reused, so use this up to a few tens of thousands of documents.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["PairScores", "components", "pair_scores", "pairwise_scores", "true_clusters"]

BLOCK_WORK = 4_000_000
BLOCK_BINS = 4_000_000
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PairScores:
    """Every pair i < j with a non-empty intersection (parallel arrays, sorted by (i, j))."""

    i: I64
    j: I64
    intersection: I64
    #: |A & B| / |A | B|
    jaccard: F64
    #: |A & B| / min(|A|, |B|): how much of the smaller document is inside the larger one
    containment: F64
    sizes: I64  # |S_d| for every document d


def pair_scores(sets: Sequence[npt.NDArray[np.uint64]]) -> PairScores:
    """Exact scores of every pair of documents sharing at least one shingle."""
    n = len(sets)
    sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=n)
    empty = np.zeros(0, dtype=np.int64)
    if n < 2 or sizes.sum() == 0:
        return PairScores(
            empty, empty, empty, empty.astype(np.float64), empty.astype(np.float64), sizes
        )
    values = np.concatenate([np.asarray(s, dtype=np.uint64) for s in sets])
    docs = np.repeat(np.arange(n, dtype=np.int64), sizes)
    order = np.argsort(values, kind="stable")  # stable: doc ids stay ascending within a run
    values, docs = values[order], docs[order]
    new_run = np.concatenate([[True], values[1:] != values[:-1]])
    if np.any(~new_run[1:] & (docs[1:] == docs[:-1])):
        raise ValueError("a document's fingerprint array has repeated values: pass unique sets")
    run_start = np.flatnonzero(new_run)
    run_end = np.concatenate([run_start[1:], [len(values)]])
    df = run_end - run_start
    keep = df >= 2
    docs = docs[np.repeat(keep, df)]  # drop shingles of one document
    kept_df = df[keep]
    run_end_c = np.repeat(np.cumsum(kept_df), kept_df)  # end of each entry's run, compacted
    after = run_end_c - np.arange(len(docs)) - 1  # partners after each entry in its run

    by_doc = np.argsort(docs, kind="stable")  # entries grouped by their (smaller) document
    work_per_doc = np.bincount(docs, weights=after, minlength=n).astype(np.int64)
    entries_per_doc = np.bincount(docs, minlength=n)
    entry_ptr = np.concatenate([[0], np.cumsum(entries_per_doc)])

    out_i: list[I64] = []
    out_j: list[I64] = []
    out_c: list[I64] = []
    lo = 0
    rows_cap = max(1, BLOCK_BINS // n)
    while lo < n:
        hi, work = lo, 0
        while hi < n and hi - lo < rows_cap and (hi == lo or work + work_per_doc[hi] <= BLOCK_WORK):
            work += int(work_per_doc[hi])
            hi += 1
        g = by_doc[entry_ptr[lo] : entry_ptr[hi]]
        counts = after[g]
        total = int(counts.sum())
        if total:
            first = np.repeat(g + 1 - (np.cumsum(counts) - counts), counts)
            partner = docs[first + np.arange(total)]
            row = np.repeat(docs[g], counts)
            hits = np.bincount((row - lo) * n + partner, minlength=(hi - lo) * n)
            keys = np.flatnonzero(hits)
            out_i.append(keys // n + lo)
            out_j.append(keys % n)
            out_c.append(hits[keys].astype(np.int64))
        lo = hi
    i = np.concatenate(out_i) if out_i else empty
    j = np.concatenate(out_j) if out_j else empty
    inter = np.concatenate(out_c) if out_c else empty
    union = sizes[i] + sizes[j] - inter
    return PairScores(
        i=i,
        j=j,
        intersection=inter,
        jaccard=inter / union,
        containment=inter / np.minimum(sizes[i], sizes[j]),
        sizes=sizes,
    )


def components(n: int, i: I64, j: I64) -> list[list[int]]:
    """Connected components (at least two members) of the graph on 0..n-1 with edges (i, j)."""
    parent = np.arange(n, dtype=np.int64)
    a, b = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    # Vectorised hooking and pointer jumping (Shiloach-Vishkin style): each round hooks every
    # edge's larger root under its smaller root, then compresses paths fully.  parent[x] <= x
    # always holds, so it terminates; rounds ~ log of the component diameter.
    while len(a):
        ra, rb = parent[a], parent[b]
        differ = ra != rb
        if not differ.any():
            break
        np.minimum.at(parent, np.maximum(ra, rb)[differ], np.minimum(ra, rb)[differ])
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped
    groups: dict[int, list[int]] = {}
    for node, root in enumerate(parent.tolist()):
        groups.setdefault(root, []).append(node)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def true_clusters(
    scores: PairScores, threshold: float, measure: str = "jaccard"
) -> list[list[int]]:
    """Components of the graph joining pairs whose exact ``measure`` is >= ``threshold``."""
    values = scores.jaccard if measure == "jaccard" else scores.containment
    if measure not in ("jaccard", "containment"):
        raise ValueError(f"measure={measure!r}: use 'jaccard' or 'containment'")
    keep = values >= threshold
    return components(len(scores.sizes), scores.i[keep], scores.j[keep])


def _pairs(k: int) -> int:
    return k * (k - 1) // 2


def pairwise_scores(
    predicted_clusters: Iterable[Iterable[Hashable]],
    true_clusters: Iterable[Iterable[Hashable]],
) -> tuple[float, float, float]:
    """(precision, recall, f1) over co-membership pairs, from contingency counts.

    A pair of items is positive in a clustering when both are in one cluster; items absent
    from a clustering are singletons there.  TP = sum over (predicted, true) cluster cells of
    C(cell size, 2); no pair is enumerated, so the cost is O(total members).  With no predicted
    (true) pairs, precision (recall) is 1.0 by convention.
    """
    label: dict[Hashable, int] = {}
    for t, cluster in enumerate(true_clusters):
        for item in cluster:
            if item in label:
                raise ValueError(f"{item!r} is in two true clusters")
            label[item] = t
    true_pairs = sum(_pairs(c) for c in np.bincount(list(label.values())).tolist()) if label else 0
    pred_pairs = 0
    tp = 0
    seen: set[Hashable] = set()
    for cluster in predicted_clusters:
        members = list(cluster)
        if len(set(members)) != len(members) or seen.intersection(members):
            raise ValueError("an item is in two predicted clusters (or twice in one)")
        seen.update(members)
        pred_pairs += _pairs(len(members))
        cells: dict[int, int] = {}
        for item in members:
            cell = label.get(item)
            if cell is not None:
                cells[cell] = cells.get(cell, 0) + 1
        tp += sum(_pairs(c) for c in cells.values())
    precision = tp / pred_pairs if pred_pairs else 1.0
    recall = tp / true_pairs if true_pairs else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1
