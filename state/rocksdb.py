"""The RocksDB backend (rocksdict): one column family per table, atomic WriteBatch writes."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from neardup.core import StateError
from rocksdict import (
    AccessType,
    BlockBasedOptions,
    Cache,
    Checkpoint,
    DBCompressionType,
    Env,
    MemtableFactory,
    Options,
    Rdict,
    ReadOptions,
    SliceTransform,
    WriteBatch,
)

from .kept_filters import FILE_NAME as KEPT_FILTERS
from .store import TABLES, Changes, Store, Table

__all__ = ["FOLLOWER_OPTIONS", "RocksDBOptions", "RocksDBStore"]


_MB = 1 << 20


@dataclass(frozen=True, slots=True)
class RocksDBOptions:
    """How the RocksDB backend is tuned: one field per setting, validated on construction.

    The defaults suit a detector on a small machine: bounded memory, point reads of random
    keys, one writer. None of them changes what is stored, so a state may be reopened with
    other options."""

    #: memtable size of a table with ordered keys; the default 64 MB per table, twice over,
    #: would be most of a long run's resident memory
    write_buffer_bytes: int = 16 * _MB
    #: memtable size of a hashed table: a hash memtable is sorted when flushed, and a small
    #: one sorts in cache and leaves less to flush when the state closes
    hashed_write_buffer_bytes: int = 4 * _MB
    #: all memtables together: RocksDB sets no such bound, so memory would grow with the
    #: number of tables being written (48 MB: a 1M-page run's peak RSS stays under 400 MB)
    all_write_buffers_bytes: int = 48 * _MB
    #: one block cache shared by every table (by default each table gets its own); a
    #: writer's reads are random over a state far larger than any cache a small machine
    #: spares, so the cache holds mostly the blocks just written and read again
    block_cache_bytes: int = 16 * _MB
    #: write-ahead log size past which RocksDB flushes the tables holding its oldest file:
    #: tables written little (meta, stop keys) would otherwise keep every log file alive
    #: for a restart to replay, up to four times all write buffers
    log_bytes: int = 128 * _MB
    #: tables read by point lookups and listed whole only by reports, with their key
    #: length: a hash memtable finds such a key in its bucket where a skip list searches in
    #: order, and rocksdict holds the GIL through every read and write. ``urls``' keys vary
    #: in length: most are shorter than the length given, and are their own prefix; longer
    #: ones share a bucket with those of the same prefix (a skip list inserting a batch's
    #: urls compared long common prefixes all the way down: a twentieth of the union stage)
    hashed_tables: Mapping[Table, int] = field(
        default_factory=lambda: MappingProxyType(
            {
                "supershingles": 4,
                "shingles": 4,
                "containment": 4,
                "fingerprints": 9,
                "seen": 8,
                "docs": 8,
                "parents": 8,
                "clusters": 8,
                "ring": 8,
                "urls": 128,
                "items": 8,
                "itemkeys": 4,
                "simhashes": 4,
            }
        )
    )
    #: buckets of each hash memtable: of the order of the index entries a full one holds,
    #: so that a lookup walks a short chain
    hash_buckets: int = 1 << 16
    #: file size of the hashed tables: their keys are random, so every file of a level spans
    #: the whole key range and a compaction rewrites all of a level it overlaps; small files
    #: bound that rewrite
    hashed_file_bytes: int = 8 * _MB
    #: base level size of the hashed tables, small for the same reason (RocksDB's default
    #: of 256 MB would be rewritten whole by each compaction into it)
    hashed_level_base_bytes: int = 32 * _MB
    #: tables whose values are mostly random bytes (sketches): a codec finds nothing to take
    #: out, and trying costs flush time
    uncompressed_tables: frozenset[Table] = frozenset({"docs"})
    #: RocksDB's own diagnostic logs (LOG, LOG.old.*) kept in the state directory: each
    #: opening of the state starts a new one, and by default a thousand are kept; the
    #: latest is what a diagnosis needs
    info_log_files: int = 1
    #: table files a follower (``neardup serve``) keeps open. RocksDB advises -1 (all) for a
    #: secondary instance, but then each catch-up loads every file's handler in fresh
    #: threads, with the interpreter lock held, even when nothing changed (docs/service.md
    #: has the cost). Bounded, a file opens at its first read; one the writer deleted since
    #: the last catch-up is met by catching up and reading again.
    follower_open_files: int = 4096
    #: bits per key of each table file's Bloom filter: most index lookups are for keys never
    #: seen, and the filter answers those without reading blocks
    bloom_bits_per_key: int = 10
    #: tables whose last level keeps no Bloom filter (RocksDB's ``optimize_filters_for_hits``):
    #: a writer's key filters (``key_filter.py``) answer the keys these indexes never held,
    #: so a lookup that reaches RocksDB mostly finds its key, and the last level's filter
    #: (nine tenths of a table's, 30 MB in memory and on disk at a million pages) would only
    #: be read to say yes. A key the filters let through in error reads one block instead.
    filterless_last_level: frozenset[Table] = frozenset(
        {"supershingles", "shingles", "containment", "itemkeys", "simhashes"}
    )
    #: tables compacted once level 0 holds this many files, not RocksDB's 4: the containment
    #: lists are rewritten whole as they grow, and until a compaction every replaced version
    #: stays on disk (two files keep fewer bytes a document than four, in the same time:
    #: docs/benchmarks.md)
    level0_compaction_triggers: Mapping[Table, int] = field(
        default_factory=lambda: MappingProxyType({"containment": 2})
    )
    #: RocksDB's flushes and compactions at the lowest CPU priority (nice 19, its own
    #: ``LowerThreadPoolCPUPriority``): they are behind the detector's thread, not on its
    #: path, and at the same priority took a share of its core (docs/benchmarks.md). They
    #: cannot starve: a writer that outruns them stalls
    #: and sleeps. RocksDB's thread pools are the process's, so this lowers them for every
    #: state the process opens.
    lower_background_priority: bool = True

    def __post_init__(self) -> None:
        sizes = {
            "write_buffer_bytes": self.write_buffer_bytes,
            "hashed_write_buffer_bytes": self.hashed_write_buffer_bytes,
            "all_write_buffers_bytes": self.all_write_buffers_bytes,
            "block_cache_bytes": self.block_cache_bytes,
            "log_bytes": self.log_bytes,
            "hashed_file_bytes": self.hashed_file_bytes,
            "hashed_level_base_bytes": self.hashed_level_base_bytes,
        }
        for name, value in sizes.items():
            if not isinstance(value, int) or value < _MB:
                raise StateError(
                    f"RocksDBOptions({name}={value!r}): use a size in bytes of at least 1 MiB "
                    f"(1 << 20); the default is {getattr(RocksDBOptions(), name)}"
                )
        if not isinstance(self.follower_open_files, int) or self.follower_open_files < 16:
            raise StateError(
                f"RocksDBOptions(follower_open_files={self.follower_open_files!r}): keep at "
                "least 16 table files open (4096 is the default)"
            )
        if not isinstance(self.info_log_files, int) or self.info_log_files < 1:
            raise StateError(
                f"RocksDBOptions(info_log_files={self.info_log_files!r}): keep at least 1"
            )
        if not isinstance(self.hash_buckets, int) or self.hash_buckets < 1:
            raise StateError(
                f"RocksDBOptions(hash_buckets={self.hash_buckets!r}): use a positive integer"
            )
        if not isinstance(self.bloom_bits_per_key, int) or not 1 <= self.bloom_bits_per_key <= 64:
            raise StateError(
                f"RocksDBOptions(bloom_bits_per_key={self.bloom_bits_per_key!r}): use an "
                "integer from 1 to 64 (10 gives about 1 % false positives)"
            )
        if not isinstance(self.lower_background_priority, bool):
            raise StateError(
                f"RocksDBOptions(lower_background_priority={self.lower_background_priority!r}): "
                "give True (the default) or False"
            )
        for table, files in self.level0_compaction_triggers.items():
            if not isinstance(files, int) or files < 1:
                raise StateError(
                    f"RocksDBOptions(level0_compaction_triggers[{table!r}]={files!r}): give a "
                    "number of level-0 files, a positive integer (RocksDB's default is 4)"
                )
        unknown = sorted(
            {
                *self.hashed_tables,
                *self.uncompressed_tables,
                *self.level0_compaction_triggers,
                *self.filterless_last_level,
            }
            - set(TABLES)
        )
        if unknown:
            raise StateError(
                f"RocksDBOptions names unknown tables {unknown}: the tables are {', '.join(TABLES)}"
            )
        for table, key_length in self.hashed_tables.items():
            if not isinstance(key_length, int) or key_length < 1:
                raise StateError(
                    f"RocksDBOptions(hashed_tables[{table!r}]={key_length!r}): give the "
                    "table's key length in bytes, a positive integer"
                )


#: a follower's tuning (``neardup serve``): it only answers queries, whose reads are random
#: sketches and posting lists all over the state; a block cache of 256 MB keeps them decoded
#: (a state answers more queries a second than with a writer's few MB: docs/service.md)
FOLLOWER_OPTIONS = RocksDBOptions(block_cache_bytes=256 * _MB)


def _options(
    settings: RocksDBOptions,
    block_cache: Any,
    key_length: int | None = None,
    compress: bool = True,
    level0_files: int | None = None,
    filterless_last_level: bool = False,
) -> Any:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    # zstd: ids and fingerprints are random bytes that no codec shrinks, but the block
    # structure around them does
    options.set_compression_type(DBCompressionType.zstd() if compress else DBCompressionType.none())
    table = BlockBasedOptions()
    table.set_bloom_filter(settings.bloom_bits_per_key, False)
    table.set_block_cache(block_cache)
    options.set_block_based_table_factory(table)
    options.set_write_buffer_size(settings.write_buffer_bytes)
    options.set_db_write_buffer_size(settings.all_write_buffers_bytes)
    # hash memtables cannot take concurrent inserts; there is one writer anyway
    options.set_allow_concurrent_memtable_write(False)
    if key_length is not None:
        # capped: a shorter key is its own prefix, so every key is in the extractor's domain
        options.set_prefix_extractor(SliceTransform.create_max_len_prefix(key_length))
        # (rocksdict's type stub omits the bucket count, which the function requires)
        memtable = MemtableFactory.hash_link_list(settings.hash_buckets)  # type: ignore[call-arg]
        options.set_memtable_factory(memtable)
        options.set_write_buffer_size(settings.hashed_write_buffer_bytes)
        options.set_target_file_size_base(settings.hashed_file_bytes)
        options.set_max_bytes_for_level_base(settings.hashed_level_base_bytes)
    if level0_files is not None:
        options.set_level_zero_file_num_compaction_trigger(level0_files)
    options.set_optimize_filters_for_hits(filterless_last_level)
    return options


def _database_options(settings: RocksDBOptions, block_cache: Any) -> Any:
    """The options of the database as a whole (and of its default table)."""
    options = _options(settings, block_cache)
    options.set_max_total_wal_size(settings.log_bytes)
    if settings.lower_background_priority:
        background = Env()
        background.lower_thread_pool_cpu_priority()
        background.lower_high_priority_thread_pool_cpu_priority()
        options.set_env(background)
    options.set_keep_log_file_num(settings.info_log_files)
    return options


#: catch-ups a follower's walk over a table may need (each after a file it met had gone)
_WALK_RETRIES = 3


def _total_order() -> Any:
    """Iteration over every key, also of a table with a prefix extractor; a whole-table scan
    does not displace the blocks that lookups use from the cache."""
    read = ReadOptions()
    read.set_total_order_seek(True)
    read.fill_cache(False)  # type: ignore[call-arg]  # (the stub omits the flag it requires)
    return read


#: a follower's own directory, in the temporary directory: this prefix, its process id, "-"
_FOLLOWER_PREFIX = "neardup-follower-"


def _remove_dead_followers_dirs() -> None:
    """Remove the directories of followers whose process is gone: one killed (SIGKILL, a
    crash) could not remove its own, and each holds RocksDB's log of its catch-ups."""
    for path in Path(tempfile.gettempdir()).glob(f"{_FOLLOWER_PREFIX}*-*"):
        pid = path.name[len(_FOLLOWER_PREFIX) :].partition("-")[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue  # not named by a process id (older versions'), or this process's
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue  # alive, another user's


#: what a follower's view of the state leaves out: rocksdict's file of its own (rocksdict
#: writes one into the directory it opens), the writer's lock, its kept key filters (a reader
#: uses none) and RocksDB's logs
_NOT_LINKED = frozenset({"rocksdict-config.json", "LOCK", KEPT_FILTERS, f"{KEPT_FILTERS}.new"})


class RocksDBStore(Store):
    """State in a RocksDB directory; a second process opening the same directory is refused.

    With ``follow``, the store is a follower instead (a RocksDB secondary instance, with its
    own files in a temporary directory): it reads a state that another process may be
    writing, sees the writes made since with ``catch_up``, never writes, and never creates a
    state."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        options: RocksDBOptions | None = None,
        follow: bool = False,
    ) -> None:
        tuning = RocksDBOptions() if options is None else options
        self.path = Path(path)
        self.follower = follow
        self._follower_dir: str | None = None
        access = None
        if not follow:
            self.path.mkdir(parents=True, exist_ok=True)
        elif not (self.path / "CURRENT").exists():
            raise StateError(
                f"there is no state in {self.path} to read: start the writer "
                f"(`neardup run --state {self.path} ...` or a worker) first"
            )
        else:
            _remove_dead_followers_dirs()
            self._follower_dir = tempfile.mkdtemp(prefix=f"{_FOLLOWER_PREFIX}{os.getpid()}-")
            access = AccessType.secondary(self._follower_dir)
        # a follower opens a view of the state: a directory of links to its files, in its
        # own temporary directory, so that nothing is written into the state's (rocksdict
        # writes a file of its own where it opens, which also fails on read-only media)
        self._view: Path | None = None
        self._linked: set[str] = set()
        self._opened_manifest = self._manifest() if follow else ("", -1)
        # the writer's log as ``writer_log`` last gave it, and its file's name
        self._last_log: tuple[tuple[str, int], str] = (("", -1), "")
        try:
            if follow:
                self._view = Path(self._follower_dir or "") / "view"
                self._view.mkdir()
                self._link_new_files()
            cache = Cache(tuning.block_cache_bytes)
            # RocksDB opens a database only with all of its column families: a table an older
            # version kept is opened too (and left alone), so that the format check can speak
            existing = Rdict.list_cf(str(self.path)) if (self.path / "CURRENT").exists() else []
            if follow and set(TABLES) - set(existing):
                raise StateError(
                    f"the state lacks the tables {sorted(set(TABLES) - set(existing))} of "
                    "this neardup's format: a reader cannot add them; open it once with "
                    "`neardup run` or a worker of this version, which upgrades it"
                )
            database = _database_options(tuning, cache)
            if follow:
                database.set_max_open_files(tuning.follower_open_files)
                # a catch-up that reads a flush or a compaction from the writer's manifest
                # opens the new files' handlers, by default in 16 new threads per version
                # edit, with the interpreter lock held while it waits for them: a worker's
                # front started threads all the time, and its catch-ups waited far longer
                # than their CPU time (docs/benchmarks.md)
                database.set_max_file_opening_threads(1)
            self._db: Any = Rdict(
                str(self._view or self.path),
                database,
                column_families={
                    name: _options(
                        tuning,
                        cache,
                        tuning.hashed_tables.get(name),  # type: ignore[call-overload]
                        name not in tuning.uncompressed_tables,
                        tuning.level0_compaction_triggers.get(name),  # type: ignore[call-overload]
                        name in tuning.filterless_last_level,
                    )
                    for name in {*TABLES, *existing} - {"default"}
                },
                **({} if access is None else {"access_type": access}),
            )
        except Exception as error:
            self._remove_follower_dir()
            raise StateError(f"cannot open the state in {self.path}: {error}") from error
        self._families = {name: self._db.get_column_family(name) for name in TABLES}
        self._handles = {name: self._db.get_column_family_handle(name) for name in TABLES}

    def _family(self, table: Table) -> Any:
        if self._db is None:
            raise RuntimeError("the store is closed")
        self.check_table(table)
        return self._families[table]

    def get(self, table: Table, key: bytes) -> bytes | None:
        family = self._family(table)
        try:
            value = family.get(key)
        except Exception:
            if not self._caught_up_after_miss():
                raise
            value = family.get(key)
        return None if value is None else bytes(value)

    def get_many(self, table: Table, keys: Sequence[bytes]) -> list[bytes | None]:
        # RocksDB's batched multi-get: faster than a get per key through rocksdict, and a
        # detector reads hundreds a batch
        family = self._family(table)
        wanted = list(keys)
        try:
            found: list[bytes | None] = family.get(wanted)
        except Exception:
            if not self._caught_up_after_miss():
                raise
            found = family.get(wanted)
        return found

    def _caught_up_after_miss(self) -> bool:
        """A follower's read failed: it may have met a table file that the writer deleted
        (a compaction) since the last catch-up. Caught up, it reads the files that replaced
        it; a writer's failure is not that."""
        if not self.follower or self._db is None:
            return False
        self._link_new_files()
        self._db.try_catch_up_with_primary()
        return True

    def _link_new_files(self) -> None:
        """Link the files the writer made since into the follower's view, before a catch-up
        reads the manifest that names them; drop the links of the files it deleted."""
        if self._view is None:
            return
        present = {
            name
            for name in os.listdir(self.path)
            if name not in _NOT_LINKED and not name.startswith("LOG")
        }
        for name in present - self._linked:
            os.symlink(self.path.absolute() / name, self._view / name)
        for name in self._linked - present:
            (self._view / name).unlink(missing_ok=True)
        self._linked = present

    def items(self, table: Table) -> Iterator[tuple[bytes, bytes]]:
        for key, value in self._walk(table, b"", _total_order()):
            yield key, bytes(value)

    def scan(
        self, table: Table, start: bytes = b"", limit: int | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        if limit is not None and limit <= 0:
            return
        read = ReadOptions()
        read.set_total_order_seek(True)  # a seek in a table with a prefix extractor, too
        for count, (key, value) in enumerate(self._walk(table, start, read), start=1):
            yield key, bytes(value)
            if count == limit:
                return

    def keys(self, table: Table) -> Iterator[bytes]:
        # without the values: reading an index's keys (the key filter) copies no postings
        for key, _ in self._walk(table, b"", _total_order(), values=False):
            yield key

    def _walk(
        self, table: Table, start: bytes, read: Any, values: bool = True
    ) -> Iterator[tuple[bytes, Any]]:
        """A table in key order from ``start``. rocksdict's iteration ends quietly at a read
        error, so a walk that ends looks past its last key once: more keys there, or an
        error, and the walk goes on after its last key (a follower catching up first: it
        met a file the writer compacted away); an error that stays is raised."""
        family = self._family(table)
        after: bytes | None = None
        stuck = 0
        while True:
            begin = start if after is None else after + b"\x00"  # the next key up
            before = after
            try:
                if values:
                    for key, value in family.items(from_key=begin, read_opt=read):
                        after = bytes(key)
                        yield after, value
                else:
                    for key in family.keys(from_key=begin, read_opt=read):
                        after = bytes(key)
                        yield after, None
                untouched = begin if after == before or after is None else after + b"\x00"
                ended_early = self._holds_from(family, untouched, read)
            except Exception:
                ended_early = True
                if not self.follower:
                    raise
            if not ended_early:
                return
            stuck = stuck + 1 if after == before else 0
            if stuck > _WALK_RETRIES:
                raise StateError(f"a walk over {table!r} keeps stopping after {after!r}")
            self._caught_up_after_miss()

    @staticmethod
    def _holds_from(family: Any, position: bytes, read: Any) -> bool:
        """Whether ``family`` holds a key at or after ``position``; an error that ended a
        walk there is raised."""
        cursor = family.iter(read)
        cursor.seek(position)
        if cursor.valid():
            return True
        cursor.status()
        return False

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
            try:
                self._db.write(batch)
            except Exception as error:
                raise self._failed_with(error) from error

    def catch_up(self) -> None:
        # a writer sees its own writes already
        if self.follower and self._db is not None:
            self._link_new_files()
            self._db.try_catch_up_with_primary()

    def outdated(self) -> bool:
        # the writer records each flush and compaction in its manifest (and starts a new one
        # when it reopens): a change there means files this follower's memory may mask
        return self.follower and self._manifest() != self._opened_manifest

    def sequence(self) -> int | None:
        if self.follower or self._db is None:
            return None
        return int(self._db.latest_sequence_number())

    def writer_log(self) -> tuple[str, int] | None:
        if not self.follower:
            return None
        last, name = self._last_log
        if name:
            # while the writer writes, its log grows: one stat, no listing of a directory
            # of hundreds of table files (a follower asks twenty times a second)
            try:
                size = os.stat(self.path / name).st_size
            except FileNotFoundError:  # deleted by a flush: a newer log took over
                size = -1
            if size > last[1]:
                self._last_log = ((last[0], size), name)
                return self._last_log[0]
        newest, newest_name = ("", -1), ""
        with os.scandir(self.path) as entries:
            for entry in entries:
                if not entry.name.endswith(".log"):
                    continue
                try:  # numbered: the newest has the highest number
                    seen = (entry.name.rjust(16, "0"), entry.stat().st_size)
                except FileNotFoundError:  # deleted by a flush since the listing
                    continue
                if seen > newest:
                    newest, newest_name = seen, entry.name
        self._last_log = (newest, newest_name)
        return newest

    def _manifest(self) -> tuple[str, int]:
        try:
            name = (self.path / "CURRENT").read_text().strip()
            return name, (self.path / name).stat().st_size
        except FileNotFoundError:  # between the writer's rename and our read: look again later
            return "", -1

    def directory(self) -> Path | None:
        return None if self.follower else self.path

    def sync(self) -> None:
        if self.follower or self.failed is not None:
            return
        if self._db is None:
            raise RuntimeError("the store is closed")
        self._db.flush_wal(True)

    def flush_in_background(self) -> None:
        if self.follower or self.failed is not None:
            return
        # closing flushes each table in turn while the caller waits; started early, the
        # flushes run in RocksDB's threads beside whatever comes next
        families = [self._family(table) for table in TABLES]
        try:
            for family in families:
                family.flush(wait=False)
        except Exception as error:
            raise self._failed_with(error) from error

    def _failed_with(self, error: Exception) -> StateError:
        """The error a write met, as the one error the caller sees: RocksDB refuses every
        later write ("Writer has previous error") until the state is opened again, and the
        batches written before it are kept."""
        if "No space left on device" in str(error):
            problem = StateError(
                f"the disk holding the state in {self.path} is full: free some space and run "
                f"again (what was written before is kept) [{error}]"
            )
        else:
            problem = StateError(f"cannot write the state in {self.path}: {error}")
        self.failed = problem
        return problem

    def disk_bytes(self, flush: bool = True) -> int:
        if flush and self._db is not None and not self.follower:
            self._db.flush()
        total = 0
        for path in self.path.rglob("*"):
            try:
                total += path.stat().st_size if path.is_file() else 0
            except FileNotFoundError:  # deleted by a compaction since the listing
                continue
        return total

    def checkpoint(self, path: str | os.PathLike[str]) -> None:
        if self.follower:
            raise StateError("a follower cannot checkpoint the state it reads")
        if self._db is None:
            raise RuntimeError("the store is closed")
        Checkpoint(self._db).create_checkpoint(str(path))

    def compact(self) -> None:
        if self.follower:
            raise StateError("a follower cannot compact the state it reads")
        for table in TABLES:
            self._family(table).compact_range(None, None)

    def close(self) -> None:
        if self._db is None:
            return
        database, self._db = self._db, None
        try:
            for family in self._families.values():
                family.close()
            database.close()
        except Exception as error:
            if self.failed is None:  # else the trouble a write met, already raised
                raise self._failed_with(error) from error
        finally:
            self._families.clear()
            self._handles.clear()
            del database
            gc.collect()  # rocksdict releases the directory lock only when the handles are freed
            self._remove_follower_dir()

    def _remove_follower_dir(self) -> None:
        if self._follower_dir is not None:
            shutil.rmtree(self._follower_dir, ignore_errors=True)
            self._follower_dir = None
