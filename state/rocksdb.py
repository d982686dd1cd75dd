"""The RocksDB backend (rocksdict): one column family per table, atomic WriteBatch writes."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from neardup.core import StateError
from rocksdict import (
    BlockBasedOptions,
    Cache,
    DBCompressionType,
    MemtableFactory,
    Options,
    Rdict,
    ReadOptions,
    SliceTransform,
    WriteBatch,
)

from .store import TABLES, Changes, Store

__all__ = ["RocksDBStore"]


_TABLE_WRITE_BUFFER = 16 << 20
# A hash memtable is sorted when it is flushed: 4 MB ones sort in cache, and closing the
# state flushes less (20k run: close 1.07 -> 0.37 s, store CPU 1.9 -> 1.8 s)
_HASHED_WRITE_BUFFER = 4 << 20
_ALL_WRITE_BUFFERS = 64 << 20
_BLOCK_CACHE = 32 << 20
# The write-ahead log is shared by every table, and a log file is deleted only when every
# table with writes in it has flushed them. Tables written little (meta: a few counters each
# batch; stop keys) flush rarely, so under RocksDB's default bound (4 x all write buffers,
# about 1.2 GB here) a 1M run kept 265 log files, 920 MB, beside 1.1 GB of tables, for a
# restart to replay. Past this size RocksDB flushes the tables that hold the oldest log.
_ALL_LOGS = 2 * _ALL_WRITE_BUFFERS
#: Tables read by point lookups of fixed-length keys (index keys, fingerprints, document ids),
#: and listed whole only by reports: their memtables are hash tables instead of skip lists,
#: which halves the time RocksDB spends in writes and reads of the indexes (and rocksdict holds
#: the GIL through a read). The value is the key length, used as the hashed prefix. For the
#: documents and union-find tables (random 8-byte ids too): 4 MB memtables instead of 16,
#: peak RSS -11 MB at 100k and -13 MB at 1M, time within this VM's noise.
_HASHED_TABLES = {
    "supershingles": 4,
    "shingles": 4,
    "fingerprints": 9,
    "docs": 8,
    "parents": 8,
    "clusters": 8,
}
_HASH_BUCKETS = 1 << 16
# Their keys are random, so every file of a level spans the whole key range, and each
# compaction into a level rewrites all of it that overlaps: with RocksDB's 256 MB base level
# and 64 MB files, a growing index was rewritten whole every 16 MB flushed. Small files and a
# small base level bound the rewrite per compaction (500k documents: compaction CPU 131 ->
# 60 s, peak RSS 341 -> 312 MB; disk and 20k/100k times unchanged).
_HASHED_FILE = 8 << 20
_HASHED_LEVEL_BASE = 32 << 20
#: Tables whose values are mostly random bytes (sketches): zstd finds nothing to take out, and
#: trying costs flush time (the same bytes on disk without it)
_RANDOM_TABLES = frozenset({"docs"})


def _options(block_cache: Any, key_length: int | None = None, compress: bool = True) -> Any:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    # zstd: ids and fingerprints are random bytes that no codec shrinks, but the block
    # structure around them does (20k documents: 1563 -> 1460 bytes each, lz4 -> zstd);
    # the documents' table, mostly sketches, does not shrink at all (_RANDOM_TABLES)
    options.set_compression_type(DBCompressionType.zstd() if compress else DBCompressionType.none())
    # Most index lookups are for keys never seen before; a Bloom filter answers those without
    # reading blocks (2M keys: 8.2 -> 2.2 us per absent key), at 10 bits per key in memory
    table = BlockBasedOptions()
    table.set_bloom_filter(10, False)
    # one cache for every table (by default each table has its own, together 75 MB at 100k)
    table.set_block_cache(block_cache)
    options.set_block_based_table_factory(table)
    # Bound the memtables: by default every table may hold 2 x 64 MB in memory, which is
    # most of the resident memory of a long run (measured: bench/run.py at 100k documents).
    options.set_write_buffer_size(_TABLE_WRITE_BUFFER)
    options.set_db_write_buffer_size(_ALL_WRITE_BUFFERS)
    # hash memtables cannot take concurrent inserts; there is one writer anyway
    options.set_allow_concurrent_memtable_write(False)
    if key_length is not None:
        # capped: a shorter key is its own prefix, so every key is in the extractor's domain
        options.set_prefix_extractor(SliceTransform.create_max_len_prefix(key_length))
        # (rocksdict's type stub omits the bucket count, which the function requires)
        memtable = MemtableFactory.hash_link_list(_HASH_BUCKETS)  # type: ignore[call-arg]
        options.set_memtable_factory(memtable)
        options.set_write_buffer_size(_HASHED_WRITE_BUFFER)
        options.set_target_file_size_base(_HASHED_FILE)
        options.set_max_bytes_for_level_base(_HASHED_LEVEL_BASE)
    return options


def _database_options(block_cache: Any, log_bytes: int) -> Any:
    """The options of the database as a whole (and of its default table)."""
    options = _options(block_cache)
    options.set_max_total_wal_size(log_bytes)
    return options


def _total_order() -> Any:
    """Iteration over every key, also of a table with a prefix extractor; a whole-table scan
    does not displace the blocks that lookups use from the cache."""
    read = ReadOptions()
    read.set_total_order_seek(True)
    read.fill_cache(False)  # type: ignore[call-arg]  # (the stub omits the flag it requires)
    return read


class RocksDBStore(Store):
    """State in a RocksDB directory; a second process opening the same directory is refused."""

    def __init__(self, path: str | os.PathLike[str], log_bytes: int = _ALL_LOGS) -> None:
        """``log_bytes``: the write-ahead log's size past which the tables holding its oldest
        file are flushed."""
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            cache = Cache(_BLOCK_CACHE)
            # RocksDB opens a database only with all of its column families: a table an older
            # version kept is opened too (and left alone), so that the format check can speak
            existing = Rdict.list_cf(str(self.path)) if (self.path / "CURRENT").exists() else []
            self._db: Any = Rdict(
                str(self.path),
                _database_options(cache, log_bytes),
                column_families={
                    name: _options(cache, _HASHED_TABLES.get(name), name not in _RANDOM_TABLES)
                    for name in {*TABLES, *existing} - {"default"}
                },
            )
        except Exception as error:
            raise StateError(f"cannot open the state in {self.path}: {error}") from error
        self._families = {name: self._db.get_column_family(name) for name in TABLES}
        self._handles = {name: self._db.get_column_family_handle(name) for name in TABLES}

    def _family(self, table: str) -> Any:
        if self._db is None:
            raise RuntimeError("the store is closed")
        self.check_table(table)
        return self._families[table]

    def get(self, table: str, key: bytes) -> bytes | None:
        value = self._family(table).get(key)
        return None if value is None else bytes(value)

    def get_many(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        # one get per key: through rocksdict, RocksDB's batched multi-get costs more per key
        # (measured: 1.3 -> 0.6 us per absent key, 1.6 -> 1.2 us per present one)
        get = self._family(table).get
        return [get(key) for key in keys]

    def items(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        for key, value in self._family(table).items(read_opt=_total_order()):
            yield bytes(key), bytes(value)

    def keys(self, table: str) -> Iterator[bytes]:
        # without the values: 0.31 us per key (a 9.2M-key index read in 2.9 s)
        for key in self._family(table).keys(read_opt=_total_order()):
            yield bytes(key)

    def write(self, changes: Changes) -> None:
        for name in changes:
            self._family(name)
        batch = WriteBatch(raw_mode=True)
        for name, updates in changes.items():
            handle = self._handles[name]
            for key, value in updates.items():
                if value is None:
                    batch.delete(key, handle)
                else:
                    batch.put(key, value, handle)
        if len(batch):
            self._db.write(batch)

    def flush_in_background(self) -> None:
        # closing flushes each table in turn while the caller waits (0.25 s of a 20k run);
        # started early, the flushes run in RocksDB's threads beside whatever comes next
        for table in TABLES:
            self._family(table).flush(wait=False)

    def disk_bytes(self, flush: bool = True) -> int:
        if flush and self._db is not None:
            self._db.flush()
        total = 0
        for path in self.path.rglob("*"):
            try:
                total += path.stat().st_size if path.is_file() else 0
            except FileNotFoundError:  # deleted by a compaction since the listing
                continue
        return total

    def close(self) -> None:
        if self._db is None:
            return
        for family in self._families.values():
            family.close()
        self._families.clear()
        self._handles.clear()
        self._db.close()
        self._db = None
        gc.collect()  # rocksdict releases the directory lock only when the handles are freed
