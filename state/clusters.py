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

from collections import defaultdict
from collections.abc import Iterator

from .codec import ClusterInfo, decode_id, encode_id, fetched_at_from_micros
from .documents import Documents
from .meta import Counters
from .transaction import Transaction

__all__ = ["Clusters", "size_class"]

_INVERTED = (1 << 64) - 1
_PRESENT = b"\x01"  # stored values are never empty


def size_class(size: int) -> int:
    """The power-of-two class of a cluster size: 2-3 is class 1, 4-7 class 2, and so on."""
    return size.bit_length() - 1


def _size_key(size: int, root: int) -> bytes:
    """Larger clusters first, then smaller ids."""
    return (_INVERTED - size).to_bytes(8, "big") + encode_id(root)


class Clusters:
    def __init__(self, tx: Transaction, documents: Documents) -> None:
        self._tx = tx
        self._documents = documents
        self._counters = Counters(tx)

    def _parent(self, doc_id: int) -> int | None:
        raw = self._tx.get("parents", encode_id(doc_id))
        return None if raw is None else decode_id(raw[:8])

    def find(self, doc_id: int) -> int:
        """The root (cluster id) of a document's cluster."""
        path = []
        node = doc_id
        while (parent := self._parent(node)) is not None:
            path.append(node)
            node = parent
        for visited in path[:-1]:  # the last one already points at the root
            key = encode_id(visited)
            ring_next = (self._tx.get("parents", key) or b"")[8:]  # kept: see _next
            self._tx.put("parents", key, encode_id(node) + ring_next)
        return node

    def _size_and_time(self, root: int) -> tuple[int, int]:
        """(size, root's fetched_at in microseconds): ``info`` without formatting the time."""
        raw = self._tx.get("clusters", encode_id(root))
        if raw is not None:
            return ClusterInfo.unpack(raw)
        return 1, self._documents.fetched_micros(root)

    def info(self, root: int) -> ClusterInfo:
        size, micros = self._size_and_time(root)
        return ClusterInfo(size, fetched_at_from_micros(micros))

    def age(self, root: int) -> tuple[int, int]:
        """Sort key: the smaller, the older (missing fetched_at counts as oldest). Times in
        microseconds order as the fixed-width fetched_at strings do."""
        return (self._size_and_time(root)[1], root)

    def merge(self, survivor: int, retired: int) -> int:
        """Join the cluster rooted at ``retired`` into ``survivor``'s; returns the new size."""
        kept_size, kept_time = self._size_and_time(survivor)
        if survivor == retired:
            return kept_size
        retired_size = self._size_and_time(retired)[0]
        size = kept_size + retired_size
        # splice the two member rings: next(survivor) <-> next(retired)
        after_survivor, after_retired = self._next(survivor), self._next(retired)
        self._tx.put("parents", encode_id(retired), encode_id(survivor) + encode_id(after_survivor))
        self._tx.delete("ring", encode_id(retired))
        self._tx.put("ring", encode_id(survivor), encode_id(after_retired))
        self._tx.delete("clusters", encode_id(retired))
        self._tx.put("clusters", encode_id(survivor), ClusterInfo.pack(size, kept_time))
        for root, old in ((survivor, kept_size), (retired, retired_size)):
            if old > 1:
                self._tx.delete("sizes", _size_key(old, root))
        self._tx.put("sizes", _size_key(size, survivor), _PRESENT)
        self._count(kept_size, retired_size, size)
        return size

    def _count(self, kept_size: int, retired_size: int, size: int) -> None:
        """The gauges a scrape reads instead of the tables: clusters of two or more, the
        documents in them, and clusters per size class."""
        changes: dict[str, int] = defaultdict(int)
        changes["clusters"] = 1 - (kept_size > 1) - (retired_size > 1)
        changes["documents_in_clusters"] = (kept_size == 1) + (retired_size == 1)
        for old in (kept_size, retired_size):
            if old > 1:
                changes[f"cluster_sizes:{size_class(old)}"] -= 1
        changes[f"cluster_sizes:{size_class(size)}"] += 1
        self._counters.add_many(changes)

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
        key = encode_id(doc_id)
        raw = self._tx.get("parents", key)
        if raw is not None and len(raw) == 16:
            return decode_id(raw[8:])
        ringed = self._tx.get("ring", key)
        return doc_id if ringed is None else decode_id(ringed)

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
