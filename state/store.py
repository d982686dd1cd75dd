"""The Store interface: named tables of byte keys and byte values, written atomically.

Two backends implement it, ``MemoryStore`` and ``RocksDBStore``, and one contract suite
(tests/state/test_store_contract.py) runs over both.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, get_args

from neardup.core import StateError

__all__ = ["TABLES", "Changes", "Store", "Table"]

#: Every table of the state. Adding one is a format change (see ``state.meta``).
Table = Literal[
    "meta",  # settings, format version, counters, Kafka log offsets
    "docs",  # doc id -> DocRecord
    "fingerprints",  # kind + 64-bit fingerprint -> doc id [+ its sketch's owner] (exact)
    "seen",  # doc id -> marker: admitted here, kept by another detection shard
    "supershingles",  # super-shingle -> posting list of doc ids
    "shingles",  # short-document shingle -> posting list of doc ids
    "containment",  # containment sample value -> posting list of doc ids
    "containment_log",  # record number -> a batch's containment postings, not yet in the lists
    "stopkeys",  # index name + key -> how many documents asked for it
    "stopranks",  # inverted count + index name + key -> marker: stop keys, most asked first
    "parents",  # doc id -> parent doc id and next member (union-find; roots have none)
    "clusters",  # root doc id -> ClusterInfo (clusters of two or more)
    "urls",  # url -> every (fetched_at, doc id) seen for it
    "ring",  # cluster root -> next member of its cluster's circular list
    "sizes",  # inverted size + root id -> marker: clusters of two or more, largest first
    "timeline",  # sample number -> the counters at a moment, and the clusters that grew
    "items",  # item doc id -> the item as prepared (item mode)
    "itemkeys",  # item key -> posting list of item doc ids (item mode's candidates)
    "edges",  # doc id + doc id -> the score of their match (both ways round)
    "simhashes",  # SimHash table key -> posting list of doc ids (SimHash mode's candidates)
    "live",  # url -> its version now, or its tombstone (versions = "latest")
    "gone",  # departed doc id -> the copy standing for it, or removed (versions = "latest")
    "copies",  # live exact copies of each content, in order (versions = "latest")
    "departures",  # departure time + doc id of each kept version, oldest first
    "kept",  # departed doc id -> its closest match and its record, sketch and all (history)
]
TABLES: tuple[Table, ...] = get_args(Table)

#: table -> key -> new value, or None to delete the key
Changes = Mapping[Table, Mapping[bytes, bytes | None]]


class Store(abc.ABC):
    """Named tables of bytes -> bytes. Reads see every completed ``write``."""

    #: the error a write met (a full disk), after which the store takes no more writes
    failed: StateError | None = None

    @abc.abstractmethod
    def get(self, table: Table, key: bytes) -> bytes | None:
        """The value of one key, or None."""

    @abc.abstractmethod
    def get_many(self, table: Table, keys: Sequence[bytes]) -> list[bytes | None]:
        """The values of many keys, in order (one batched read where the backend has one)."""

    @abc.abstractmethod
    def items(self, table: Table) -> Iterator[tuple[bytes, bytes]]:
        """Every key and value of a table, in ascending key order."""

    @abc.abstractmethod
    def scan(
        self, table: Table, start: bytes = b"", limit: int | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        """Keys at or after ``start`` with their values, in ascending key order, at most
        ``limit`` of them: what a query reads instead of a whole table."""

    def keys(self, table: Table) -> Iterator[bytes]:
        """Every key of a table, in ascending order."""
        for key, _ in self.items(table):
            yield key

    @abc.abstractmethod
    def write(self, changes: Changes) -> None:
        """Apply puts and deletes over several tables, all or nothing."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store; further use is an error."""

    @abc.abstractmethod
    def flush_in_background(self) -> None:
        """Start writing what is buffered in memory to disk, without waiting: ``close`` waits
        for it. Reads and writes go on meanwhile."""

    @abc.abstractmethod
    def catch_up(self) -> None:
        """A follower (a reader of a state another process writes) sees the writes made
        since it opened or last caught up; a store that is itself the writer sees them
        already."""

    def outdated(self) -> bool:
        """True for a follower whose writer has changed its files (flushed or compacted) since
        the follower opened. Until the writer logs another write, ``catch_up`` cannot bring
        such a follower up to date: a RocksDB secondary instance keeps the log entries it
        replayed in memory, above the files the writer flushed them to (it lets go of them
        when the writer's next log file has an entry). Never for a writer."""
        return False

    def sequence(self) -> int | None:
        """A writer's count of the changes written so far, kept across reopening (RocksDB's
        sequence number): what it was when something was saved says whether anything was
        written since. None for a store that keeps nothing (memory) and for a follower."""
        return None

    @abc.abstractmethod
    def sync(self) -> None:
        """Make every write so far survive a power loss, not only a crash of this process
        (a writer's log is written to the system at each write, and synced here)."""

    def directory(self) -> Path | None:
        """A writer's directory on disk, where files beside its tables may be kept; None for
        a store that keeps nothing (memory) and for a follower."""
        return None

    def writer_log(self) -> tuple[str, int] | None:
        """For a follower, where the writer's write-ahead log ends (its newest file and that
        file's size): it moves while the writer writes. None for a writer."""
        return None

    def disk_bytes(self, flush: bool = True) -> int:
        """Bytes the store occupies on disk (0 for memory). With ``flush``, what is buffered in
        memory is written first: the size of the state itself, not of a moment of a run."""
        return 0

    @abc.abstractmethod
    def compact(self) -> None:
        """Rewrite the stored tables without the versions later writes replaced (a posting
        list is rewritten at each append): what the state settles to on disk, which a
        backend's own compactions reach in their own time."""

    def checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Write a complete copy of the store as it is now to ``path`` (a new directory),
        which opens as a store of its own."""
        raise StateError(f"a {type(self).__name__} cannot be checkpointed: it keeps no files")

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @staticmethod
    def check_table(table: str) -> None:
        """KeyError for a name that is not a table (a caller past the type checker)."""
        if table not in TABLES:
            raise KeyError(f"unknown table {table!r}: the tables are {', '.join(TABLES)}")
