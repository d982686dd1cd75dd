"""Opening a state (memory or a RocksDB directory) and viewing it through one transaction."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from types import TracebackType

from neardup.core import Settings, StateError

from .clusters import Clusters
from .codec import CONTAINMENT_ENTRY, SHORT_ENTRY, SUPER_ENTRY
from .committed import CACHE_ENTRIES, CommittedCache
from .documents import Documents, FingerprintTable, Seen, UrlHistory
from .edges import MatchEdges
from .items import ItemRecords
from .kept_filters import KeptFilters, keep
from .key_filter import FilterBudget, KeyFilter
from .memory import MemoryStore
from .meta import Counters, EventTime, LogOffsets, check_or_store_settings
from .posting_log import LoggedPostings, PostingLog
from .postings import INDEX_TABLES, IndexTable, PostingIndex, read_key_filter
from .rocksdb import FOLLOWER_OPTIONS, RocksDBOptions, RocksDBStore
from .store import Store
from .sweep import RemovedSweep
from .timeline import Timeline
from .transaction import Transaction
from .versions import CopyGroups, Departed, KeptVersions, LiveVersions

__all__ = ["KEY_FILTER_BYTES", "State", "StateView"]

#: the default bound on a writer's key filters: about 6 million pages' worth (80 MB at a
#: million, with the containment index)
KEY_FILTER_BYTES = 512 << 20

#: the meta keys of the key filters older versions kept at closing (removed at closing)
_OLD_KEPT_FILTER = b"keyfilter:"


class StateView:
    """The domain tables over one transaction; ``commit`` makes its writes durable at once."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        key_filter: Callable[[IndexTable], KeyFilter] | None = None,
        cache: CommittedCache | None = None,
        logged: LoggedPostings | None = None,
    ) -> None:
        self.tx = Transaction(store)
        self.settings = settings
        self._cache = (cache or CommittedCache(0)).view()
        self.documents = Documents(self.tx, self._cache)
        self.fingerprints = FingerprintTable(self.tx)
        self.seen = Seen(self.tx)
        cap = settings.posting_cap
        self.super_shingles = PostingIndex(
            self.tx, "supershingles", cap, SUPER_ENTRY, _of(key_filter, "supershingles")
        )
        self.short_shingles = PostingIndex(
            self.tx, "shingles", cap, SHORT_ENTRY, _of(key_filter, "shingles")
        )
        containment = PostingIndex(
            self.tx,
            "containment",
            settings.containment_cap,
            CONTAINMENT_ENTRY,
            _of(key_filter, "containment"),
            count_stop_requests=False,
        )
        # most of a page's containment keys are those its near-duplicates posted a moment
        # before: logged, and folded into the lists a range of keys at a time
        self.containment = PostingLog(self.tx, containment, logged or _containment_log())
        self.clusters = Clusters(self.tx, self.documents, self._cache)
        self.urls = UrlHistory(self.tx)
        self.counters = Counters(self.tx)
        self.log_offsets = LogOffsets(self.tx)
        self.event_time = EventTime(self.tx)
        self.timeline = Timeline(self.tx)
        self.items = ItemRecords(self.tx)
        self.edges = MatchEdges(self.tx)
        self.live = LiveVersions(self.tx)
        self.departed = Departed(self.tx)
        self.copies = CopyGroups(self.tx)
        self.kept = KeptVersions(self.tx)
        self.item_keys = PostingIndex(
            self.tx, "itemkeys", cap, SUPER_ENTRY, _of(key_filter, "itemkeys")
        )
        # SimHash mode: a page's key in each of Manku's tables, with its size class
        self.simhashes = PostingIndex(
            self.tx, "simhashes", cap, SUPER_ENTRY, _of(key_filter, "simhashes")
        )
        # removed versions' postings and fingerprints, taken out a slice at a time
        self.sweep = RemovedSweep(
            self.tx,
            self.departed,
            (self.super_shingles, self.short_shingles, containment, self.simhashes),
            self.fingerprints,
            self.containment,
            settings.band_count,
        )

    def commit(self) -> None:
        self.tx.commit()
        self._cache.commit()  # only once durable: a view dropped uncommitted leaves nothing


def _containment_log() -> LoggedPostings:
    return LoggedPostings("containment", "containment_log", CONTAINMENT_ENTRY)


def _of(
    key_filter: Callable[[IndexTable], KeyFilter] | None, table: IndexTable
) -> Callable[[], KeyFilter] | None:
    return None if key_filter is None else partial(key_filter, table)


class State:
    """A store plus the settings it was built with, and, for a writer, an in-memory filter of
    the keys of each posting index (read when first needed; its views keep them up to
    date)."""

    def __init__(
        self,
        store: Store,
        settings: Settings | None = None,
        cache_entries: int = CACHE_ENTRIES,
        key_filter_bytes: int | None = KEY_FILTER_BYTES,
    ) -> None:
        """``cache_entries``: union-find values kept decoded per table (``committed.py``);
        ``key_filter_bytes``: the bound on the key filters' memory (``FilterBudget``)."""
        self.store = store
        self._budget = FilterBudget(key_filter_bytes)
        # a filter follows the keys this process posts: a follower's writer posts elsewhere,
        # so a follower's lookups go to the store
        self._filters = store.writer_log() is None
        # read before anything is written here: a kept filter is used only if nothing was
        self._opened_at = store.sequence()
        directory = store.directory()
        self._kept = (
            KeptFilters.open(directory, self._opened_at)
            if self._filters and directory is not None and self._opened_at is not None
            else None
        )
        self.settings = check_or_store_settings(store, settings)
        self._key_filters: dict[IndexTable, KeyFilter] = {}
        # union-find's committed values, decoded; a follower's writer commits elsewhere
        self._committed = CommittedCache(cache_entries if self._filters else 0)
        self._containment_log = _containment_log()

    def key_filter(self, table: IndexTable) -> KeyFilter:
        """The filter of the keys of a posting index, read from the store when first used: a
        state opened only to answer queries does not read every index key."""
        if table not in INDEX_TABLES:
            raise KeyError(f"{table!r} is not a posting index: use one of {INDEX_TABLES}")
        if table not in self._key_filters:
            kept = None if self._kept is None else self._kept.read(table, self._budget)
            self._key_filters[table] = (
                read_key_filter(self.store, table, self._budget) if kept is None else kept
            )
        return self._key_filters[table]

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None,
        settings: Settings | None = None,
        cache_entries: int = CACHE_ENTRIES,
        key_filter_bytes: int | None = KEY_FILTER_BYTES,
    ) -> State:
        """A RocksDB state in ``path``, or an in-memory one for ``None``."""
        store: Store = MemoryStore() if path is None else RocksDBStore(path)
        try:
            return cls(store, settings, cache_entries, key_filter_bytes)
        except BaseException:
            store.close()
            raise

    @classmethod
    def follow(cls, path: str | os.PathLike[str], options: RocksDBOptions | None = None) -> State:
        """A reader of the RocksDB state in ``path``, which another process may be writing
        (``neardup serve``): ``catch_up`` shows what it wrote since. A directory that holds
        no state is an error; a reader never creates one. ``options``: by default, those
        of ``FOLLOWER_OPTIONS``."""
        store = RocksDBStore(path, FOLLOWER_OPTIONS if options is None else options, True)
        try:
            if store.get("meta", b"settings") is None:
                raise StateError(f"{path} holds no neardup state (it has no stored settings)")
            return cls(store)
        except BaseException:
            store.close()
            raise

    def catch_up(self) -> None:
        """See the writes another process made since (a follower); nothing for a writer."""
        self.store.catch_up()

    @property
    def outdated(self) -> bool:
        """A follower whose writer has flushed since it opened (see ``Store.outdated``)."""
        return self.store.outdated()

    @property
    def writer_log(self) -> tuple[str, int] | None:
        """Where a follower's writer's log ends: it moves while the writer writes."""
        return self.store.writer_log()

    def view(self) -> StateView:
        return StateView(
            self.store,
            self.settings,
            self.key_filter if self._filters else None,
            self._committed,
            self._containment_log,
        )

    def close(self) -> None:
        """Close the store, keeping the key filters in it first (``_keep_filters``)."""
        try:
            self._keep_filters()
        finally:
            self.store.close()

    def _keep_filters(self) -> None:
        """Keep the filters of the posting indexes beside the state (``kept_filters.py``),
        unless nothing was written and no filter read from the keys: those kept still hold."""
        sequence, directory = self.store.sequence(), self.store.directory()
        if sequence is None or directory is None or not self._filters:
            return
        if self.store.failed is not None:
            return
        # the writes the filters hold, synced first: writes a power loss took back could
        # otherwise be made again up to the same sequence, and the file would seem to hold
        self.store.sync()
        kept = set() if self._kept is None else self._kept.tables
        if sequence == self._opened_at and self._key_filters.keys() <= kept:
            return
        for table in kept - self._key_filters.keys():
            self.key_filter(table)  # kept, not used this time: kept again
        old = [key for key in self.store.keys("meta") if key.startswith(_OLD_KEPT_FILTER)]
        if old:  # an older version's, in the meta table: tens of MB on a large state
            self.store.write({"meta": dict.fromkeys(old)})
            sequence = self.store.sequence()
        if sequence is not None:
            keep(directory, sequence, self._key_filters, self._budget.limit)

    def __enter__(self) -> State:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
