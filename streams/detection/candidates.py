"""Candidates: the earlier documents a new one meets in the indexes, filtered in bulk.

* Super-shingles (documents from ``Settings.super_shingle_limit`` shingles up): a candidate
  must share ``min_shared_bands`` of them (stop keys may each hide one shared band, so they
  count for every document met), and its size class must allow resemblance T
  (``neardup.core.length_filter``).
* The short-document index (documents below ``short_limit``): the exact length, count and
  positional filters of ``neardup.core.prefix_filter``.

The number of documents met per document grows with the corpus (so do the posting lists); the
filters run over the whole batch in numpy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from neardup.core import PreparedDoc, Settings, may_resemble, short_pairs_kept, size_class
from neardup.state import Meetings, StateView

__all__ = ["batch_candidates", "index_keys", "query_candidates"]

#: a super-shingle's index key is its top 32 bits (the posting indexes keep 32-bit keys). At a
#: million documents of 37 bands about 0.7 % of keys collide with an unrelated one, and such a
#: collision adds one shared band to an unrelated pair, which ``min_shared_bands`` = 2 almost
#: never lets through; each byte fewer saves about a byte per band on disk.
_SUPER_KEY_SHIFT = np.uint64(32)


def index_keys(doc: PreparedDoc) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """A document's keys in the super-shingle and in the short-document index."""
    return (doc.super_shingles >> _SUPER_KEY_SHIFT).astype(np.uint32), doc.shingle_keys


def batch_candidates(
    view: StateView,
    docs: list[PreparedDoc],
    settings: Settings,
    posting: list[bool] | None = None,
) -> list[set[int]]:
    """Post new documents (admitted as new, in order) in both indexes; each one's candidates
    among the documents before it (earlier ones of the batch included). ``posting``: which
    documents are posted (a detection shard's own); the others are only looked up."""
    keys = [index_keys(doc) for doc in docs]
    ids = [doc.doc_id for doc in docs]
    counts = np.fromiter((doc.shingle_count for doc in docs), np.int64, len(docs))
    near = view.super_shingles.meet_batch(
        [super_keys for super_keys, _ in keys],
        ids,
        size_class(counts).tolist(),
        new_documents=True,
        posting=posting,
    )
    short = view.short_shingles.meet_batch(
        [short_keys for _, short_keys in keys],
        ids,
        counts.tolist(),
        new_documents=True,
        posting=posting,
    )
    owners = near.owners()
    banded = near.chosen(
        (near.shared >= settings.min_shared_bands - near.stopped[owners])
        & may_resemble(counts[owners], near.sizes, settings.threshold)
    )
    return [a | b for a, b in zip(banded, _short_candidates(docs, short, settings), strict=True)]


def _short_candidates(docs: list[PreparedDoc], met: Meetings, settings: Settings) -> list[set[int]]:
    # keys that are stop keys, or that a document dropped as repeated 32-bit values, may each
    # hide one shared shingle: they count for every candidate, so no pair at or above T is lost
    unseen = met.stopped + np.fromiter(
        (settings.short_index_prefix(d.shingle_count) - len(d.shingle_keys) for d in docs),
        np.int64,
        len(docs),
    )
    counts = np.fromiter((d.shingle_count for d in docs), np.int64, len(docs))
    owners = met.owners()
    keep = short_pairs_kept(
        counts[owners],
        unseen[owners],
        met.sizes,
        met.shared,
        met.last,
        met.last_other,
        settings.threshold,
    )
    return met.chosen(keep)


def query_candidates(view: StateView, doc: PreparedDoc) -> set[int]:
    """Every document sharing a (non-stop) key with ``doc``, unfiltered and without posting it:
    what an on-the-fly query verifies."""
    super_keys, short_keys = index_keys(doc)
    return view.super_shingles.candidates(super_keys) | view.short_shingles.candidates(short_keys)
