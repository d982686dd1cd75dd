"""Retention by event time: the urls last fetched before a bound leave the state, as
deletions made just after their last fetch (``versions.expire_urls``).

The bound is event time, never the wall clock, so that a replay expires the same urls:
``neardup expire`` is given one; a run or a worker with a window (``Retention``) keeps it a
window behind the latest ``fetched_at`` the state has applied (``state.meta.EventTime``,
which the runners move in every batch's transaction where a url's latest version counts).
Finding the urls is a scan of every url's version, so a window sweeps only once its bound
has moved a tenth of the window since the last sweep: a url stays at most that much longer
than the window.

A sweep is decided by the state alone, after the batch that moved the bound: that batch's
transaction marks it due (``begin_sweep_if_due``); the sweep then removes its urls a chunk
at a time, in url order, one transaction each (``Sweeper``), the last of which marks it
done. Nothing else is applied while one is due. A sweep cut short (a crash, a stop) is
finished by the next process on the state: the urls left are those of the chunks not
committed, in the same order, so it ends as one never interrupted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from neardup.core import NeardupError, PreparedDoc, Settings
from neardup.state import NO_TIME, LiveVersion, State, StateView, fetched_at_to_micros

from .result import BatchResult
from .union import ref_of
from .versions import expire_urls

__all__ = [
    "EXPIRED_PER_TRANSACTION",
    "MAX_WINDOW",
    "Retention",
    "SweepChunk",
    "Sweeper",
    "begin_sweep_if_due",
    "check_retention",
    "expire_chunk",
    "expired_before",
    "latest_fetch",
]

#: urls removed in one transaction
EXPIRED_PER_TRANSACTION = 1000
#: the longest window (a bound must stay a time RocksDB keys can hold)
MAX_WINDOW = timedelta(days=36500)


@dataclass(frozen=True, slots=True)
class Retention:
    """A retention window: the urls last fetched more than ``window`` before the latest
    fetch the state has applied are removed. ``chunk``: urls removed a transaction."""

    window: timedelta
    chunk: int = EXPIRED_PER_TRANSACTION

    def __post_init__(self) -> None:
        if not timedelta(0) < self.window <= MAX_WINDOW:
            raise NeardupError(
                f"a retention window of {self.window} is out of range: give a positive "
                f"duration of at most {MAX_WINDOW.days} days, e.g. 30d"
            )
        if self.chunk < 1:
            raise NeardupError(f"chunk={self.chunk}: remove at least one url a transaction")

    @property
    def micros(self) -> int:
        return self.window // timedelta(microseconds=1)

    def bound_due(self, seen: int, swept: int | None) -> int | None:
        """The bound of the sweep due when the latest fetch applied is ``seen`` and the last
        sweep's bound ``swept`` (None: none yet), or None when the bound has moved less
        than a tenth of the window since (or no record had a time)."""
        if seen == NO_TIME:
            return None
        bound = seen - self.micros
        if swept is None or bound - swept >= max(1, self.micros // 10):
            return bound
        return None


def check_retention(settings: Settings, items: bool = False) -> None:
    """A retention window needs a state that keeps each url's latest version (and pages,
    which have fetch times)."""
    if items:
        raise NeardupError(
            "--expire-after removes urls by their fetch time: item mode's records have none"
        )
    if settings.versions != "latest":
        raise NeardupError(
            "--expire-after removes urls from a state that keeps each url's latest version "
            "(versions = latest); this one keeps every fetch (versions = all): make a state "
            "with --versions latest, or leave the option out"
        )


def latest_fetch(docs: Iterable[PreparedDoc]) -> int:
    """The latest fetched_at of the records (``NO_TIME`` if none has one): fetches, deletions
    and unchanged fetches alike."""
    return max((fetched_at_to_micros(doc.page.fetched_at) for doc in docs), default=NO_TIME)


def begin_sweep_if_due(view: StateView, retention: Retention) -> int | None:
    """In a batch's view, after its records: mark the sweep the batch makes due, if any (its
    bound), to be done before anything else is applied."""
    event_time = view.event_time
    if event_time.due() is not None:
        return None
    bound = retention.bound_due(event_time.seen(), event_time.swept())
    if bound is not None:
        event_time.begin_sweep(bound)
    return bound


def expired_before(state: State, bound: int) -> list[tuple[str, LiveVersion]]:
    """The live urls last fetched before ``bound``, in url order (urls without a fetch time
    have none to compare: they stay)."""
    return [
        (url, version)
        for url, version in state.view().live.scan()
        if not version.deleted and NO_TIME < version.last_fetched < bound
    ]


def expire_chunk(
    view: StateView, settings: Settings, chunk: list[tuple[str, LiveVersion]]
) -> BatchResult:
    """Remove the urls of ``chunk`` in ``view``, with their counters; what it did, as a batch
    of no records."""
    gauges: dict[str, int] = {}
    versioned = expire_urls(view, settings, chunk, partial(ref_of, view), gauges)
    view.counters.add_many(gauges)
    view.counters.add_many(versioned.counter_increments())
    view.counters.add("pages_expired", versioned.counts.removed)
    view.sweep.step()
    return BatchResult(
        events=tuple(versioned.events),
        removed=versioned.counts.removed,
        splits=versioned.splits,
    )


@dataclass(frozen=True, slots=True)
class SweepChunk:
    """One chunk of a sweep, staged: ``Sweeper.commit`` makes it durable."""

    view: StateView
    result: BatchResult
    #: urls it removes
    expired: int


class Sweeper:
    """Does the sweep due in a state, a chunk a transaction: ``stage`` the next chunk, act
    on its events, ``commit`` it; until ``stage`` says there is none."""

    def __init__(self, state: State, chunk: int = EXPIRED_PER_TRANSACTION) -> None:
        self.state = state
        self.chunk = chunk
        self._bound: int | None = None
        self._left: list[tuple[str, LiveVersion]] = []  # the sweep's urls not yet committed

    def due(self) -> bool:
        return self.state.view().event_time.due() is not None

    def stage(self) -> SweepChunk | None:
        """The next chunk of the sweep due, staged (the last one marks the sweep done), or
        None when none is due. A chunk staged and not committed is staged again."""
        view = self.state.view()
        bound = view.event_time.due()
        if bound is None:
            self._bound, self._left = None, []
            return None
        if bound != self._bound:  # found once a sweep: committed chunks leave the list
            self._bound, self._left = bound, expired_before(self.state, bound)
        chunk = self._left[: self.chunk]
        result = expire_chunk(view, self.state.settings, chunk)
        if len(self._left) <= self.chunk:
            view.event_time.end_sweep(bound)
        return SweepChunk(view, result, len(chunk))

    def commit(self, chunk: SweepChunk) -> None:
        chunk.view.commit()
        self.committed(chunk.expired)

    def committed(self, expired: int) -> None:
        """The chunk staged last, of ``expired`` urls, is durable."""
        del self._left[:expired]
