"""The store fixture: every backend, for the Store contract suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from neardup.state import MemoryStore, RocksDBStore, Store


def _backend(name: str, tmp_path: Path) -> Store:
    if name == "memory":
        return MemoryStore()
    return RocksDBStore(tmp_path / "db")


@pytest.fixture(params=["memory", "rocksdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Every backend, for the contract suite (``parametrize(..., indirect=True)`` to pick one)."""
    backend = _backend(request.param, tmp_path)
    yield backend
    backend.close()
