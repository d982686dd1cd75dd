"""neardup.state: the detector's memory, over a key-value store (in memory or RocksDB)."""

from .checkpoints import Checkpoints
from .clusters import Clusters
from .codec import (
    NO_TIME,
    ClusterInfo,
    DocRecord,
    Postings,
    StoredRef,
    fetched_at_to_micros,
    pack_sample,
    unpack_samples,
    whole_sample,
)
from .documents import Documents, FingerprintKind, FingerprintTable, Seen, UrlHistory
from .memory import MemoryStore
from .meta import (
    FORMAT_VERSION,
    Counters,
    EventTime,
    LogOffsets,
    check_or_store_role,
    check_or_store_settings,
)
from .postings import Meetings, PostingIndex
from .rocksdb import RocksDBOptions, RocksDBStore
from .state import KEY_FILTER_BYTES, State, StateView
from .stop_keys import StopKey, top_stop_keys
from .store import TABLES, Changes, Store, Table
from .timeline import Sample, Timeline
from .transaction import Transaction
from .versions import CopyGroups, Departed, KeptVersions, LiveVersion, LiveVersions

__all__ = [
    "FORMAT_VERSION",
    "KEY_FILTER_BYTES",
    "NO_TIME",
    "TABLES",
    "Changes",
    "Checkpoints",
    "ClusterInfo",
    "Clusters",
    "CopyGroups",
    "Counters",
    "Departed",
    "DocRecord",
    "Documents",
    "EventTime",
    "FingerprintKind",
    "FingerprintTable",
    "KeptVersions",
    "LiveVersion",
    "LiveVersions",
    "LogOffsets",
    "Meetings",
    "MemoryStore",
    "PostingIndex",
    "Postings",
    "RocksDBOptions",
    "RocksDBStore",
    "Sample",
    "Seen",
    "State",
    "StateView",
    "StopKey",
    "Store",
    "StoredRef",
    "Table",
    "Timeline",
    "Transaction",
    "UrlHistory",
    "check_or_store_role",
    "check_or_store_settings",
    "fetched_at_to_micros",
    "pack_sample",
    "top_stop_keys",
    "unpack_samples",
    "whole_sample",
]
