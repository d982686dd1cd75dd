"""Decoded values that committed transactions left in the store, kept in memory between
transactions: union-find's parents, rings and cluster sizes, and documents' heads.

Union-find reads a few small values per edge (a parent, a root's size and age, a ring
neighbour, a document's url and time). Through the store each one is a key to encode, a
RocksDB lookup and a value to decode: most of the union stage's time. The cache is
write-through: the store stays the truth, a transaction's writes enter the cache only after
they are durable (``CacheView.commit``), so a view that is dropped uncommitted (a staged batch
discarded) leaves nothing behind, and a state reopened or restored from a checkpoint starts
with an empty cache. Values read from the store enter it too, unless a commit happened while
they were being read (``generation``): a query in another thread must not put back a value
the writer has just replaced. A view passes on at its commit all it knows, its reads with its
writes (the writer's views follow one another, so its reads are still the committed values),
rather than a second record of its writes: union-find and the documents write a few values
for each document, and each record was one more insertion into a dict.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, Literal, TypeVar

__all__ = ["CACHE_ENTRIES", "CacheView", "CachedTable", "CommittedCache"]

#: values kept per table at most; past it the older half goes. About 100 bytes an entry
#: (an int key and value; a url, the url's length more): a bound on memory, not a working
#: set, since the keys union-find reads again are mostly recent documents and clusters' roots
CACHE_ENTRIES = 1 << 16

Name = Literal["nodes", "doc_urls", "doc_fetched", "doc_times"]
V = TypeVar("V")

_UNKNOWN: Any = object()  # not in a cache (None is a value: the key is absent from the store)


class CommittedCache:
    """The committed values of one state, shared by its views. ``entries=0`` keeps nothing
    (a follower: another process writes its store)."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        if entries < 0:
            raise ValueError(f"entries={entries}: a cache holds zero or more values")
        self.entries = entries
        #: bumped by every commit: a read that straddles one may be stale
        self.generation = 0
        self._lock = threading.Lock()
        self._tables: dict[Name, dict[int, Any]] = {}

    def table(self, name: Name) -> dict[int, Any]:
        return self._tables.setdefault(name, {})

    def view(self) -> CacheView:
        return CacheView(self)

    def fill(self, name: Name, key: int, value: Any, generation: int) -> None:
        """A value read from the store when the cache was at ``generation``."""
        if not self.entries:
            return
        with self._lock:
            if generation == self.generation:
                table = self.table(name)
                table[key] = value
                self._bound(table)

    def apply(self, values: dict[Name, dict[int, Any]], since: int) -> None:
        """What a view knows as its transaction has just committed (what it read and what it
        wrote), ``since`` the generation at which it began. When another view committed in
        between, what this one read may be stale, and which of its values are its writes is
        not kept: the cache is emptied instead, and reads start again from the store."""
        with self._lock:
            if not self.entries:
                pass
            elif since != self.generation:
                self._tables.clear()
            else:
                for name, known in values.items():
                    table = self.table(name)
                    table.update(known)
                    self._bound(table)
            self.generation += 1

    def _bound(self, table: dict[int, Any]) -> None:
        if len(table) > self.entries:
            for key in list(islice(table, len(table) - self.entries // 2)):  # oldest first
                del table[key]


class CachedTable(dict[int, V | None]):
    """One table's decoded values as a view sees them: its own writes, then what it read,
    then the committed cache, then the store (``load``). Read and write it as a dict (None:
    the key is absent from the store): a key the view has seen is a plain dict lookup, with
    no Python call, and only a key it has not is looked up further (``__missing__``). Every
    write to the table is written here too besides the transaction, so that the view reads
    its own writes, and its commit passes them on to the cache."""

    def __init__(self, cache: CommittedCache, name: Name, load: Callable[[int], V | None]):
        super().__init__()
        self._cache = cache
        self._name = name
        self._shared = cache.table(name)
        self._load = load

    def __missing__(self, key: int) -> V | None:
        value: V | None = self._shared.get(key, _UNKNOWN)
        if value is _UNKNOWN:
            generation = self._cache.generation
            value = self._load(key)
            self._cache.fill(self._name, key, value, generation)
        self[key] = value
        return value

    def get(self, key: int, default: object = None) -> V | None:
        """``table[key]``: every key has a value here, which may be None (``default`` is
        never used), where ``dict.get`` would miss the keys not yet read."""
        return self[key]

    def read_many(
        self, keys: Iterable[int], load_many: Callable[[list[int]], list[V | None]]
    ) -> None:
        """Read the keys this view does not know yet, nor the cache, with one call of
        ``load_many`` for them all (a batched read), as ``table[key]`` would one by one."""
        wanted = [key for key in keys if key not in self and key not in self._shared]
        if not wanted:
            return
        generation = self._cache.generation
        for key, value in zip(wanted, load_many(wanted), strict=True):
            self._cache.fill(self._name, key, value, generation)
            self[key] = value


class CacheView:
    """The cached tables of one state view, committed with it."""

    def __init__(self, cache: CommittedCache) -> None:
        self._cache = cache
        self._since = cache.generation
        self._tables: list[tuple[Name, CachedTable[Any]]] = []

    def table(self, name: Name, load: Callable[[int], V | None]) -> CachedTable[V]:
        cached: CachedTable[V] = CachedTable(self._cache, name, load)
        self._tables.append((name, cached))
        return cached

    def commit(self) -> None:
        """After the view's transaction is durable: what it wrote and read are committed
        values. Then, as the transaction's own cache, reads start again from the cache."""
        self._cache.apply({name: table for name, table in self._tables if table}, self._since)
        self._since = self._cache.generation
        for _, table in self._tables:
            table.clear()
