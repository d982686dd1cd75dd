"""The Store contract: every backend must pass all of it."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core import StateError
from neardup.state import TABLES, MemoryStore, RocksDBOptions, RocksDBStore, Store, Transaction


def test_get_missing_is_none(store: Store) -> None:
    assert store.get("docs", b"nope") is None
    assert store.get_many("docs", [b"a", b"b"]) == [None, None]
    assert store.get_many("docs", []) == []


def test_write_then_read_and_delete(store: Store) -> None:
    store.write({"docs": {b"a": b"1", b"b": b"2"}, "urls": {b"a": b"x"}})
    assert store.get("docs", b"a") == b"1"
    assert store.get_many("docs", [b"b", b"c", b"a"]) == [b"2", None, b"1"]
    assert store.get("urls", b"a") == b"x"
    store.write({"docs": {b"a": None}})
    assert store.get("docs", b"a") is None


def test_tables_are_separate_namespaces(store: Store) -> None:
    store.write({"docs": {b"k": b"docs"}, "parents": {b"k": b"parents"}})
    assert store.get("docs", b"k") == b"docs"
    assert store.get("parents", b"k") == b"parents"
    assert store.get("clusters", b"k") is None


def test_items_ascending_by_key(store: Store) -> None:
    store.write({"docs": {b"\x02": b"b", b"\x01": b"a", b"\x01\x00": b"c", b"\xff": b"d"}})
    assert [k for k, _ in store.items("docs")] == [b"\x01", b"\x01\x00", b"\x02", b"\xff"]
    assert list(store.keys("docs")) == [b"\x01", b"\x01\x00", b"\x02", b"\xff"]


def test_unknown_table_is_refused(store: Store) -> None:
    with pytest.raises(KeyError, match="unknown table"):
        store.get("nope", b"k")
    with pytest.raises(KeyError, match="unknown table"):
        store.write({"docs": {b"k": b"v"}, "nope": {b"k": b"v"}})
    assert store.get("docs", b"k") is None  # nothing of a refused write lands


def test_every_table_exists(store: Store) -> None:
    for table in TABLES:
        store.write({table: {b"k": table.encode()}})
        assert store.get(table, b"k") == table.encode()


def test_closed_store_refuses_use(store: Store) -> None:
    store.write({"docs": {b"k": b"v"}})
    store.sync()
    assert store.get("docs", b"k") == b"v"
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.get("docs", b"k")
    with pytest.raises(RuntimeError, match="closed"):
        store.flush_in_background()
    with pytest.raises(RuntimeError, match="closed"):
        store.sync()


def test_transaction_reads_its_own_writes_and_commits_atomically(store: Store) -> None:
    store.write({"docs": {b"old": b"1"}})
    tx = Transaction(store)
    tx.put("docs", b"new", b"2")
    tx.delete("docs", b"old")
    # read at once before any single read (one batched read, under the writes), and after
    assert tx.get_many("docs", [b"new", b"old", b"none"]) == [b"2", None, None]
    assert tx.get("docs", b"new") == b"2"
    assert tx.get("docs", b"old") is None
    assert store.get("docs", b"old") == b"1"  # not yet
    assert tx.get_many("docs", [b"new", b"old", b"none"]) == [b"2", None, None]
    tx.commit()
    assert store.get("docs", b"new") == b"2"
    assert store.get("docs", b"old") is None


def test_an_uncommitted_transaction_leaves_no_trace(store: Store) -> None:
    """A transaction never committed (a batch that failed midway) changes nothing stored."""
    earlier = Transaction(store)
    earlier.put("docs", b"old", b"1")
    earlier.commit()
    tx = Transaction(store)
    tx.put("docs", b"k", b"v")
    tx.delete("docs", b"old")
    assert tx.get("docs", b"k") == b"v" and tx.get("docs", b"old") is None
    del tx
    assert store.get("docs", b"k") is None and store.get("docs", b"old") == b"1"
    assert Transaction(store).get_many("docs", [b"k", b"old"]) == [None, b"1"]


@given(
    st.dictionaries(
        st.binary(min_size=1, max_size=8), st.binary(min_size=1, max_size=16), max_size=30
    )
)
def test_memory_and_rocksdb_agree(
    tmp_path_factory: pytest.TempPathFactory, data: dict[bytes, bytes]
) -> None:
    path = tmp_path_factory.mktemp("agree") / "db"
    with MemoryStore() as memory, RocksDBStore(path) as rocks:
        for backend in (memory, rocks):
            backend.write({"shingles": dict(data)})
        assert list(memory.items("shingles")) == list(rocks.items("shingles"))
        keys = [*data, b"\x00missing"]
        assert memory.get_many("shingles", keys) == rocks.get_many("shingles", keys)


def test_flushing_in_background_leaves_reads_and_writes_as_they_were(store: Store) -> None:
    store.write({"supershingles": {b"abcd": b"1"}, "docs": {b"k": b"v"}})
    store.flush_in_background()
    store.write({"docs": {b"k2": b"w"}})  # writes go on while the flush runs
    assert store.get_many("docs", [b"k", b"k2"]) == [b"v", b"w"]
    assert store.get("supershingles", b"abcd") == b"1"


def test_compaction_keeps_every_latest_value(store: Store) -> None:
    for version in range(5):  # a posting list rewritten at each append
        store.write({"containment": {b"abcd": b"x" * (version + 1)}, "docs": {b"gone": b"v"}})
    store.write({"docs": {b"gone": None}})
    store.compact()
    assert list(store.items("containment")) == [(b"abcd", b"xxxxx")]
    assert store.get("docs", b"gone") is None


def test_rocksdb_survives_reopen(tmp_path: Path) -> None:
    with RocksDBStore(tmp_path / "db") as first:
        first.write({"docs": {b"k": b"v"}})
        first.flush_in_background()
        first.write({"docs": {b"later": b"w"}})
    with RocksDBStore(tmp_path / "db") as second:
        assert second.get("docs", b"k") == b"v"
        assert second.get("docs", b"later") == b"w"  # written after the flush began
        assert second.disk_bytes(flush=False) > 0
        assert second.disk_bytes() > 0


@pytest.mark.parametrize(("log_bytes", "bounded"), [(2 << 20, True), (1 << 30, False)])
def test_rocksdb_write_ahead_log_stays_bounded(
    tmp_path: Path, log_bytes: int, bounded: bool
) -> None:
    """Every batch writes the meta table too, which alone never fills a memtable: its writes
    would keep every log file alive (RocksDB deletes one when all tables with writes in it
    have flushed), unless the log's bound flushes the tables holding the oldest one."""
    rng = random.Random(3)

    def logs() -> int:
        total = 0
        for path in (tmp_path / "db").glob("*.log"):
            try:
                total += path.stat().st_size
            except FileNotFoundError:  # deleted by RocksDB since the listing
                continue
        return total

    with RocksDBStore(tmp_path / "db", RocksDBOptions(log_bytes=log_bytes)) as rocks:
        for batch in range(320):  # 32 MB of documents, a counter each batch
            docs = {rng.randbytes(8): rng.randbytes(1000) for _ in range(100)}
            rocks.write({"docs": docs, "meta": {b"batches": str(batch).encode()}})
        # The bound is checked on writes and met by flushes in RocksDB's threads, so the log
        # overshoots it for a while (further on a loaded machine); unbounded,
        # it keeps everything written. The flushes in flight end after the last write.
        deadline = time.monotonic() + 30
        while bounded and logs() >= 16 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (logs() < 16 << 20) if bounded else (logs() > 28 << 20)
        assert rocks.get("meta", b"batches") == b"319"


@pytest.mark.parametrize(
    "table", ["supershingles", "shingles", "fingerprints", "docs", "parents", "clusters", "urls"]
)
def test_rocksdb_hashed_tables_read_and_list_like_a_dict(tmp_path: Path, table: str) -> None:
    """The point-lookup tables keep their memtables in hash tables (state/rocksdb.py): keys of
    any length, sharing prefixes or not, shorter or longer than the hashed prefix, in
    memtables and in flushed files, still read back and list in key order."""
    rng = random.Random(7)
    expected: dict[bytes, bytes] = {}
    with RocksDBStore(tmp_path / "db") as rocks:
        for batch in range(6):
            changes = {
                bytes(rng.randrange(4) for _ in range(rng.randrange(1, 12))): bytes([batch + 1])
                for _ in range(400)
            }
            changes |= {  # long keys with a long common prefix (urls of one site)
                b"\x02" * 126 + bytes(rng.randrange(4) for _ in range(rng.randrange(1, 12))): b"l"
                for _ in range(50)
            }
            rocks.write({table: changes})
            expected.update(changes)
            if batch == 2:
                rocks.disk_bytes()  # flushes the memtables: later reads see files and memtables
        keys = [*expected, b"\x09\x09\x09\x09\x09", b"\x00" * 20]
        assert rocks.get_many(table, keys) == [expected.get(key) for key in keys]
        assert list(rocks.items(table)) == sorted(expected.items())
        assert list(rocks.keys(table)) == sorted(expected)
    with RocksDBStore(tmp_path / "db") as reopened:
        assert list(reopened.items(table)) == sorted(expected.items())


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"block_cache_bytes": 1024}, "block_cache_bytes=1024"),
        ({"bloom_bits_per_key": 0}, "bloom_bits_per_key=0"),
        ({"hash_buckets": -1}, "hash_buckets=-1"),
        ({"hashed_tables": {"nope": 4}}, "unknown tables ['nope']"),
        ({"hashed_tables": {"docs": 0}}, "hashed_tables['docs']=0"),
        ({"level0_compaction_triggers": {"containment": 0}}, "triggers['containment']=0"),
        ({"level0_compaction_triggers": {"nope": 2}}, "unknown tables ['nope']"),
        ({"lower_background_priority": 1}, "lower_background_priority=1"),
    ],
)
def test_rocksdb_options_refuse_bad_values_naming_them(
    change: dict[str, object], named: str
) -> None:
    with pytest.raises(StateError) as refused:
        RocksDBOptions(**change)  # type: ignore[arg-type]
    assert named in str(refused.value)


_BACKGROUND_NICENESS = """
import sys
import time
from pathlib import Path
from neardup.state import RocksDBOptions, RocksDBStore

path, lowered = Path(sys.argv[1]), sys.argv[2] == "lowered"
small = RocksDBOptions(
    hashed_write_buffer_bytes=1 << 20,
    level0_compaction_triggers={"docs": 2},
    lower_background_priority=lowered,
)
with RocksDBStore(path, small) as rocks:
    # fills memtables: RocksDB's high-priority pool flushes them, and its low-priority pool
    # compacts the files of level 0
    for batch in range(6):
        keys = [bytes([n % 256, n // 256, batch]) * 3 for n in range(1024)]
        rocks.write({"docs": {key: bytes(1000) for key in keys}})
    events = ('"flush_finished"', '"compaction_finished"')
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(e in (path / "LOG").read_text() for e in events):
        time.sleep(0.01)
    for task in sorted(Path("/proc/self/task").iterdir()):
        name = (task / "comm").read_text().strip()
        if name.startswith("rocksdb:"):
            niceness = (task / "stat").read_text().rsplit(")", 1)[1].split()[16]
            print(name, niceness)
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
@pytest.mark.parametrize(("lowered", "niceness"), [(True, "19"), (False, "0")])
def test_rocksdb_background_threads_run_at_the_lowest_priority(
    tmp_path: Path, lowered: bool, niceness: str
) -> None:
    """RocksDB's thread pools are the process's: each case runs in a process of its own."""
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            _BACKGROUND_NICENESS,
            str(tmp_path / "db"),
            "lowered" if lowered else "kept",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    threads = [line.split() for line in shown if line]
    assert {name for name, _ in threads} == {"rocksdb:high", "rocksdb:low"}, shown
    assert {value for _, value in threads} == {niceness}, shown


def test_rocksdb_options_do_not_change_what_is_stored(tmp_path: Path) -> None:
    small = RocksDBOptions(write_buffer_bytes=1 << 20, block_cache_bytes=1 << 20, log_bytes=1 << 20)
    with RocksDBStore(tmp_path / "db", small) as rocks:
        rocks.write({"docs": {b"k": b"v"}, "meta": {b"m": b"1"}})
    with RocksDBStore(tmp_path / "db") as reopened:
        assert reopened.get("docs", b"k") == b"v" and reopened.get("meta", b"m") == b"1"


def test_scan_reads_in_order_from_a_key_up_to_a_limit(store: Store) -> None:
    keys = [bytes([a, b]) for a in (1, 3, 2) for b in (9, 0)]
    store.write({"sizes": {key: b"v" + key for key in keys}, "ring": {b"\x05" * 8: b"x"}})
    everything = [key for key, _ in store.scan("sizes")]
    assert everything == sorted(keys)
    assert [key for key, _ in store.scan("sizes", start=b"\x02\x05")] == sorted(keys)[3:]
    assert list(store.scan("sizes", start=b"\x02", limit=2)) == [
        (b"\x02\x00", b"v\x02\x00"),
        (b"\x02\x09", b"v\x02\x09"),
    ]
    assert list(store.scan("sizes", limit=0)) == []
    assert list(store.scan("sizes", start=b"\x09")) == []
    # a table with hashed keys (RocksDB: a prefix extractor) is read in order too
    assert [key for key, _ in store.scan("ring")] == [b"\x05" * 8]
