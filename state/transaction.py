"""A transaction: reads see the store plus this transaction's own writes; commit is atomic.

The pipeline processes a batch of pages in one transaction, so a crash leaves either the whole
batch or none of it. ``prefetch`` turns the many point reads of a batch into a few batched
reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from .store import Store, Table

__all__ = ["Transaction"]

_MISSING = b""  # cached "absent" marker; stored values are never empty


class Transaction:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._pending: dict[Table, dict[bytes, bytes | None]] = {}
        self._cache: dict[Table, dict[bytes, bytes]] = {}

    def prefetch(self, table: Table, keys: Iterable[bytes]) -> None:
        cache = self._cache.setdefault(table, {})
        pending = self._pending.get(table, {})
        wanted = list({key for key in keys if key not in cache and key not in pending})
        for key, value in zip(wanted, self.store.get_many(table, wanted), strict=True):
            cache[key] = _MISSING if value is None else value

    def get(self, table: Table, key: bytes) -> bytes | None:
        pending = self._pending.get(table)
        if pending is not None and key in pending:
            return pending[key]
        cache = self._cache.setdefault(table, {})
        value = cache.get(key)
        if value is None:
            stored = self.store.get(table, key)
            value = cache[key] = _MISSING if stored is None else stored
        return None if value is _MISSING or not value else value

    def get_many(self, table: Table, keys: Sequence[bytes]) -> list[bytes | None]:
        pending = self._pending.get(table)
        if not self._cache.get(table):  # nothing read yet: one batched read, under the writes
            found = self.store.get_many(table, keys)
            if pending:
                return list(map(pending.get, keys, found))  # a pending None: deleted
            return found
        self.prefetch(table, keys)
        pending = pending or {}
        cache = self._cache[table]
        # as ``get`` of each key, without a call per key
        return [pending[key] if key in pending else (cache[key] or None) for key in keys]

    def put(self, table: Table, key: bytes, value: bytes) -> None:
        if not value:
            raise ValueError("stored values must not be empty")
        self._pending.setdefault(table, {})[key] = value

    def put_many(self, table: Table, values: dict[bytes, bytes]) -> None:
        if not all(values.values()):
            raise ValueError("stored values must not be empty")
        self._pending.setdefault(table, {}).update(values)

    def writes(self, table: Table) -> dict[bytes, bytes | None]:
        """The pending writes of ``table``, to write into directly where a call per write
        would cost more than the write (union-find): a key to a non-empty value, or None
        to delete it."""
        return self._pending.setdefault(table, {})

    def pending(self, table: Table) -> Mapping[bytes, bytes | None]:
        """The pending writes of ``table``, to read (None: a delete)."""
        return self._pending.get(table, {})

    def stored_range(self, table: Table, start: bytes, end: bytes) -> Iterator[tuple[bytes, bytes]]:
        """The stored keys from ``start`` up to ``end``, in order, each with its value as this
        transaction sees it; a key it deleted is left out, and keys only it wrote are not
        listed (a sweep's lists: those hold the transaction's own documents)."""
        pending = self._pending.get(table, {})
        for key, raw in self.store.scan(table, start):
            if key >= end:
                return
            value = pending.get(key, raw)
            if value is not None:
                yield key, value

    def delete(self, table: Table, key: bytes) -> None:
        self._pending.setdefault(table, {})[key] = None

    def commit(self) -> None:
        if self._pending:
            self.store.write(self._pending)
        self._pending = {}
        self._cache = {}
