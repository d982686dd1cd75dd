"""New postings of an index logged a batch at a time, and folded into its lists a key range
at a time.

Appending a document to a posting list reads the list and writes it back whole (rocksdict
has no merge operator). A page of a near-duplicate family appends to the lists its family
appended to a moment before, so lists appended to batch by batch are rewritten again and
again (docs/containment.md, "The posting log", has the counts). So a batch writes its new
postings as one record of the log instead, and folds one of ``FOLD_RANGES`` key ranges (the
top four bits of a key) of every record into the lists. A posting then waits at most
``FOLD_RANGES`` batches, and a list gets all its family's postings of those batches in one
rewrite, with the same cost every batch.

A reader sees a list as its stored value followed by the postings of its key still in the
log, in the order they were logged: exactly the list that posting batch by batch would have
stored, stop keys included (a list that reaches the cap is a stop key, folded or not). The
log's records and the fold marks are read from the store, decoded once per process, and
shared by a state's views (``LoggedPostings``); a view's own uncommitted record is added to
what it reads (``PostingLog``). A query in another thread than the writer's reads the log
and the lists at two moments, and may meet a fold's lists with the log from before it: a
document then counts twice under those keys, which lets it past a filter to its estimate,
no further (the writer's own reads are consistent).

A record: the number of documents n (4 bytes), their ids (8 bytes each), sizes (2 bytes),
key counts (4 bytes), then every document's keys (4 bytes each, big-endian). The meta value
``log:<index>``: the next record number, and per range the last record folded into it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from neardup.core import StateError

from .codec import EntryLayout
from .postings import IndexTable, Meetings, PostingIndex
from .store import Store, Table
from .transaction import Transaction

__all__ = ["FOLD_RANGES", "LoggedPostings", "PostingLog"]

I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]

#: key ranges, one folded per batch: the batches a posting waits in the log
FOLD_RANGES = 16
_RANGE_SHIFT = np.uint32(28)  # the top four bits of a key name its range
_MARKS = np.dtype(">i8")
#: reads of the log a reader tries while a writer's commits keep folding what it reads
_READ_TRIES = 10


def _ranges(keys: U32) -> I64:
    ranges: I64 = (keys >> _RANGE_SHIFT).astype(np.int64)
    return ranges


@dataclass(frozen=True, slots=True)
class _Record:
    """One batch's postings, as logged (per document), by key (for lookups) and by key range
    (for folding)."""

    seq: int
    doc_ids: U64
    sizes: I64
    lengths: I64
    keys: U32  # every document's keys, document after document
    owners: I64  # the document of each of ``keys``
    by_key: U32  # ``keys`` sorted, documents in order within a key
    entry_array: npt.NDArray[Any]  # the index entry of each of ``by_key`` (layout's dtype)
    by_range: I64  # positions in ``keys``, range after range, documents in order
    range_starts: I64  # where each range starts in ``by_range`` (and where the last ends)

    @classmethod
    def of(
        cls, seq: int, doc_ids: U64, sizes: I64, lengths: I64, keys: U32, layout: EntryLayout
    ) -> _Record:
        owners = np.repeat(np.arange(len(doc_ids), dtype=np.int64), lengths)
        order = np.argsort(keys, kind="stable")
        packed = layout.pack_many(doc_ids[owners[order]], sizes[owners[order]], 0)
        entries = np.frombuffer(packed, layout.dtype)
        ranges = _ranges(keys)
        by_range = np.argsort(ranges, kind="stable").astype(np.int64)
        starts = np.searchsorted(ranges[by_range], np.arange(FOLD_RANGES + 1)).astype(np.int64)
        return cls(
            seq, doc_ids, sizes, lengths, keys, owners, keys[order], entries, by_range, starts
        )

    @classmethod
    def decode(cls, seq: int, raw: bytes, layout: EntryLayout) -> _Record:
        n = int.from_bytes(raw[:4], "big")
        at = 4
        if len(raw) < at + 14 * n:
            raise StateError(f"posting log record {seq} has {len(raw)} bytes: the state is damaged")
        doc_ids = np.frombuffer(raw, ">u8", n, at).astype(np.uint64)
        at += 8 * n
        sizes = np.frombuffer(raw, ">u2", n, at).astype(np.int64)
        at += 2 * n
        lengths = np.frombuffer(raw, ">u4", n, at).astype(np.int64)
        at += 4 * n
        total = int(lengths.sum())
        if len(raw) != at + 4 * total:
            raise StateError(f"posting log record {seq} has {len(raw)} bytes: the state is damaged")
        keys = np.frombuffer(raw, ">u4", total, at).astype(np.uint32)
        return cls.of(seq, doc_ids, sizes, lengths, keys, layout)

    def encode(self) -> bytes:
        return b"".join(
            [
                len(self.doc_ids).to_bytes(4, "big"),
                self.doc_ids.astype(">u8").tobytes(),
                self.sizes.astype(">u2").tobytes(),
                self.lengths.astype(">u4").tobytes(),
                self.keys.astype(">u4").tobytes(),
            ]
        )

    def in_range(self, fold_range: int) -> tuple[U32, I64]:
        """The keys in a range, document after document, and the document of each."""
        at = self.by_range[self.range_starts[fold_range] : self.range_starts[fold_range + 1]]
        return self.keys[at], self.owners[at]


@dataclass(frozen=True, slots=True)
class _Marks:
    """The next record's number, and per range the last record folded into the lists."""

    next_seq: int = 0
    folded: tuple[int, ...] = (-1,) * FOLD_RANGES

    @classmethod
    def decode(cls, raw: bytes | None) -> _Marks:
        if raw is None:
            return cls()
        values = np.frombuffer(raw, _MARKS).tolist()
        return cls(values[0], tuple(values[1:]))

    def encode(self) -> bytes:
        return np.array([self.next_seq, *self.folded], _MARKS).tobytes()


@dataclass(frozen=True, slots=True)
class _Live:
    """The postings of a snapshot not yet folded, by key, in the order they were logged: the
    entries of older records merged (one search finds a key's entries in all of them), and
    up to ``_RECENT`` newer records searched one by one. Entries folded since the merge stay
    where they are and lookups pass over them (a record leaves the log once it is folded
    in every range, so its entries are passed over too).

    A reader gets a new snapshot at each batch of its writer, which adds a record and folds
    a range: merging each one at once copied every array three times a batch, more than the
    lookups of many queries cost (docs/containment.md); merged every few, in one copy, a
    batch costs a few searches more per query until then."""

    keys: U32
    seqs: I64
    entries: npt.NDArray[Any]  # of the layout's dtype
    #: records newer than every merged one, oldest first
    recent: tuple[_Record, ...] = ()
    #: the snapshot's records: entries of any other are gone
    held: frozenset[int] = frozenset()
    #: the marks the merged entries were kept against
    merged_at: I64 = field(default_factory=lambda: np.full(FOLD_RANGES, -1, np.int64))

    @classmethod
    def of(cls, records: Sequence[_Record], folded: I64, layout: EntryLayout) -> _Live:
        return cls.empty(layout).updated(records, folded)

    @classmethod
    def empty(cls, layout: EntryLayout) -> _Live:
        return cls(np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, layout.dtype))

    def updated(self, records: Sequence[_Record], folded: I64) -> _Live:
        """This log once its records are ``records`` (the same or later ones) and the ranges
        are folded up to ``folded``."""
        wanted = frozenset(record.seq for record in records)
        recent = tuple(record for record in self.recent if record.seq in wanted) + tuple(
            record for record in records if record.seq not in self.held
        )
        if len(recent) <= _RECENT:
            return _Live(self.keys, self.seqs, self.entries, recent, wanted, self.merged_at)
        return self.merged(recent, folded, wanted)

    def merged(self, recent: Sequence[_Record], folded: I64, held: frozenset[int]) -> _Live:
        """The merged entries with ``recent`` (the records after them) merged in: the live
        postings of the records ``held``, folded up to ``folded``."""
        # entries folded out are dropped (a record leaves the log once folded in
        # every range), the recent records' others put after what their keys hold
        keep = self.seqs > folded[_ranges(self.keys)]
        added_keys, added_seqs, added_entries = [], [], []
        for record in recent:
            live = record.seq > folded[_ranges(record.by_key)]
            added_keys.append(record.by_key[live])
            added_seqs.append(np.full(int(live.sum()), record.seq, np.int64))
            added_entries.append(record.entry_array[live])
        added = np.concatenate(added_keys)
        order = np.argsort(added, kind="stable")  # records in order within a key
        kept = int(keep.sum())
        # where each added entry goes among the kept ones and the others added
        at = np.searchsorted(self.keys[keep], added[order], "right") + np.arange(len(added))
        is_added = np.zeros(kept + len(added), np.bool_)
        is_added[at] = True

        def put(old: npt.NDArray[Any], new: npt.NDArray[Any]) -> npt.NDArray[Any]:
            out = np.empty(len(is_added), old.dtype)
            out[~is_added] = old[keep]
            out[is_added] = new[order]
            return out

        return _Live(
            put(self.keys, added),
            put(self.seqs, np.concatenate(added_seqs)),
            put(self.entries, np.concatenate(added_entries)),
            (),
            held,
            folded.copy(),
        )

    def lookup(self, keys: U32, folded: I64) -> list[bytes]:
        """For each of ``keys`` (distinct), its entries not folded (``folded``: the marks),
        packed, in the order they were logged."""
        ranges = _ranges(keys)
        limit = folded[ranges]  # a key's entries of later records are not folded
        # merged entries are all live but in the ranges folded since the merge
        checked = limit > self.merged_at[ranges]
        found = [b""] * len(keys)
        lo = np.searchsorted(self.keys, keys, "left")
        hi = np.searchsorted(self.keys, keys, "right")
        hits = np.flatnonzero(hi > lo)  # a writer's batch looks up tens of thousands of keys
        whole = hits[~checked[hits]]
        for at, start, stop in zip(
            whole.tolist(), lo[whole].tolist(), hi[whole].tolist(), strict=True
        ):
            found[at] = self.entries[start:stop].tobytes()
        passed = hits[checked[hits]]
        if len(passed):  # the entries of these keys' runs that are not folded, all at once
            lengths = (hi - lo)[passed]
            firsts = np.cumsum(lengths) - lengths
            rows = np.repeat(lo[passed] - firsts, lengths) + np.arange(int(lengths.sum()))
            alive = self.seqs[rows] > np.repeat(limit[passed], lengths)
            raw = self.entries[rows[alive]].tobytes()
            sizes = np.add.reduceat(alive.astype(np.int64), firsts) * self.entries.dtype.itemsize
            ends = np.cumsum(sizes).tolist()
            for at, end, size in zip(passed.tolist(), ends, sizes.tolist(), strict=True):
                found[at] = raw[end - size : end]
        for record in self.recent:
            start = np.searchsorted(record.by_key, keys, "left")
            stop = np.searchsorted(record.by_key, keys, "right")
            for at in np.flatnonzero((stop > start) & (record.seq > limit)).tolist():
                found[at] += record.entry_array[start[at] : stop[at]].tobytes()
        return found


#: records a reader's live postings search one by one before merging them
_RECENT = 4
#: lookups of one snapshot after which its recent records are merged (a writer gone quiet:
#: past that many lookups, the searches a merge saves outweigh its copy)
_MERGE_AFTER = 200


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """The log as one reader sees it: its records (oldest first) and marks."""

    records: tuple[_Record, ...]
    marks: _Marks
    layout: EntryLayout
    #: a reader's snapshot before this one, from which ``live`` is made at the first lookup
    since: _Snapshot | None = None
    _folded: I64 = field(init=False)
    _live: _Live | None = field(init=False, default=None)
    _lookups: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_folded", np.array(self.marks.folded, np.int64))

    def live(self) -> _Live:
        if self._live is None:
            before = None if self.since is None else self.since._live
            live = (
                _Live.of(self.records, self._folded, self.layout)
                if before is None
                else before.updated(self.records, self._folded)
            )
            object.__setattr__(self, "_live", live)
            object.__setattr__(self, "since", None)  # no chain of snapshots held
        assert self._live is not None
        return self._live

    def entries(self, keys: U32) -> list[bytes]:
        """For each of ``keys`` (distinct), its postings still in the log, packed, in the
        order they were logged."""
        if not self.records or not len(keys):
            return [b""] * len(keys)
        live = self.live()
        object.__setattr__(self, "_lookups", self._lookups + 1)
        if live.recent and self._lookups == _MERGE_AFTER:
            live = live.merged(live.recent, self._folded, live.held)
            object.__setattr__(self, "_live", live)
        return live.lookup(keys, self._folded)

    def unfolded(self, fold_range: int) -> tuple[U32, I64, list[int], list[int]]:
        """The postings of a range not yet folded, in the order they were logged: their keys,
        the document of each (an index into the documents that follow), and the ids and sizes
        of the records' documents, record after record."""
        keys: list[U32] = []
        owners: list[I64] = []
        doc_ids: list[int] = []
        sizes: list[int] = []
        for record in self.records:
            if record.seq <= self.marks.folded[fold_range]:
                continue
            chosen, owner = record.in_range(fold_range)
            keys.append(chosen)
            owners.append(owner + len(doc_ids))
            doc_ids += record.doc_ids.tolist()
            sizes += record.sizes.tolist()
        if not keys:
            return np.zeros(0, np.uint32), np.zeros(0, np.int64), [], []
        return np.concatenate(keys), np.concatenate(owners), doc_ids, sizes


def _built(snapshot: _Snapshot | None) -> _Snapshot | None:
    """The latest snapshot whose live postings are made, from ``snapshot`` back: the one a
    new snapshot makes its own from (a writer that never looks up would otherwise keep a
    chain of every snapshot since its last lookup)."""
    if snapshot is None or snapshot._live is not None:
        return snapshot
    return snapshot.since


class LoggedPostings:
    """An index's log as this process last read it from its store, shared by the views of a
    state: each record is read and decoded once."""

    def __init__(self, index: IndexTable, table: Table, layout: EntryLayout) -> None:
        self.table = table
        self.layout = layout
        self.meta_key = b"log:" + index.encode()
        self._lock = threading.Lock()
        self._records: dict[int, _Record] = {}
        #: the marks last read, as stored, and the log they describe
        self._raw: bytes | None = None
        self._snapshot: _Snapshot | None = None
        #: records this process wrote, as encoded: one read back as written is not decoded
        #: again (a writer reads each batch's record back at its next batch)
        self._offered: dict[int, tuple[bytes, _Record]] = {}

    def offer(self, record: _Record, raw: bytes) -> None:
        """A record a view is writing, encoded as ``raw`` (it may not be committed)."""
        with self._lock:
            self._offered[record.seq] = (raw, record)

    def read(self, store: Store) -> _Snapshot:
        """The committed log.

        Every batch writes the marks, so unchanged marks are an unchanged log; and the
        records are those numbered after the last one folded into every range, up to the
        next: none is listed."""
        for _ in range(_READ_TRIES):
            raw = store.get("meta", self.meta_key)
            with self._lock:
                if raw == self._raw and self._snapshot is not None:
                    snapshot = self._snapshot
                    break
            committed = _Marks.decode(raw)
            live = range(min(committed.folded) + 1, committed.next_seq)
            with self._lock:
                known = {seq: self._records[seq] for seq in live if seq in self._records}
            missing = [seq for seq in live if seq not in known]
            raws = store.get_many(self.table, [seq.to_bytes(8, "big") for seq in missing])
            if any(value is None for value in raws):
                continue  # folded by a commit since the marks were read: read them again
            with self._lock:
                offered = {seq: self._offered.pop(seq, None) for seq in missing}
            for seq, value in zip(missing, raws, strict=True):
                assert value is not None
                written = offered[seq]
                if written is not None and written[0] == value:  # not one rolled back
                    known[seq] = written[1]
                else:
                    known[seq] = _Record.decode(seq, value, self.layout)
            records = tuple(known[seq] for seq in live)
            snapshot = _Snapshot(records, committed, self.layout, _built(self._snapshot))
            with self._lock:
                self._records, self._raw, self._snapshot = known, raw, snapshot
            break
        else:
            raise StateError(f"the {self.table!r} log keeps changing while it is read")
        return snapshot


class PostingLog:
    """A posting index (``index``) whose new documents are logged, as one view reads and
    writes it: ``meet`` as ``PostingIndex.meet``, ``post_new`` as ``PostingIndex.post_new``
    (each adds what the other does, in the same transaction)."""

    def __init__(self, tx: Transaction, index: PostingIndex, logged: LoggedPostings) -> None:
        self._tx = tx
        self._index = index
        self._logged = logged
        #: this view's uncommitted marks and records, and the committed records it deleted
        self._marks: _Marks | None = None
        self._written: list[_Record] = []
        self._deleted: set[int] = set()

    @property
    def lists(self) -> PostingIndex:
        """The stored lists, without the log."""
        return self._index

    def _snapshot(self) -> _Snapshot:
        committed = self._logged.read(self._tx.store)
        if self._marks is None:
            return committed
        kept = [r for r in committed.records if r.seq not in self._deleted] + self._written
        return _Snapshot(tuple(kept), self._marks, self._logged.layout, _built(committed))

    def _mark(self, marks: _Marks) -> None:
        self._marks = marks
        self._tx.put("meta", self._logged.meta_key, marks.encode())

    def progress(self) -> tuple[int, int]:
        """(the next record's number, the last record folded into every range): the
        records from the first on may hold postings not in the lists yet."""
        marks = self._snapshot().marks
        return marks.next_seq, min(marks.folded)

    def meet(self, key_arrays: Sequence[U32]) -> Meetings:
        """What each document would meet under its keys, the logged postings included."""
        return self._index.meet(key_arrays, self._snapshot().entries)

    def post_new(
        self, key_arrays: Sequence[U32], doc_ids: Sequence[int], sizes: Sequence[int]
    ) -> None:
        """Log new documents, as ``PostingIndex.post_new`` would post them, and fold one key
        range of the log into the lists."""
        if len(sizes) != len(doc_ids) or len(key_arrays) != len(doc_ids):
            raise ValueError("the posting log needs keys and a size per document")
        if not any(len(keys) for keys in key_arrays):
            return  # nothing to log (a batch replayed, already applied): nothing changes
        snapshot = self._snapshot()
        marks = snapshot.marks
        seq = marks.next_seq
        fold_range = seq % FOLD_RANGES
        self._index.post_flat(*snapshot.unfolded(fold_range))
        folded = list(marks.folded)
        folded[fold_range] = seq - 1
        done = min(folded)
        for record in snapshot.records:
            if record.seq <= done:
                self._tx.delete(self._logged.table, record.seq.to_bytes(8, "big"))
                self._deleted.add(record.seq)
        self._written = [r for r in self._written if r.seq > done]
        lengths = np.fromiter((len(keys) for keys in key_arrays), np.int64, len(key_arrays))
        keys: U32 = (
            np.concatenate(key_arrays).astype(np.uint32, copy=False)
            if lengths.sum()
            else np.zeros(0, np.uint32)
        )
        record = _Record.of(
            seq,
            np.asarray(doc_ids, np.uint64),
            np.asarray(sizes, np.int64),
            lengths,
            keys,
            self._logged.layout,
        )
        raw = record.encode()
        self._tx.put(self._logged.table, seq.to_bytes(8, "big"), raw)
        self._logged.offer(record, raw)
        self._written.append(record)
        self._mark(_Marks(seq + 1, tuple(folded)))
