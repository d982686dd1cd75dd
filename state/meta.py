"""The state's own description: format version, settings, counters, Kafka log offsets and
the event time it has reached."""

from __future__ import annotations

from collections.abc import Mapping

from neardup.core import IncompatibleStateError, Settings, StateError

from .codec import NO_TIME
from .stop_keys import ranks_of
from .store import Store, Table
from .transaction import Transaction

__all__ = [
    "FORMAT_VERSION",
    "Counters",
    "EventTime",
    "LogOffsets",
    "check_or_store_role",
    "check_or_store_settings",
]

#: Bumped whenever a stored layout changes incompatibly.
FORMAT_VERSION = 13

#: older formats a writer upgrades in place when it opens them, with why that is safe
_UPGRADES = {
    8: "format 9 adds the containment_log table, and an empty log is format 8's index",
    9: "format 10 adds the stopranks table, which ranks the stop keys of stopkeys",
    10: "format 11 adds the timeline, items, itemkeys, edges and simhashes tables, empty in "
    "a min-hash state of pages without history",
    11: "format 12 adds the live, gone and kept tables, used only where versions = 'latest' "
    "(a setting older states do not have)",
    12: "format 13 marks removed versions in gone (heir 0) until the sweep takes them out "
    "of the indexes; format 12's gone holds heirs only, which format 13 reads as they are",
}
#: the format from which the stopranks table is there to keep (no need to rank the stop keys)
_RANKED = 10


def check_or_store_settings(store: Store, settings: Settings | None) -> Settings:
    """The settings to use: the stored ones, checked against ``settings`` if given.

    A new state stores ``settings`` (or the defaults). Reopening with incompatible settings
    raises IncompatibleStateError naming every differing field.
    """
    version = store.get("meta", b"format")
    stored = store.get("meta", b"settings")
    if stored is None:
        chosen = settings or Settings()
        store.write(
            {
                "meta": {
                    b"format": str(FORMAT_VERSION).encode(),
                    b"settings": chosen.to_json().encode(),
                }
            }
        )
        return chosen
    if version is not None and int(version) in _UPGRADES and store.writer_log() is None:
        # one write: a state left half-upgraded by a crash would claim ranks it lacks
        changes: dict[Table, dict[bytes, bytes | None]] = {
            "meta": {b"format": str(FORMAT_VERSION).encode()}
        }
        if int(version) < _RANKED:
            changes["stopranks"] = ranks_of(store)
        store.write(changes)
        version = str(FORMAT_VERSION).encode()
    if version is None or int(version) != FORMAT_VERSION:
        raise StateError(
            f"the state has format {version!r}, this neardup reads format {FORMAT_VERSION}: "
            "rebuild the state with this version"
        )
    existing = Settings.from_json(stored.decode())
    if settings is not None:
        differences = settings.incompatibilities(existing)
        if differences:
            raise IncompatibleStateError(
                "the state was built with other settings ("
                + "; ".join(differences)
                + "): use the stored settings (omit the options) or a new state directory"
            )
        if settings != existing:  # only run settings differ (see RUN_SETTINGS)
            store.write({"meta": {b"settings": settings.to_json().encode()}})
            return settings
    return existing


def check_or_store_role(store: Store, role: str) -> None:
    """A state's part in a deployment ("shard 1 of 4", "union of 4"): stored on first use,
    and a state reopened for another part is refused (a shard's documents were chosen by
    their id modulo the number of shards: they cannot serve another shard or count)."""
    stored = store.get("meta", b"role")
    if stored is None:
        store.write({"meta": {b"role": role.encode()}})
    elif stored.decode() != role:
        raise IncompatibleStateError(
            f"this state is the {stored.decode()}, not the {role}: detection shards cannot be "
            "added or renumbered in a deployment; start a new one (another app id and state "
            "directories) to change their number"
        )


class Counters:
    """Named counters kept in the meta table, updated inside transactions: totals that only
    grow (documents, merges) and gauges kept up to date by the tables they describe
    (clusters, index keys), so a scrape reads a few keys instead of whole tables."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def get(self, name: str) -> int:
        raw = self._tx.get("meta", b"count:" + name.encode())
        return 0 if raw is None else int.from_bytes(raw, "big")

    def add(self, name: str, amount: int = 1) -> None:
        if amount:
            self._tx.put(
                "meta", b"count:" + name.encode(), (self.get(name) + amount).to_bytes(8, "big")
            )

    def add_many(self, amounts: Mapping[str, int]) -> None:
        """Add to several counters at once (a batch's counts); a negative amount lowers a
        gauge (clusters, documents in clusters)."""
        for name, amount in amounts.items():
            self.add(name, amount)

    def with_prefix(self, prefix: str) -> dict[str, int]:
        """Every committed counter whose name starts with ``prefix``, by name: one ordered
        read of the meta table from the prefix on."""
        start = b"count:" + prefix.encode()
        found: dict[str, int] = {}
        for key, raw in self._tx.store.scan("meta", start):
            if not key.startswith(start):
                break
            found[key[len(b"count:") :].decode()] = int.from_bytes(raw, "big")
        return found


class LogOffsets:
    """The next offset to apply of each log a Kafka detector folds into the state, written in
    the same transaction as the documents of the batch that ends there."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    @staticmethod
    def _key(log: str) -> bytes:
        return b"log-offset:" + log.encode()

    def get(self, log: str) -> int:
        """The offset of the first message of ``log`` that the state has not applied."""
        raw = self._tx.get("meta", self._key(log))
        return 0 if raw is None else int.from_bytes(raw, "big")

    def set(self, log: str, next_offset: int) -> None:
        if next_offset < 0:
            raise ValueError(f"a log offset is not negative, got {next_offset}")
        self._tx.put("meta", self._key(log), next_offset.to_bytes(8, "big"))


class EventTime:
    """The event time a state has reached, for retention by event time (never the wall
    clock, so that a replay expires the same urls): the latest ``fetched_at`` of the records
    it applied, the bound of its last retention sweep (urls last fetched before it were
    removed), and the bound of a sweep begun and not finished (a sweep is done a chunk of
    urls a transaction). Microseconds since 1970; each written in the transaction that
    changes it."""

    _SEEN = b"event-time:seen"
    _SWEPT = b"event-time:swept"
    _DUE = b"event-time:due"

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def _get(self, key: bytes) -> int | None:
        raw = self._tx.get("meta", key)
        return None if raw is None else int.from_bytes(raw, "big", signed=True)

    def _put(self, key: bytes, micros: int) -> None:
        self._tx.put("meta", key, micros.to_bytes(8, "big", signed=True))

    def seen(self) -> int:
        """The latest fetched_at applied (``NO_TIME`` if none had one)."""
        seen = self._get(self._SEEN)
        return NO_TIME if seen is None else seen

    def see(self, micros: int) -> None:
        """A record fetched at ``micros`` was applied."""
        if micros > self.seen():
            self._put(self._SEEN, micros)

    def swept(self) -> int | None:
        """The bound of the last sweep finished, or None if there was none."""
        return self._get(self._SWEPT)

    def due(self) -> int | None:
        """The bound of the sweep begun and not finished, or None."""
        return self._get(self._DUE)

    def begin_sweep(self, bound: int) -> None:
        self._put(self._DUE, bound)

    def end_sweep(self, bound: int) -> None:
        self._put(self._SWEPT, bound)
        self._tx.delete("meta", self._DUE)
