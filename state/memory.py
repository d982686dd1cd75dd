"""The in-memory backend: for tests, queries on throw-away state, and small runs.

It keeps each table in a mutable mapping: its own dicts, or mappings it is given (the Kafka
worker gives it Faust tables, see streams/table_store.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence

from .store import TABLES, Changes, Store

__all__ = ["MemoryStore"]


class MemoryStore(Store):
    """Every table in a dict, or only the ``tables`` given (using another is an error that
    names the ones kept)."""

    def __init__(self, tables: Mapping[str, MutableMapping[bytes, bytes]] | None = None) -> None:
        if tables is None:
            tables = {name: {} for name in TABLES}
        for name in tables:
            self.check_table(name)
        self._tables: dict[str, MutableMapping[bytes, bytes]] | None = dict(tables)

    def _table(self, table: str) -> MutableMapping[bytes, bytes]:
        if self._tables is None:
            raise RuntimeError("the store is closed")
        self.check_table(table)
        try:
            return self._tables[table]
        except KeyError:
            raise KeyError(
                f"table {table!r} is not kept by this store: it keeps {', '.join(self._tables)}"
            ) from None

    def get(self, table: str, key: bytes) -> bytes | None:
        value = self._table(table).get(key)
        return None if value is None else bytes(value)

    def get_many(self, table: str, keys: Sequence[bytes]) -> list[bytes | None]:
        values = self._table(table)
        return [None if (v := values.get(key)) is None else bytes(v) for key in keys]

    def items(self, table: str) -> Iterator[tuple[bytes, bytes]]:
        for key, value in sorted(self._table(table).items()):
            yield bytes(key), bytes(value)

    def write(self, changes: Changes) -> None:
        tables = {name: self._table(name) for name in changes}  # check every name first
        for name, updates in changes.items():
            target = tables[name]
            for key, value in updates.items():
                if value is None:
                    target.pop(key, None)
                else:
                    target[key] = bytes(value)

    def close(self) -> None:
        """Forget the tables (mappings given to it stay with their owner)."""
        self._tables = None
