from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from neardup.state import MemoryStore, RocksDBStore, Store


@pytest.fixture(params=["memory", "rocksdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Every backend, for the contract suite (``parametrize(..., indirect=True)`` to pick one)."""
    backend: Store = MemoryStore() if request.param == "memory" else RocksDBStore(tmp_path / "db")
    yield backend
    backend.close()
