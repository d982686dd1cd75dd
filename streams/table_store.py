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

from collections.abc import Iterator, Mapping, MutableMapping, Sequence

from neardup.state import Changes, Store

__all__ = ["TableStore"]


class TableStore(Store):
    """Named mutable mappings (``bytes -> bytes``; Faust tables in a worker) as a Store.

    A stage keeps only the tables it uses; using another is an error that names them.
    """

    def __init__(self, tables: Mapping[str, MutableMapping[bytes, bytes]]) -> None:
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
        """Forget the tables (Faust owns and closes them)."""
        self._tables = None
