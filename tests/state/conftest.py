from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from neardup.state import TABLES, MemoryStore, RocksDBStore, Store
from neardup.streams.table_store import TableStore


def _backend(name: str, tmp_path: Path) -> Store:
    if name == "memory":
        return MemoryStore()
    if name == "rocksdb":
        return RocksDBStore(tmp_path / "db")
    # the Kafka worker's adapter, over mappings as a Faust table is one
    return TableStore({table: {} for table in TABLES})


@pytest.fixture(params=["memory", "rocksdb", "tables"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Every backend, for the contract suite (``parametrize(..., indirect=True)`` to pick one)."""
    backend = _backend(request.param, tmp_path)
    yield backend
    backend.close()
