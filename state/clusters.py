"""Clusters as union-find in the key-value store, with sizes and stable ids.

A cluster's id is the doc id of its root. A new document joins an existing cluster under that
cluster's id; when two existing clusters join, the one whose root is older (earlier
``fetched_at``, then smaller doc id) keeps its id and the other id is retired. Finds compress
paths, so chains stay short.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from .codec import ClusterInfo, decode_id, encode_id, fetched_at_from_micros
from .documents import Documents
from .transaction import Transaction

__all__ = ["Clusters"]


class Clusters:
    def __init__(self, tx: Transaction, documents: Documents) -> None:
        self._tx = tx
        self._documents = documents

    def _parent(self, doc_id: int) -> int | None:
        raw = self._tx.get("parents", encode_id(doc_id))
        return None if raw is None else decode_id(raw)

    def find(self, doc_id: int) -> int:
        """The root (cluster id) of a document's cluster."""
        path = []
        node = doc_id
        while (parent := self._parent(node)) is not None:
            path.append(node)
            node = parent
        for visited in path[:-1]:  # the last one already points at the root
            self._tx.put("parents", encode_id(visited), encode_id(node))
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
        size = kept_size + self._size_and_time(retired)[0]
        self._tx.put("parents", encode_id(retired), encode_id(survivor))
        self._tx.delete("clusters", encode_id(retired))
        self._tx.put("clusters", encode_id(survivor), ClusterInfo.pack(size, kept_time))
        return size

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
