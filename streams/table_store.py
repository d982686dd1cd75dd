"""A Store over Faust tables: the stage functions' state, changelogged to Kafka.

Each of the state's tables a stage uses is one Faust table (bytes keys and values, RocksDB
on disk, a changelog topic in Kafka). Faust writes a table change to the changelog
partition of the event being processed, so a stage that reads and writes only keys routed
to its input partition keeps all of its state in that partition: a worker that takes the
partition over after a rebalance, or a fresh worker after a crash, restores exactly it.

Writes are per key, not one atomic batch as in RocksDBStore. Every stage is replay-safe
(streams/stages.py), and Faust flushes the changelog before committing the input offset,
so a worker killed between two writes of one message redoes that message on restart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from neardup.state import Changes, Store

__all__ = ["TableStore"]


class TableStore(Store):
    """Named Faust tables (``bytes -> bytes``) seen through the Store interface."""

    def __init__(self, tables: Mapping[str, Any]) -> None:
        for name in tables:
            self.check_table(name)
        self._tables = dict(tables)

    def _table(self, table: str) -> Any:
        try:
            return self._tables[table]
        except KeyError:
            raise KeyError(
                f"table {table!r} is not kept by this stage: it keeps {', '.join(self._tables)}"
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
        """Faust owns the tables; nothing to release."""
