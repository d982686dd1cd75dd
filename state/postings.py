"""Inverted indexes from a key (super-shingle or short-document shingle) to documents.

Posting lists are capped: when a key has been carried by ``cap`` documents it becomes a stop
key (Broder's "very common shingles": boilerplate, templates). A stop key keeps no documents,
proposes no candidates, and counts how often it was asked for, for ``neardup stats``.

Keys are 32-bit values, stored as their 4 big-endian bytes. Lists grow with the corpus, and so
does what a document meets in them. So a batch meets its lists in one pass: its keys are
grouped with one stable sort, each list is read as one numpy array and appended to as bytes,
and what every document met is grouped with one sort over the whole batch; no Python runs per
entry met.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
from neardup.core import StateError

from .codec import EntryLayout, Postings
from .key_filter import FilterBudget, KeyFilter
from .meta import Counters
from .stop_keys import mark_stop
from .store import Store
from .transaction import Transaction

__all__ = ["INDEX_TABLES", "IndexTable", "Meetings", "PostingIndex", "read_key_filter"]

#: the tables that are posting indexes
IndexTable = Literal["supershingles", "shingles", "containment", "itemkeys", "simhashes"]
INDEX_TABLES: tuple[IndexTable, ...] = get_args(IndexTable)

I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
#: a key is stored as its 4 bytes, big-endian
_KEY = np.dtype(">u4")


@dataclass(frozen=True, slots=True)
class Meetings:
    """What a batch of documents met under their keys: one row per (document, earlier
    document) pair, the rows of document i at ``rows(i)``.

    Per row: the earlier document (``doc_ids``), how many of the document's keys it shared
    (``shared``), the size its entry keeps (``sizes``: a shingle count or a size class) and,
    for the last key it shared, that key's position among the document's keys (``last``) and,
    in an index that keeps positions, among its own (``last_other``). Per document: how many
    of its keys were stop keys (``stopped``), each of which may hide one more shared key.
    """

    starts: I64
    doc_ids: U64
    shared: I64
    sizes: I64
    last: I64
    last_other: I64
    stopped: I64

    def rows(self, index: int) -> slice:
        return slice(int(self.starts[index]), int(self.starts[index + 1]))

    def met(self, index: int) -> set[int]:
        """Every earlier document document ``index`` met."""
        return set(self.doc_ids[self.rows(index)].tolist())

    def owners(self) -> I64:
        """The document (its index in the batch) of each row."""
        owners: I64 = np.repeat(np.arange(len(self.starts) - 1), np.diff(self.starts))
        return owners

    def chosen(self, keep: npt.NDArray[np.bool_]) -> list[set[int]]:
        """For each document, the earlier documents of its rows where ``keep`` holds."""
        return [
            set(self.doc_ids[rows][keep[rows]].tolist())
            for rows in map(self.rows, range(len(self.starts) - 1))
        ]


@dataclass(slots=True)
class _Met:
    """The entries one document met under one key (encoded), and the key's position among the
    document's keys."""

    entries: bytes
    owner: int
    position: int


@dataclass(frozen=True, slots=True)
class _Carried:
    """A batch's keys grouped by key, in one sort: the distinct keys (ascending), and for each
    its carriers in batch order (``rows``), as indexes into the flat owner/position arrays."""

    keys: U32
    starts: I64
    counts: I64
    order: I64
    owners: I64
    positions: I64

    @classmethod
    def of(cls, key_arrays: Sequence[U32]) -> _Carried:
        lengths = np.fromiter((len(keys) for keys in key_arrays), np.int64, len(key_arrays))
        flat = (
            np.concatenate(key_arrays).astype(np.uint32, copy=False)
            if lengths.sum()
            else np.zeros(0, np.uint32)
        )
        owners = np.repeat(np.arange(len(key_arrays), dtype=np.int64), lengths)
        firsts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        positions = np.arange(len(flat), dtype=np.int64) - firsts
        return cls.of_flat(flat, owners, positions)

    @classmethod
    def of_flat(cls, flat: U32, owners: I64, positions: I64) -> _Carried:
        """Keys laid end to end, each with its carrier and position (carriers in order)."""
        order = np.argsort(flat, kind="stable")  # stable: carriers stay in batch order
        ordered = flat[order]
        head = np.ones(len(flat), np.bool_)
        head[1:] = ordered[1:] != ordered[:-1]
        starts = np.flatnonzero(head).astype(np.int64)
        counts = np.diff(np.append(starts, len(flat))).astype(np.int64)
        return cls(ordered[starts], starts, counts, order.astype(np.int64), owners, positions)

    def rows(self, index: int) -> list[int]:
        start = int(self.starts[index])
        rows: list[int] = self.order[start : start + int(self.counts[index])].tolist()
        return rows


def _encoded(keys: U32) -> list[bytes]:
    """Each key as it is stored."""
    raw = np.asarray(keys, np.uint32).astype(_KEY).tobytes()
    return [raw[at : at + 4] for at in range(0, len(raw), 4)]


class _Batch:
    """The documents being added, and how their entries are packed."""

    def __init__(
        self,
        doc_ids: Sequence[int],
        sizes: Sequence[int],
        layout: EntryLayout,
        posts: list[bool] | None = None,
    ):
        self.doc_ids = doc_ids
        #: which documents are added (the others only meet)
        self.posts = [True] * len(doc_ids) if posts is None else posts
        self._sizes = sizes
        self._layout = layout
        # most keys are posted without a position: one entry per document serves them all
        self._plain = [layout.pack(d, s) for d, s in zip(doc_ids, sizes, strict=True)]

    def entry(self, owner: int, position: int) -> bytes:
        if position and self._layout.positions:
            return self._layout.pack(self.doc_ids[owner], self._sizes[owner], position)
        return self._plain[owner]


def read_key_filter(
    store: Store, table: IndexTable, budget: FilterBudget | None = None
) -> KeyFilter:
    """A filter of every key an index holds in ``store`` (full if ``budget`` cannot hold it)."""
    return KeyFilter.of(_key_chunks(store.keys(table)), budget)


def _key_chunks(keys: Iterator[bytes], size: int = 1 << 16) -> Iterator[U32]:
    while chunk := list(islice(keys, size)):
        raw = b"".join(chunk)
        if len(raw) != 4 * len(chunk):
            raise StateError("an index holds a key that is not 4 bytes long: the state is damaged")
        yield np.frombuffer(raw, _KEY).astype(np.uint32)


class PostingIndex:
    """Each entry keeps its document's id and a size (``layout``), so that candidates can be
    filtered before their sketches are read, and where the layout says so the key's position
    among the document's keys (``neardup.core.prefix_filter``).

    With a ``key_filter`` (the filter of every key in the index, made when first needed, and
    kept up to date here), posting does not look up keys it rules out."""

    def __init__(
        self,
        tx: Transaction,
        table: IndexTable,
        cap: int,
        layout: EntryLayout,
        key_filter: Callable[[], KeyFilter] | None = None,
        count_stop_requests: bool = True,
    ) -> None:
        self._tx = tx
        self._table = table
        self._cap = cap
        self._layout = layout
        self._key_filter = key_filter
        # an index whose stop keys are many and met by most documents (the containment
        # index) does not rewrite a stop key at each meeting to count it
        self._count_stop_requests = count_stop_requests

    def _stored(
        self, keys: U32, encoded: list[bytes], key_filter: KeyFilter | None
    ) -> list[bytes | None]:
        """The stored lists of distinct keys (``encoded``: the same keys as stored)."""
        if key_filter is None:
            return self._tx.get_many(self._table, encoded)
        asked = np.flatnonzero(key_filter.may_hold(keys)).tolist()
        stored: list[bytes | None] = [None] * len(encoded)
        for at, raw in zip(
            asked, self._tx.get_many(self._table, [encoded[at] for at in asked]), strict=True
        ):
            stored[at] = raw
        return stored

    def candidates(self, keys: U32) -> set[int]:
        """The documents sharing at least one (non-stop) key."""
        found: set[int] = set()
        for raw in self._tx.get_many(self._table, _encoded(np.unique(keys))):
            if raw is not None:
                found.update(Postings.decode(raw, self._layout).doc_ids.tolist())
        return found

    def meet(
        self, key_arrays: Sequence[U32], logged: Callable[[U32], list[bytes]] | None = None
    ) -> Meetings:
        """What each of some documents would meet under its keys, without posting them (a
        query, or documents about to be posted): the stored documents sharing a (non-stop)
        key, and how many keys each shared; stop keys are counted per document.

        ``logged``: for distinct keys, the entries posted under each that are yet to be
        appended to its stored list (``state.posting_log``); a list they take to the cap is
        a stop key, as it will be once they are appended."""
        if len(key_arrays) == 1:
            one = self._meet_one(np.asarray(key_arrays[0], np.uint32), logged)
            if one is not None:
                return one
        return self._meet_many(key_arrays, logged)

    def _meet_one(self, keys: U32, logged: Callable[[U32], list[bytes]] | None) -> Meetings | None:
        """``meet`` for one document whose keys are distinct (a query): what the general
        path does, without grouping carriers (a fixed cost, a large share of a query's
        meetings, that one document does not need); None when a key repeats."""
        order = np.argsort(keys, kind="stable")
        distinct = keys[order]
        if len(distinct) > 1 and bool((distinct[1:] == distinct[:-1]).any()):
            return None
        stopped = np.zeros(1, np.int64)
        met: list[_Met] = []
        for value, position in zip(self._met_lists(distinct, logged), order.tolist(), strict=True):
            if value is None:
                stopped[0] += 1
            elif value:
                met.append(_Met(value, 0, position))
        return self._group(met, 1, stopped)

    def _met_lists(
        self, keys: U32, logged: Callable[[U32], list[bytes]] | None
    ) -> list[bytes | None]:
        """For distinct ``keys``, the entries a document looking one up meets, the logged
        ones appended: None for a stop key (or one they take to the cap), b"" for none."""
        if not len(keys):
            return []
        key_filter = None if self._key_filter is None else self._key_filter()
        stored = self._stored(keys, _encoded(keys), key_filter)
        more = [b""] * len(stored) if logged is None else logged(keys)
        width = self._layout.dtype.itemsize
        full = self._cap * width
        lists: list[bytes | None] = []
        for raw, extra in zip(stored, more, strict=True):
            if raw is not None and len(raw) % width:  # a stop key
                lists.append(None)
                continue
            value = raw + extra if raw else extra
            # a list its logged entries take to the cap is a stop key once they are appended
            lists.append(None if len(value) >= full else value)
        return lists

    def _meet_many(
        self, key_arrays: Sequence[U32], logged: Callable[[U32], list[bytes]] | None
    ) -> Meetings:
        stopped = np.zeros(len(key_arrays), np.int64)
        carried = _Carried.of(key_arrays)
        if not len(carried.keys):
            return self._group([], len(key_arrays), stopped)
        owners, positions = carried.owners.tolist(), carried.positions.tolist()
        # the carriers as one list, sliced per key: a list per key from numpy costs more
        order, starts = carried.order.tolist(), [*carried.starts.tolist(), len(carried.order)]
        met: list[_Met] = []
        for i, value in enumerate(self._met_lists(carried.keys, logged)):
            if value == b"":
                continue
            for row in order[starts[i] : starts[i + 1]]:
                if value is None:
                    stopped[owners[row]] += 1
                else:
                    met.append(_Met(value, owners[row], positions[row]))
        return self._group(met, len(key_arrays), stopped)

    def meet_batch(
        self,
        key_arrays: Sequence[U32],
        doc_ids: Sequence[int],
        sizes: Sequence[int],
        new_documents: bool = False,
        posting: Sequence[bool] | None = None,
    ) -> Meetings:
        """Add documents in order, each under its keys with its size (and each key's position
        in its list, where the layout keeps it); what each met there (earlier ones of the batch
        included): the same as adding them one by one.

        A document already in a list (a replay) meets there what it met the first time.
        ``new_documents``: the caller vouches that none is in any list yet (ingestion posts
        only the documents it admitted as new, in the same write as their records), and no
        list is searched for them. ``posting``: which documents are added; the others meet
        what they would meet at their place in the batch, and leave no trace (a detection
        shard posts only its own documents, and looks up every document's keys)."""
        if len(sizes) != len(doc_ids) or len(key_arrays) != len(doc_ids):
            raise ValueError(f"the index {self._table!r} needs keys and a size per document")
        posts = np.ones(len(doc_ids), np.bool_) if posting is None else np.asarray(posting)
        if len(posts) != len(doc_ids):
            raise ValueError(f"the index {self._table!r} needs a posting flag per document")
        stopped = np.zeros(len(doc_ids), np.int64)
        carried = _Carried.of(key_arrays)
        if not len(carried.keys):
            return self._group([], len(doc_ids), stopped)
        poster = posts[carried.owners[carried.order]]  # per carrier, grouped by key
        written = np.logical_or.reduceat(poster, carried.starts) if len(poster) else poster
        keys, stored, absent = self._lists_of(carried, written)
        # the common case, a key new to the index carried by one document: packed in one go
        new = absent & (carried.counts == 1) & written
        only = carried.order[carried.starts[new]]  # each new key's one carrier
        owner = carried.owners[only]
        packed = self._layout.pack_many(
            np.asarray(doc_ids, np.uint64)[owner],
            np.asarray(sizes, np.int64)[owner],
            carried.positions[only],
        )
        width = self._layout.dtype.itemsize
        self._tx.put_many(
            self._table,
            dict(
                zip(
                    [keys[i] for i in np.flatnonzero(new).tolist()],
                    [packed[at : at + width] for at in range(0, len(packed), width)],
                    strict=True,
                )
            ),
        )
        met: list[_Met] = []
        batch = _Batch(doc_ids, sizes, self._layout, posts.tolist())
        # the next most common case, a stored key carried by one document: appended to here
        # unless it is a stop key, reaches the cap, or already lists the document (a replay)
        single = ~absent & (carried.counts == 1)
        carriers = carried.order[carried.starts[single]]
        full = (self._cap - 1) * width
        slow: list[int] = []
        for i, owner, position in zip(
            np.flatnonzero(single).tolist(),
            carried.owners[carriers].tolist(),
            carried.positions[carriers].tolist(),
            strict=True,
        ):
            raw = stored[i]
            assert raw is not None
            if (
                len(raw) % width
                or len(raw) >= full
                or (not new_documents and _index_of(doc_ids[owner], raw, width) is not None)
            ):
                slow.append(i)
                continue
            met.append(_Met(raw, owner, position))
            if batch.posts[owner]:
                self._tx.put(self._table, keys[i], raw + batch.entry(owner, position))
        owners, positions = carried.owners.tolist(), carried.positions.tolist()
        # keys no document of the batch posts: an absent one meets nothing and stays absent;
        # a stored one is met whole by each carrier (new documents are in no list)
        lookups = ~written & ~single
        if new_documents:
            for i in np.flatnonzero(lookups & ~absent).tolist():
                raw = stored[i]
                assert raw is not None
                rows = carried.rows(i)
                if len(raw) % width:
                    for row in rows:
                        stopped[owners[row]] += 1
                else:
                    met.extend(_Met(raw, owners[row], positions[row]) for row in rows)
            done = lookups
        else:
            done = lookups & absent
        for i in sorted(slow + np.flatnonzero(~new & ~single & ~done).tolist()):
            rows = carried.rows(i)
            self._add_in_order(
                keys[i],
                stored[i],
                [(owners[row], positions[row]) for row in rows],
                batch,
                met,
                stopped,
                new_documents,
            )
        return self._group(met, len(doc_ids), stopped)

    def post_new(
        self, key_arrays: Sequence[U32], doc_ids: Sequence[int], sizes: Sequence[int]
    ) -> None:
        """Add documents that no list holds yet, in order, each under its keys with its size,
        and group nothing of what they meet: ``meet_batch(..., new_documents=True)`` without
        its result, for an index that ingestion only writes (the containment index).

        Each key's new entries are packed in one numpy call, grouped by key, and appended
        with one slice and one concatenation a key; only a stop key, a list reaching the cap
        and a key one document carries twice take the general path."""
        if len(sizes) != len(doc_ids) or len(key_arrays) != len(doc_ids):
            raise ValueError(f"the index {self._table!r} needs keys and a size per document")
        self._post_carried(_Carried.of(key_arrays), doc_ids, sizes)

    def post_flat(
        self, keys: U32, owners: I64, doc_ids: Sequence[int], sizes: Sequence[int]
    ) -> None:
        """``post_new`` with the documents' keys laid end to end, each key with the index of
        its document (``owners``, in document order): no array per document."""
        if len(keys) != len(owners) or len(sizes) != len(doc_ids):
            raise ValueError(
                f"the index {self._table!r} needs an owner per key, a size per document"
            )
        positions = np.zeros(len(keys), np.int64)  # kept only by an index with positions
        self._post_carried(_Carried.of_flat(keys, owners, positions), doc_ids, sizes)

    def _post_carried(
        self, carried: _Carried, doc_ids: Sequence[int], sizes: Sequence[int]
    ) -> None:
        if not len(carried.keys):
            return
        keys, stored, _ = self._lists_of(carried)
        rows = carried.order  # every carrier, grouped by key, in batch order within a key
        owners = carried.owners[rows]
        width = self._layout.dtype.itemsize
        packed = self._layout.pack_many(
            np.asarray(doc_ids, np.uint64)[owners],
            np.asarray(sizes, np.int64)[owners],
            carried.positions[rows],
        )
        group = np.repeat(np.arange(len(carried.keys)), carried.counts)
        twice = np.zeros(len(carried.keys), np.bool_)
        twice[group[1:][(group[1:] == group[:-1]) & (owners[1:] == owners[:-1])]] = True
        starts = (carried.starts * width).tolist()
        ends = ((carried.starts + carried.counts) * width).tolist()
        room = self._cap * width
        updates: dict[bytes, bytes] = {}
        slow: list[int] = []
        for i, (key, raw, start, end, repeated) in enumerate(
            zip(keys, stored, starts, ends, twice.tolist(), strict=True)
        ):
            if repeated:
                slow.append(i)
            elif raw is None:
                if end - start < room:
                    updates[key] = packed[start:end]
                else:
                    slow.append(i)
            elif len(raw) % width == 0 and len(raw) + end - start < room:
                updates[key] = raw + packed[start:end]
            else:  # a stop key, or a list that reaches the cap
                slow.append(i)
        self._tx.put_many(self._table, updates)
        if slow:
            batch = _Batch(doc_ids, sizes, self._layout)
            stopped = np.zeros(len(doc_ids), np.int64)
            all_owners, positions = carried.owners.tolist(), carried.positions.tolist()
            for i in slow:
                self._add_in_order(
                    keys[i],
                    stored[i],
                    [(all_owners[row], positions[row]) for row in carried.rows(i)],
                    batch,
                    None,
                    stopped,
                    True,
                )

    @property
    def table(self) -> IndexTable:
        return self._table

    def drop_removed(
        self, start: bytes, end: bytes, removed: Callable[[U64], npt.NDArray[np.bool_]]
    ) -> int:
        """Rewrite the lists of keys from ``start`` up to ``end`` without the documents that
        ``removed`` says left for good (``state.sweep``), deleting the lists left empty; the
        entries taken out. Stop keys keep no documents and stay as they are. The lists this
        view has written count as written; the keys it created hold its own documents."""
        width = self._layout.dtype.itemsize
        keys: list[bytes] = []
        lists: list[bytes] = []
        for key, value in self._tx.stored_range(self._table, start, end):
            if len(value) % width == 0:
                keys.append(key)
                lists.append(value)
        if not lists:
            return 0
        lengths = np.fromiter((len(raw) // width for raw in lists), np.int64, len(lists))
        entries: npt.NDArray[Any] = np.frombuffer(b"".join(lists), self._layout.dtype)
        gone = removed(entries["id"].astype(np.uint64))
        if not gone.any():
            return 0
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        hit = np.logical_or.reduceat(gone, bounds[:-1])
        emptied = 0
        for i in np.flatnonzero(hit).tolist():
            begin, stop = int(bounds[i]), int(bounds[i + 1])
            kept = entries[begin:stop][~gone[begin:stop]]
            if len(kept):
                self._tx.put(self._table, keys[i], kept.tobytes())
            else:
                self._tx.delete(self._table, keys[i])
                emptied += 1
        if emptied:
            Counters(self._tx).add(f"index_keys:{self._table}", -emptied)
        return int(np.count_nonzero(gone))

    def _lists_of(
        self, carried: _Carried, written: Any = None
    ) -> tuple[list[bytes], list[bytes | None], Any]:
        """A batch's distinct keys as stored, their stored lists, and which are absent; the
        absent ones that the caller writes (``written``, by default all) are counted as new
        keys and added to the key filter."""
        keys = _encoded(carried.keys)
        key_filter = None if self._key_filter is None else self._key_filter()
        stored = self._stored(carried.keys, keys, key_filter)
        absent = np.fromiter((raw is None for raw in stored), np.bool_, len(stored))
        created = absent if written is None else absent & written
        new_keys = int(np.count_nonzero(created))
        if new_keys:
            Counters(self._tx).add(f"index_keys:{self._table}", new_keys)
        if key_filter is not None:
            key_filter.add(carried.keys[created])
        return keys, stored, absent

    def _add_in_order(
        self,
        key: bytes,
        raw: bytes | None,
        owners: list[tuple[int, int]],
        batch: _Batch,
        met: list[_Met] | None,
        stopped: I64,
        new_documents: bool,
    ) -> None:
        """Post a key's carriers in batch order (those that post); what each met goes to
        ``met`` (when given)."""
        width = self._layout.dtype.itemsize
        posts = batch.posts
        # only a stop key is not a whole number of entries: the others are not decoded here
        if raw is not None and len(raw) % width:
            for owner, _ in owners:
                stopped[owner] += 1
            if self._count_stop_requests:
                requests = Postings.decode(raw, self._layout).requests
                posted = sum(posts[owner] for owner, _ in owners)
                self._mark_stop(key, requests + posted, previous=requests)
            return
        # bytes, not arrays: most lists are short, and numpy's set-up would cost more
        value = raw or b""
        distinct = len({owner for owner, _ in owners}) == len(owners)
        if new_documents and distinct and len(value) + len(owners) * width < self._cap * width:
            # none of them is listed yet (nor twice here: a document may repeat a key), and
            # the list stays under the cap: appended at once
            entries = [
                batch.entry(owner, position) if posts[owner] else b"" for owner, position in owners
            ]
            if met is not None:
                for index, (owner, position) in enumerate(owners):
                    met.append(_Met(value + b"".join(entries[:index]), owner, position))
            if any(entries):
                self._tx.put(self._table, key, value + b"".join(entries))
            return
        met = [] if met is None else met
        before = value
        for index, (owner, position) in enumerate(owners):
            seen = _index_of(batch.doc_ids[owner], value, width)
            if seen is not None:  # a replay meets the same documents as the first time
                met.append(_Met(value[: seen * width], owner, position))
                continue
            met.append(_Met(value, owner, position))
            if not posts[owner]:
                continue
            value += batch.entry(owner, position)
            if len(value) >= self._cap * width:  # later carriers in the batch still count
                later = owners[index + 1 :]
                for other, _ in later:
                    stopped[other] += 1
                requests = len(value) // width + sum(posts[other] for other, _ in later)
                self._mark_stop(key, requests)
                return
        if value != before:
            self._tx.put(self._table, key, value)

    def _group(self, met: list[_Met], documents: int, stopped: I64) -> Meetings:
        """One row per (document, earlier document): how many keys they shared, and what the
        last shared entry (in the document's key order) says."""
        met = [m for m in met if m.entries]  # a key new to the index, or replayed first, met none
        if not met:
            empty = np.zeros(0, np.int64)
            starts = np.zeros(documents + 1, np.int64)
            return Meetings(starts, empty.astype(np.uint64), empty, empty, empty, empty, stopped)
        layout = self._layout
        width = layout.dtype.itemsize
        lengths = np.fromiter((len(m.entries) // width for m in met), np.int64, len(met))
        entries: npt.NDArray[Any] = np.frombuffer(b"".join(m.entries for m in met), layout.dtype)
        owner = np.repeat(np.fromiter((m.owner for m in met), np.int64, len(met)), lengths)
        last = np.repeat(np.fromiter((m.position for m in met), np.int64, len(met)), lengths)
        ids, sizes = entries["id"].astype(np.uint64), entries["size"].astype(np.int64)
        if layout.positions:
            other = entries["position"].astype(np.int64)
        else:
            other = np.zeros(len(ids), np.int64)
        order = np.lexsort((last, ids, owner))  # by document, earlier document, key position
        owner, ids = owner[order], ids[order]
        first = np.ones(len(order), np.bool_)
        first[1:] = (owner[1:] != owner[:-1]) | (ids[1:] != ids[:-1])
        begins = np.flatnonzero(first)
        ends = np.append(begins[1:], len(order)) - 1
        rows = order[ends]  # each pair's entry with the largest key position
        return Meetings(
            starts=np.searchsorted(owner[begins], np.arange(documents + 1)).astype(np.int64),
            doc_ids=ids[begins],
            shared=ends - begins + 1,
            sizes=sizes[rows],
            last=last[rows],
            last_other=other[rows],
            stopped=stopped,
        )

    def _mark_stop(self, key: bytes, requests: int, previous: int | None = None) -> None:
        """``previous``: the requests counted before, for a key that was a stop key already."""
        if previous is None:
            Counters(self._tx).add(f"stop_keys:{self._table}")
        self._tx.put(self._table, key, Postings.stop(requests))
        mark_stop(self._tx, self._table, key, requests, previous)


def _index_of(doc_id: int, value: bytes, width: int) -> int | None:
    """Where a document already is in an encoded list (entries of ``width`` bytes), if it is."""
    needle = doc_id.to_bytes(8, "big")
    found = value.find(needle)
    while found >= 0 and found % width:  # the bytes matched across two entries
        found = value.find(needle, found + 1)
    return None if found < 0 else found // width
