"""Stop keys, counted and ranked: the index keys whose lists reached the cap.

``stopkeys`` holds each stop key (its index's name, ":", the key) with how many documents
asked for it; ``stopranks`` holds the same keys under their count inverted, so that the most
asked-for ones are the first keys of an ordered read (as ``sizes`` ranks clusters). A report
of the top stop keys reads that many keys, not every stop key: there is one for each
boilerplate shingle the corpus has, and their number grows with the index.
"""

from __future__ import annotations

from dataclasses import dataclass

from .store import Store
from .transaction import Transaction

__all__ = ["StopKey", "mark_stop", "ranks_of", "top_stop_keys"]

#: counts are ranked as (_INVERTED - count): the larger first
_INVERTED = (1 << 64) - 1
_COUNT = 8  # bytes of a count, big-endian
_MARKER = b"\x01"  # a rank's value: the key says everything


@dataclass(frozen=True, slots=True)
class StopKey:
    """A stop key of ``index`` and how many documents asked for it."""

    index: str
    key: bytes
    documents: int


def _name(index: str, key: bytes) -> bytes:
    return index.encode() + b":" + key


def _rank(name: bytes, documents: int) -> bytes:
    return (_INVERTED - documents).to_bytes(_COUNT, "big") + name


def mark_stop(
    tx: Transaction, index: str, key: bytes, documents: int, previous: int | None = None
) -> None:
    """Record that ``documents`` have asked for the stop key ``key`` of ``index``;
    ``previous``: the count recorded before, if it was a stop key already."""
    name = _name(index, key)
    tx.put("stopkeys", name, documents.to_bytes(_COUNT, "big"))
    if previous is not None:
        tx.delete("stopranks", _rank(name, previous))
    tx.put("stopranks", _rank(name, documents), _MARKER)


def ranks_of(store: Store) -> dict[bytes, bytes | None]:
    """The ranks of every stop key of ``store``: what a state written before they were
    ranked needs (one read of ``stopkeys``, when a writer upgrades it)."""
    return {
        _rank(name, int.from_bytes(raw, "big")): _MARKER for name, raw in store.items("stopkeys")
    }


def top_stop_keys(store: Store, limit: int) -> list[StopKey]:
    """The ``limit`` stop keys most asked for (committed state), most first, then by index
    and key."""
    top = []
    for rank, _ in store.scan("stopranks", limit=limit):
        index, key = rank[_COUNT:].split(b":", 1)
        documents = _INVERTED - int.from_bytes(rank[:_COUNT], "big")
        top.append(StopKey(index.decode(), key, documents))
    return top
