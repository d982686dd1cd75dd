"""The in-memory backend: for tests, queries on throw-away state, and small runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from .store import TABLES, Changes, Store, Table

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """Every table in a dict."""

    def __init__(self) -> None:
        self._tables: dict[str, dict[bytes, bytes]] | None = {name: {} for name in TABLES}

    def _table(self, table: Table) -> dict[bytes, bytes]:
        if self._tables is None:
            raise RuntimeError("the store is closed")
        self.check_table(table)
        return self._tables[table]

    def get(self, table: Table, key: bytes) -> bytes | None:
        value = self._table(table).get(key)
        return None if value is None else bytes(value)

    def get_many(self, table: Table, keys: Sequence[bytes]) -> list[bytes | None]:
        values = self._table(table)
        return [None if (v := values.get(key)) is None else bytes(v) for key in keys]

    def items(self, table: Table) -> Iterator[tuple[bytes, bytes]]:
        for key, value in sorted(self._table(table).items()):
            yield bytes(key), bytes(value)

    def scan(
        self, table: Table, start: bytes = b"", limit: int | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        values = self._table(table)
        keys = sorted(key for key in values if key >= start)
        for key in keys if limit is None else keys[:limit]:
            yield bytes(key), bytes(values[key])

    def write(self, changes: Changes) -> None:
        tables = {name: self._table(name) for name in changes}  # check every name first
        for name, updates in changes.items():
            target = tables[name]
            for key, value in updates.items():
                if value is None:
                    target.pop(key, None)
                else:
                    target[key] = bytes(value)

    def catch_up(self) -> None:
        pass  # the only writer is this process

    def compact(self) -> None:
        if self._tables is None:
            raise RuntimeError("the store is closed")  # a dict keeps only the latest values

    def flush_in_background(self) -> None:
        if self._tables is None:
            raise RuntimeError("the store is closed")  # and there is no disk to write to

    def sync(self) -> None:
        if self._tables is None:
            raise RuntimeError("the store is closed")  # and there is no disk to sync

    def close(self) -> None:
        self._tables = None
