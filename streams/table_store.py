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

from neardup.state import MemoryStore

__all__ = ["TableStore"]


class TableStore(MemoryStore):
    """Faust tables (``bytes -> bytes``) as a Store: a MemoryStore over the tables a stage
    keeps; using another is an error that names them."""
