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
from functools import partial

from .codec import (
    CLUSTER_LAYOUT,
    NO_TIME,
    VERSION,
    ClusterInfo,
    decode_id,
    encode_id,
    fetched_at_from_micros,
)
from .committed import CachedTable, CacheView, CommittedCache
from .documents import Documents
from .meta import Counters
from .store import Store
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


# What union-find keeps of each document in the committed cache is one int, its node: None
# for a single document (no entry in any union-find table); for a member, its parent and the
# next member of its ring (``_member``, >= 0); for a root of two or more, its ring's next,
# its cluster's size and its own fetched_at (``_root``, < 0). One int, not a tuple: an int is
# no object for the garbage collector to follow, and a dict holding only ints is not followed
# at all, where a tuple per member made every full collection walk the whole union-find. One
# node, not an entry in each of three tables: a new document is one insertion, not three.
_ID_BITS = 64
_ID_MASK = (1 << _ID_BITS) - 1
_TIME_BITS = 2 * _ID_BITS
_TIME_OFFSET = NO_TIME  # subtracted: a root's time, NO_TIME included, is stored >= 0


def _member(parent: int, ring_next: int | None) -> int:
    """A member's node: its parent and the next member of its ring (see _next), if known."""
    return parent | (0 if ring_next is None else (ring_next + 1) << _ID_BITS)


def _ring_next(node: int) -> int | None:
    """The next member kept in a member's node (``_member``), if any."""
    return (node >> _ID_BITS) - 1 if node >> _ID_BITS else None


def _root(ring_next: int, size: int, micros: int) -> int:
    """A root's node: the next member of its ring, its cluster's size and its fetched_at in
    microseconds, negated (``~``) so that a node < 0 is a root's."""
    return ~(ring_next | size << _ID_BITS | (micros - _TIME_OFFSET) << _TIME_BITS)


def _load(store: Store, documents: Documents, doc_id: int) -> int | None:
    """A document's node as the store holds it (committed: a view's own writes are in its
    cached table already)."""
    key = encode_id(doc_id)
    parent = store.get("parents", key)
    if parent is not None:
        return _node(documents, doc_id, parent, None, None)
    return _node(documents, doc_id, None, store.get("clusters", key), store.get("ring", key))


def _load_many(store: Store, documents: Documents, doc_ids: list[int]) -> list[int | None]:
    """``_load`` of each document, with one batched read of each table."""
    keys = list(map(encode_id, doc_ids))
    parents = store.get_many("parents", keys)
    roots = [key for key, parent in zip(keys, parents, strict=True) if parent is None]
    infos = dict(zip(roots, store.get_many("clusters", roots), strict=True))
    rings = dict(zip(roots, store.get_many("ring", roots), strict=True))
    return [
        _node(documents, doc_id, parent, infos.get(key), rings.get(key))
        for doc_id, key, parent in zip(doc_ids, keys, parents, strict=True)
    ]


def _node(
    documents: Documents,
    doc_id: int,
    parent: bytes | None,
    info: bytes | None,
    ring: bytes | None,
) -> int | None:
    """A document's node from its stored parent, or (a root) its cluster info and ring."""
    if parent is not None:
        return _member(decode_id(parent[:8]), decode_id(parent[8:]) if len(parent) == 16 else None)
    if info is None and ring is None:
        return None
    size, micros = ClusterInfo.unpack(info) if info else (1, documents.fetched_micros(doc_id))
    return _root(doc_id if ring is None else decode_id(ring), size, micros)


class Clusters:
    def __init__(
        self, tx: Transaction, documents: Documents, cache: CacheView | None = None
    ) -> None:
        self._tx = tx
        self._documents = documents
        self._counters = Counters(tx)
        cache = cache or CommittedCache(0).view()
        # a function of the store and the documents, not a method: a view's tables would
        # otherwise hold it in a cycle, freed only by the garbage collector's passes
        self._nodes: CachedTable[int] = cache.table("nodes", partial(_load, tx.store, documents))

    def add_singles(self, doc_ids: Iterable[int]) -> None:
        """Documents the state has never held, each in a cluster of its own: they have no
        entry in the union-find tables, which union-find then need not look up (nothing is
        written)."""
        self._nodes.update(dict.fromkeys(doc_ids))

    def prefetch(self, doc_ids: Sequence[int]) -> None:
        """Read at once what finding the clusters of some documents reads (their nodes and
        their parents'), for a query naming a few documents: a read per table and level, not
        one per key."""
        load = partial(_load_many, self._tx.store, self._documents)
        self._nodes.read_many(doc_ids, load)
        parents = [
            node & _ID_MASK for d in doc_ids if (node := self._nodes[d]) is not None and node >= 0
        ]
        self._nodes.read_many(parents, load)

    def find(self, doc_id: int) -> int:
        """The root (cluster id) of a document's cluster."""
        nodes = self._nodes
        node = nodes[doc_id]
        if node is None or node < 0:
            return doc_id
        parent = node & _ID_MASK
        above = nodes[parent]
        if above is None or above < 0:  # most finds: a root, or a member of one
            return parent
        path = []
        at = doc_id
        while (node := nodes[at]) is not None and node >= 0:
            path.append((at, node))
            at = node & _ID_MASK
        for visited, node in path[:-1]:  # the last one already points at the root
            self._put_parent(visited, at, _ring_next(node))  # the ring's next is kept: see _next
        return at

    def _put_parent(self, doc_id: int, parent: int, ring_next: int | None) -> None:
        raw = encode_id(parent) if ring_next is None else encode_id(parent) + encode_id(ring_next)
        self._tx.put("parents", encode_id(doc_id), raw)
        self._nodes[doc_id] = _member(parent, ring_next)

    def _size_and_time(self, root: int) -> tuple[int, int]:
        """(size, root's fetched_at in microseconds): ``info`` without formatting the time."""
        node = self._nodes[root]
        if node is None or node >= 0:
            return 1, self._documents.fetched_micros(root)
        node = ~node
        return node >> _ID_BITS & _ID_MASK, (node >> _TIME_BITS) + _TIME_OFFSET

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
        nodes = self._nodes
        # splice the two member rings: next(survivor) <-> next(retired); a root's next is in
        # its node (in ``ring``: a root has no parent), or it is a single, a ring of one
        kept = nodes[survivor]  # as _size_and_time, without the call
        if kept is None or kept >= 0:
            kept_size, kept_time, after = 1, self._documents.fetched_micros(survivor), survivor
        else:
            kept = ~kept
            after, kept_size = kept & _ID_MASK, kept >> _ID_BITS & _ID_MASK
            kept_time = (kept >> _TIME_BITS) + _TIME_OFFSET
        if survivor == retired:
            return kept_size
        gone = nodes[retired]
        if gone is None or gone >= 0:
            after_retired, retired_size, retired_root = retired, 1, False
        else:
            gone = ~gone
            after_retired, retired_size = gone & _ID_MASK, gone >> _ID_BITS & _ID_MASK
            retired_root = True
        size = kept_size + retired_size
        survivor_key, retired_key = encode_id(survivor), encode_id(retired)
        writes = self._tx.writes
        writes("parents")[retired_key] = survivor_key + encode_id(after)
        nodes[retired] = survivor | (after + 1) << _ID_BITS  # _member
        ring_writes, info_writes = writes("ring"), writes("clusters")
        if retired_root:  # no tombstones for what a single document never had
            ring_writes[retired_key] = info_writes[retired_key] = None
        ring_writes[survivor_key] = encode_id(after_retired)
        info_writes[survivor_key] = _CLUSTER_INFO(_VERSION, size, kept_time)
        nodes[survivor] = _root(after_retired, size, kept_time)
        size_writes = writes("sizes")
        if kept_size > 1:
            _unsize(size_writes, _SIZE_KEY_PACK(_INVERTED - kept_size, survivor))
        if retired_size > 1:
            _unsize(size_writes, _SIZE_KEY_PACK(_INVERTED - retired_size, retired))
        size_writes[_SIZE_KEY_PACK(_INVERTED - size, survivor)] = _PRESENT
        _count(gauges, kept_size, retired_size, size)
        return size

    def regroup(
        self,
        roots: Iterable[int],
        groups: Sequence[Sequence[int]],
        gauges: dict[str, int],
        keep_roots: bool = False,
    ) -> list[int]:
        """Replace the clusters rooted at ``roots`` (as ``find`` gives them) by ``groups``,
        which hold exactly their members (and documents new to the state, ``add_singles``):
        what a split or a removal needs, where union-find only joins. Each group's root is
        its oldest member (``age``), or with ``keep_roots`` the oldest old root it holds.
        Returns the groups' roots, in order; ``gauges`` as for ``merge``."""
        writes = self._tx.writes
        nodes = self._nodes
        replaced = set(roots)
        for root in replaced:
            size, _ = self._size_and_time(root)
            if size > 1:
                _unsize(writes("sizes"), _SIZE_KEY_PACK(_INVERTED - size, root))
                name = _CLASS_COUNTERS[size.bit_length() - 1]
                gauges[name] = gauges.get(name, 0) - 1
                gauges["clusters"] = gauges.get("clusters", 0) - 1
                gauges["documents_in_clusters"] = gauges.get("documents_in_clusters", 0) - size
        made = []
        for group in groups:
            members = sorted(
                group, key=lambda member: (self._documents.fetched_micros(member), member)
            )
            # ``keep_roots``: a group holding an old root keeps it (the oldest such), as a
            # page cluster keeps its id while its first page is in it; a root is the first
            # member to arrive, which at equal times need not be the smallest id
            kept = [member for member in members if member in replaced] if keep_roots else []
            if kept and kept[0] != members[0]:
                members.remove(kept[0])
                members.insert(0, kept[0])
            root, size = members[0], len(members)
            made.append(root)
            for member in members:
                key = encode_id(member)
                if nodes[member] is not None:  # a single one has nothing stored
                    writes("parents")[key] = writes("ring")[key] = None
                    writes("clusters")[key] = None
                nodes[member] = None
            if size == 1:
                continue
            ring = [*members[1:], root]  # each member's next, around the ring
            for member, after in zip(members[1:], ring[1:], strict=True):
                writes("parents")[encode_id(member)] = encode_id(root) + encode_id(after)
                nodes[member] = _member(root, after)
            micros = self._documents.fetched_micros(root)
            key = encode_id(root)
            writes("parents")[key] = None
            writes("ring")[key] = encode_id(ring[0])
            writes("clusters")[key] = _CLUSTER_INFO(_VERSION, size, micros)
            nodes[root] = _root(ring[0], size, micros)
            writes("sizes")[_SIZE_KEY_PACK(_INVERTED - size, root)] = _PRESENT
            name = _CLASS_COUNTERS[size.bit_length() - 1]
            gauges[name] = gauges.get(name, 0) + 1
            gauges["clusters"] = gauges.get("clusters", 0) + 1
            gauges["documents_in_clusters"] = gauges.get("documents_in_clusters", 0) + size
        return made

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
        node = self._nodes[doc_id]
        if node is None:
            return doc_id
        if node < 0:
            return ~node & _ID_MASK
        return doc_id if not node >> _ID_BITS else (node >> _ID_BITS) - 1

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
