"""Opening a state (memory or a RocksDB directory) and viewing it through one transaction."""

from __future__ import annotations

import os
from types import TracebackType

from neardup.core import Settings

from .clusters import Clusters
from .codec import SHORT_ENTRY, SUPER_ENTRY
from .documents import Documents, FingerprintTable, UrlHistory
from .memory import MemoryStore
from .meta import Counters, check_or_store_settings
from .postings import PostingIndex
from .rocksdb import RocksDBStore
from .store import Store
from .transaction import Transaction

__all__ = ["State", "StateView"]


class StateView:
    """The domain tables over one transaction; ``commit`` makes its writes durable at once."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.tx = Transaction(store)
        self.documents = Documents(self.tx)
        self.fingerprints = FingerprintTable(self.tx)
        cap = settings.posting_cap
        self.super_shingles = PostingIndex(self.tx, "supershingles", cap, SUPER_ENTRY)
        self.short_shingles = PostingIndex(self.tx, "shingles", cap, SHORT_ENTRY)
        self.clusters = Clusters(self.tx, self.documents)
        self.urls = UrlHistory(self.tx)
        self.counters = Counters(self.tx)

    def commit(self) -> None:
        self.tx.commit()


class State:
    """A store plus the settings it was built with."""

    def __init__(self, store: Store, settings: Settings | None = None) -> None:
        self.store = store
        self.settings = check_or_store_settings(store, settings)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None, settings: Settings | None = None) -> State:
        """A RocksDB state in ``path``, or an in-memory one for ``None``."""
        store: Store = MemoryStore() if path is None else RocksDBStore(path)
        try:
            return cls(store, settings)
        except BaseException:
            store.close()
            raise

    def view(self) -> StateView:
        return StateView(self.store, self.settings)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> State:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
