"""The state's history, for the dashboard: samples of its counters over time, and the
clusters that grew between two samples, written by the writer in its batches' transactions.

Any process that reads the state (``neardup serve``, started at any time) draws the growth
since the state began from it, across restarts of the writer. The table is bounded: when it
holds ``MAX_SAMPLES``, every other sample of its older half goes, so the samples still span
the whole history, at a resolution that halves as it ages.
"""

from __future__ import annotations

import msgspec

from .transaction import Transaction

__all__ = ["GROWTH_PER_SAMPLE", "MAX_SAMPLES", "Sample", "Timeline"]

#: samples kept at most (the table's bound: a few hundred kilobytes)
MAX_SAMPLES = 2048
#: clusters kept with a sample: those that grew most since the sample before
GROWTH_PER_SAMPLE = 20

_NEXT = b"timeline:next"
_COUNT = b"timeline:count"


class Sample(msgspec.Struct, array_like=True, frozen=True):
    """The state at one moment: ``time`` (seconds since the epoch), counters by name, and
    (cluster root, documents that joined it) for the clusters that grew most since the
    sample before."""

    time: float
    counters: dict[str, int]
    grew: list[tuple[int, int]] = []


_ENCODE = msgspec.msgpack.Encoder()
_DECODE = msgspec.msgpack.Decoder(Sample)


class Timeline:
    """The samples, read and appended inside a transaction."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def _number(self, key: bytes) -> int:
        raw = self._tx.get("meta", key)
        return 0 if raw is None else int.from_bytes(raw, "big")

    def append(self, sample: Sample) -> None:
        number, count = self._number(_NEXT), self._number(_COUNT)
        self._tx.put("timeline", number.to_bytes(8, "big"), _ENCODE.encode(sample))
        count += 1
        if count >= MAX_SAMPLES:
            count -= self._thin(MAX_SAMPLES // 2)
        self._tx.put("meta", _NEXT, (number + 1).to_bytes(8, "big"))
        self._tx.put("meta", _COUNT, count.to_bytes(8, "big"))

    def _thin(self, oldest: int) -> int:
        """Delete every other one of the ``oldest`` samples (the first is kept); how many."""
        keys = [key for key, _ in self._tx.store.scan("timeline", limit=oldest)]
        gone = keys[1::2]
        for key in gone:
            self._tx.delete("timeline", key)
        return len(gone)

    def samples(self, since: float = 0.0) -> list[Sample]:
        """The committed samples taken after ``since``, oldest first."""
        found = []
        for _, raw in self._tx.store.scan("timeline"):
            sample = _DECODE.decode(raw)
            if sample.time > since:
                found.append(sample)
        return found
