"""Taking removed versions out of the posting lists and the fingerprint table, a slice of
the key space at a time.

Where only a url's latest version counts, a version that departs with no copy to stand for
it leaves entries in every posting list it was posted to, and its fingerprints. Its keys are
not stored (they come from its shingle set, which the state does not keep), so its departure
cannot find them. It is marked removed in ``gone`` instead (``Departed.mark_removed``), which
makes lookups skip it, and the sweep takes it out: it rewrites the lists of slices of every
index's key space (keys by their top ``_SLICE_BITS`` bits) without the removed documents,
deletes the lists left empty, and forgets the fingerprints that name one.

Slices go in proportion to the removals: a whole pass over the key space for about
``SWEEP_FRACTION`` of the documents removed, so what stays of removed versions is bounded by
that share of the indexes however many times a crawl comes round (without the sweep the
indexes grow with every fetch that changed a page). Each batch adds the slices its removals
call for to those due (one at least while some document waits), and a batch sweeps them
once they hold about ``_KEYS_A_SWEEP`` keys. A document is unmarked at the end of the first
pass that ran whole after it left and after the containment log had folded every record that
may hold its postings (the marks waiting are counted again then: a version fetched again is
unmarked as it comes back).

Written by hand: RocksDB's compaction filters would drop such entries as it rewrites its
files anyway, but rocksdict exposes none.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .documents import FingerprintKind, FingerprintTable
from .meta import Counters
from .posting_log import PostingLog
from .postings import PostingIndex
from .transaction import Transaction
from .versions import Departed

__all__ = ["SLICES", "SWEEP_FRACTION", "RemovedSweep"]

_SLICE_BITS = 14
#: slices of each key space: a batch sweeps a whole number of them
SLICES = 1 << _SLICE_BITS
#: a whole pass for this share of the documents removed
SWEEP_FRACTION = 0.5
#: slices a batch sweeps at most, whatever it removed: the sweep's cost a batch stays small
_MOST_SLICES_A_BATCH = SLICES // 16
#: index keys a sweep waits for: each sweep opens an ordered read of every table, whose
#: set-up (a sort of what RocksDB holds in its hash memtables) costs as much as reading
#: thousands of lists
_KEYS_A_SWEEP = 100_000
#: documents the rate counts at least (a small state sweeps as fast as one of this size)
_FEWEST_DOCUMENTS = 64
#: the fingerprints of pages (item mode removes its own)
_PAGE_KINDS = (FingerprintKind.RAW, FingerprintKind.CANONICAL, FingerprintKind.SHINGLE_SET)

_META_KEY = b"sweep"
#: next slice, pass, documents marked removed, the log folded when the pass began, slices due
_RECORD = struct.Struct(">qqqqq")


@dataclass(slots=True)
class _Progress:
    cursor: int
    sweep_pass: int
    waiting: int
    folded: int
    due: int = 0


class RemovedSweep:
    """A view's sweep: marks the documents its batch removes, and sweeps after the batch
    (``step``). A state where nothing was ever removed has no record of it."""

    def __init__(
        self,
        tx: Transaction,
        departed: Departed,
        indexes: Sequence[PostingIndex],
        fingerprints: FingerprintTable,
        log: PostingLog,
        keys_a_document: int,
    ) -> None:
        self._tx = tx
        self._log = log
        self._departed = departed
        self._indexes = indexes
        self._fingerprints = fingerprints
        self._keys_a_document = max(1, keys_a_document)
        self._progress: _Progress | None = None
        self._removed = 0

    def _read(self) -> _Progress:
        if self._progress is None:
            raw = self._tx.get("meta", _META_KEY)
            if raw is None:
                self._progress = _Progress(0, 0, 0, self._log.progress()[1])
            else:
                self._progress = _Progress(*_RECORD.unpack(raw))
        return self._progress

    def remove(self, doc_id: int) -> None:
        """A document left with no copy to stand for it: marked, to be swept."""
        progress = self._read()
        self._departed.mark_removed(doc_id, progress.sweep_pass, self._log.progress()[0])
        self._removed += 1

    def step(self) -> int:
        """After a batch: the slices its removals call for are due (one at least while some
        removed document waits), and swept once enough are; the entries and fingerprints
        taken out."""
        if not self._removed:
            raw = self._tx.get("meta", _META_KEY)
            if raw is None or not _RECORD.unpack(raw)[2]:
                return 0  # nothing waits: not a write
        progress = self._counted()
        base = SWEEP_FRACTION * max(self._documents(), _FEWEST_DOCUMENTS)
        progress.due += max(math.ceil(SLICES * self._removed / base), 1)
        self._removed = 0
        if progress.due < self._fewest_slices():
            self._tx.put("meta", _META_KEY, _RECORD.pack(*_fields(progress)))
            return 0
        due, progress.due = min(progress.due, _MOST_SLICES_A_BATCH), 0
        return self._advance(progress, due)

    def _fewest_slices(self) -> int:
        """The slices a sweep waits for: about ``_KEYS_A_SWEEP`` keys of the indexes."""
        counters = Counters(self._tx)
        keys = sum(counters.get(f"index_keys:{postings.table}") for postings in self._indexes)
        fewest = math.ceil(_KEYS_A_SWEEP * SLICES / max(keys, 1))
        return min(max(fewest, 1), _MOST_SLICES_A_BATCH)

    def _documents(self) -> int:
        """The documents the indexes hold, about: the live urls where this state counts
        them, else (a detection shard) its super-shingle keys over a document's bands."""
        counters = Counters(self._tx)
        keys = counters.get("index_keys:supershingles") + counters.get("index_keys:simhashes")
        return max(counters.get("documents"), keys // self._keys_a_document)

    def drain(self, slices: int, until_pass: int) -> bool:
        """Sweep up to ``slices`` slices whatever the rate (``neardup expire``, which gives
        the disk back at once); whether nothing waits now, or pass ``until_pass`` began (the
        marks left wait for the containment log to fold their postings into lists)."""
        progress = self._counted()
        self._removed = 0
        self._advance(progress, slices)
        return not progress.waiting or progress.sweep_pass >= until_pass

    @property
    def sweep_pass(self) -> int:
        """The pass under way."""
        return self._read().sweep_pass

    def _counted(self) -> _Progress:
        progress = self._read()
        progress.waiting += self._removed
        return progress

    def _advance(self, progress: _Progress, slices: int) -> int:
        taken = 0
        while slices > 0 and progress.waiting:
            stop = min(progress.cursor + slices, SLICES)
            taken += self._sweep_slices(progress.cursor, stop)
            slices -= stop - progress.cursor
            progress.cursor = stop
            if stop == SLICES:  # a pass ends: the marks it took out whole are done
                progress.waiting = self._departed.forget_removed(
                    progress.sweep_pass, progress.folded
                )
                progress.sweep_pass += 1
                progress.cursor = 0
                progress.folded = self._log.progress()[1]
        self._tx.put("meta", _META_KEY, _RECORD.pack(*_fields(progress)))
        return taken

    def _sweep_slices(self, first: int, stop: int) -> int:
        """Slices ``first`` up to ``stop`` of every index and of the fingerprints: one
        ordered read of each."""
        # each document looked up once a sweep, however many lists name it: a read of the
        # whole ``gone`` table would grow with every heir a crawl ever made
        checked: dict[int, bool] = {}

        def removed(doc_ids: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
            distinct = np.unique(doc_ids)
            ids = distinct.tolist()
            unknown = [doc_id for doc_id in ids if doc_id not in checked]
            checked.update(zip(unknown, self._departed.removed(unknown), strict=True))
            flags = np.fromiter((checked[doc_id] for doc_id in ids), np.bool_, len(ids))
            found: npt.NDArray[np.bool_] = flags[np.searchsorted(distinct, doc_ids)]
            return found

        low, high = _bounds(first, stop, 4)
        taken = sum(postings.drop_removed(low, high, removed) for postings in self._indexes)
        low, high = _bounds(first, stop, 8)
        for kind in _PAGE_KINDS:
            prefix = bytes([kind])
            taken += self._fingerprints.drop_removed(prefix + low, prefix + high, removed)
        return taken


def _bounds(first: int, stop: int, width: int) -> tuple[bytes, bytes]:
    """The keys of slices ``first`` up to ``stop`` of a key space of ``width``-byte keys:
    from the first up to (not including) the second; the last slice ends past every key."""
    shift = 8 * width - _SLICE_BITS
    low = (first << shift).to_bytes(width, "big")
    if stop == SLICES:
        return low, b"\xff" * (width + 1)
    return low, (stop << shift).to_bytes(width, "big")


def _fields(progress: _Progress) -> tuple[int, int, int, int, int]:
    return (
        progress.cursor,
        progress.sweep_pass,
        progress.waiting,
        progress.folded,
        progress.due,
    )
