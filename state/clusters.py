"""Clusters as union-find in the key-value store, with sizes and stable ids.

A cluster's id is the doc id of its root. A new document joins an existing cluster under that
cluster's id; when two existing clusters join, the one whose root is older (earlier
``fetched_at``, then smaller doc id) keeps its id and the other id is retired. Finds compress
paths, so chains stay short.

Two more structures answer queries without a scan of the state: each cluster's members form a
circular list, spliced in O(1) when clusters join, so a cluster's members are a walk from its
root (a member's next is stored beside its parent; a root's, in ``ring``); and ``sizes``
keys every cluster of two or more by its size, largest first, so the largest clusters are the
first keys of an ordered read.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from .codec import (
    CLUSTER_LAYOUT,
    VERSION,
    ClusterInfo,
    decode_id,
    encode_id,
    fetched_at_from_micros,
)
from .committed import CachedTable, CacheView, CommittedCache
from .documents import Documents
from .meta import Counters
from .transaction import Transaction

__all__ = ["Clusters", "size_class"]

_INVERTED = (1 << 64) - 1
_PRESENT = b"\x01"  # stored values are never empty
_CLUSTER_INFO = CLUSTER_LAYOUT.pack  # ClusterInfo.pack, without a Python call around it
_VERSION = VERSION


def size_class(size: int) -> int:
    """The power-of-two class of a cluster size: 2-3 is class 1, 4-7 class 2, and so on."""
    return size.bit_length() - 1


_SIZE_KEY = struct.Struct(">QQ")
#: the counter of each size class, named once (a merge counts two or three)
_CLASS_COUNTERS = tuple(f"cluster_sizes:{number}" for number in range(65))


#: a size key, of (_INVERTED - size, root): larger clusters first, then smaller ids
_SIZE_KEY_PACK = _SIZE_KEY.pack


def _unsize(writes: dict[bytes, bytes | None], key: bytes) -> None:
    """Delete a size key. One that this transaction put was never stored (a cluster's size
    only grows, so its stored key is for a smaller size): it is dropped, with no tombstone
    for RocksDB to write and compact away."""
    if writes.pop(key, None) is None:
        writes[key] = None


def _count(changes: dict[str, int], kept_size: int, retired_size: int, size: int) -> None:
    """The changes a merge makes to the gauges a scrape reads instead of the tables:
    clusters of two or more, the documents in them, and clusters per size class."""
    get = changes.get
    changes["clusters"] = get("clusters", 0) + 1 - (kept_size > 1) - (retired_size > 1)
    joined = (kept_size == 1) + (retired_size == 1)
    changes["documents_in_clusters"] = get("documents_in_clusters", 0) + joined
    for old in (kept_size, retired_size):
        if old > 1:
            name = _CLASS_COUNTERS[old.bit_length() - 1]  # size_class
            changes[name] = get(name, 0) - 1
    name = _CLASS_COUNTERS[size.bit_length() - 1]
    changes[name] = get(name, 0) + 1


# Cached values are ints, never tuples: an int is no object for the garbage collector to
# follow, and a dict holding only ints is not followed at all, where a tuple per member made
# every full collection walk the whole union-find (with a large state or process, those
# passes cost more than the union stage's own work).
_ID_BITS = 64
_ID_MASK = (1 << _ID_BITS) - 1


def _parent_entry(parent: int, ring_next: int | None) -> int:
    """A parent and, for a member, the next member of its ring (see _next), as one int."""
    return parent | (0 if ring_next is None else (ring_next + 1) << _ID_BITS)


def _ring_next(entry: int) -> int | None:
    """The next member kept beside a parent (``_parent_entry``), if any."""
    return (entry >> _ID_BITS) - 1 if entry >> _ID_BITS else None


def _info_entry(size: int, micros: int) -> int:
    """A cluster's size and its root's fetched_at in microseconds (negative for none), as
    one int: ``entry & _ID_MASK`` and ``entry >> _ID_BITS`` read them back."""
    return (micros << _ID_BITS) | size


def _load_parent(raw: bytes | None) -> int | None:
    if raw is None:
        return None
    return _parent_entry(decode_id(raw[:8]), decode_id(raw[8:]) if len(raw) == 16 else None)


def _decoded_id(raw: bytes | None) -> int | None:
    return None if raw is None else decode_id(raw)


def _load_info(raw: bytes | None) -> int | None:
    return None if raw is None else _info_entry(*ClusterInfo.unpack(raw))


class Clusters:
    def __init__(
        self, tx: Transaction, documents: Documents, cache: CacheView | None = None
    ) -> None:
        self._tx = tx
        self._documents = documents
        self._counters = Counters(tx)
        cache = cache or CommittedCache(0).view()
        store = tx.store
        self._parents: CachedTable[int] = cache.table(  # _parent_entry
            "parents", lambda doc_id: _load_parent(store.get("parents", encode_id(doc_id)))
        )
        self._ring: CachedTable[int] = cache.table(
            "ring", lambda root: _decoded_id(store.get("ring", encode_id(root)))
        )
        # of a cluster of two or more: _info_entry
        self._infos: CachedTable[int] = cache.table(
            "clusters", lambda root: _load_info(store.get("clusters", encode_id(root)))
        )

    def add_singles(self, doc_ids: Iterable[int]) -> None:
        """Documents the state has never held, each in a cluster of its own: they have no
        entry in the union-find tables, which union-find then need not look up (nothing is
        written)."""
        absent = dict.fromkeys(doc_ids)
        self._parents.update(absent)
        self._ring.update(absent)
        self._infos.update(absent)

    def find(self, doc_id: int) -> int:
        """The root (cluster id) of a document's cluster."""
        parents = self._parents
        entry = parents[doc_id]
        if entry is None:
            return doc_id
        parent = entry & _ID_MASK
        if parents[parent] is None:  # most finds: a root, or a member of one
            return parent
        path = []
        node = doc_id
        while (entry := parents[node]) is not None:
            path.append((node, entry))
            node = entry & _ID_MASK
        for visited, entry in path[:-1]:  # the last one already points at the root
            self._put_parent(visited, node, _ring_next(entry))  # the ring's next is kept: see _next
        return node

    def _put_parent(self, doc_id: int, parent: int, ring_next: int | None) -> None:
        raw = encode_id(parent) if ring_next is None else encode_id(parent) + encode_id(ring_next)
        self._tx.put("parents", encode_id(doc_id), raw)
        self._parents[doc_id] = _parent_entry(parent, ring_next)

    def _size_and_time(self, root: int) -> tuple[int, int]:
        """(size, root's fetched_at in microseconds): ``info`` without formatting the time."""
        found = self._infos[root]
        if found is not None:
            return found & _ID_MASK, found >> _ID_BITS
        return 1, self._documents.fetched_micros(root)

    def info(self, root: int) -> ClusterInfo:
        size, micros = self._size_and_time(root)
        return ClusterInfo(size, fetched_at_from_micros(micros))

    def age(self, root: int) -> tuple[int, int]:
        """Sort key: the smaller, the older (missing fetched_at counts as oldest). Times in
        microseconds order as the fixed-width fetched_at strings do."""
        return (self._size_and_time(root)[1], root)

    def merge(self, survivor: int, retired: int, gauges: dict[str, int] | None = None) -> int:
        """Join the cluster rooted at ``retired`` into ``survivor``'s (both roots, as ``find``
        gives them); returns the new size. ``gauges``: where to add the changes of the
        cluster gauges, for the caller to add to the counters once for many merges (by
        default they are added at once)."""
        if gauges is None:
            changes: dict[str, int] = {}
            size = self._merge(survivor, retired, changes)
            self._counters.add_many(changes)
            return size
        return self._merge(survivor, retired, gauges)

    def join(
        self, doc_id: int, matches: Sequence[int], gauges: dict[str, int]
    ) -> tuple[int, int, list[tuple[int, int]]]:
        """Join a document new to the state (``add_singles``) with the clusters of its
        ``matches``: the oldest cluster (``age``) keeps its id. Returns that id, the size once
        the document joined, and each other cluster merged into it, oldest first, with the
        size after it; ``gauges`` as for ``merge``."""
        if len(matches) == 1:  # most documents: one match, one cluster, nothing to order
            survivor, others = self.find(matches[0]), []
        else:
            roots = {self.find(match) for match in matches}
            ordered = sorted(roots, key=self.age) if len(roots) > 1 else list(roots)
            survivor, others = ordered[0], ordered[1:]
        size = self._merge(survivor, doc_id, gauges)
        return survivor, size, [(root, self._merge(survivor, root, gauges)) for root in others]

    def _merge(self, survivor: int, retired: int, gauges: dict[str, int]) -> int:
        infos, ring = self._infos, self._ring
        kept = infos[survivor]  # as _size_and_time, without the call
        if kept is None:
            kept_size, kept_time = 1, self._documents.fetched_micros(survivor)
        else:
            kept_size, kept_time = kept & _ID_MASK, kept >> _ID_BITS
        if survivor == retired:
            return kept_size
        retired_info = infos[retired]
        retired_size = 1 if retired_info is None else retired_info & _ID_MASK
        size = kept_size + retired_size
        # splice the two member rings: next(survivor) <-> next(retired); a root's next is in
        # ``ring`` (a root has no parent), or it is a ring of one
        after_survivor = ring[survivor]
        after = survivor if after_survivor is None else after_survivor
        retired_next = ring[retired]
        after_retired = retired if retired_next is None else retired_next
        survivor_key, retired_key = encode_id(survivor), encode_id(retired)
        writes = self._tx.writes
        writes("parents")[retired_key] = survivor_key + encode_id(after)
        self._parents[retired] = survivor | (after + 1) << _ID_BITS  # _parent_entry
        ring_writes = writes("ring")
        if retired_next is not None:  # no tombstones for what a single document never had
            ring_writes[retired_key] = None
            ring[retired] = None
        ring_writes[survivor_key] = encode_id(after_retired)
        ring[survivor] = after_retired
        info_writes = writes("clusters")
        if retired_info is not None:
            info_writes[retired_key] = None
            infos[retired] = None
        info_writes[survivor_key] = _CLUSTER_INFO(_VERSION, size, kept_time)
        infos[survivor] = kept_time << _ID_BITS | size  # _info_entry
        size_writes = writes("sizes")
        if kept_size > 1:
            _unsize(size_writes, _SIZE_KEY_PACK(_INVERTED - kept_size, survivor))
        if retired_size > 1:
            _unsize(size_writes, _SIZE_KEY_PACK(_INVERTED - retired_size, retired))
        size_writes[_SIZE_KEY_PACK(_INVERTED - size, survivor)] = _PRESENT
        _count(gauges, kept_size, retired_size, size)
        return size

    def size_classes(self) -> dict[int, int]:
        """Clusters of two or more per size class (``size_class``), from stored counters."""
        prefix = "cluster_sizes:"
        return {
            int(name[len(prefix) :]): count
            for name, count in self._counters.with_prefix(prefix).items()
            if count
        }

    def _next(self, doc_id: int) -> int:
        """The member after ``doc_id`` in its cluster's ring. A member that has a parent keeps
        it beside the parent (one entry per document, not two); a root, in ``ring``; a single
        document is a ring of one."""
        entry = self._parents[doc_id]
        if entry is not None and entry >> _ID_BITS:
            return (entry >> _ID_BITS) - 1
        ringed = self._ring[doc_id]
        return doc_id if ringed is None else ringed

    def members_of(
        self, root: int, after: int | None = None, limit: int | None = None
    ) -> tuple[list[int], int | None]:
        """The members of ``root``'s cluster in ring order, from the root, or from the member
        after ``after`` (a cursor a page returned); at most ``limit``. Also the cursor of the
        next page, or None at the end. Reads only the cluster's own members."""
        members: list[int] = []
        node = root if after is None else self._next(after)
        if after is not None and node == root:
            return [], None
        while limit is None or len(members) < limit:
            members.append(node)
            node = self._next(node)
            if node == root:
                return members, None
        return members, members[-1]

    def largest(self, limit: int) -> list[tuple[int, int]]:
        """(root, size) of the ``limit`` largest clusters of two or more (committed state),
        largest first, then by id."""
        return [
            (decode_id(key[8:]), _INVERTED - int.from_bytes(key[:8], "big"))
            for key, _ in self._tx.store.scan("sizes", limit=limit)
        ]

    def roots(self) -> Iterator[tuple[int, ClusterInfo]]:
        """Every cluster of two or more documents (committed state), by id."""
        for key, raw in self._tx.store.items("clusters"):
            yield decode_id(key), ClusterInfo.decode(raw)

    def members(self) -> dict[int, list[int]]:
        """Cluster id -> member doc ids, for every cluster of two or more (committed state)."""
        groups: dict[int, list[int]] = defaultdict(list)
        for key, _ in self._tx.store.items("parents"):
            doc_id = decode_id(key)
            groups[self.find(doc_id)].append(doc_id)
        for root, members in groups.items():
            members.append(root)
            members.sort()
        return dict(groups)
