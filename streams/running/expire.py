"""Retention by event time: ``neardup expire`` removes the urls of a state that were last
fetched before a date, as deletions, and gives the disk back.

Event time, not the wall clock: the bound is a date the caller gives (a worker would give
one against the highest ``fetched_at`` it has seen), so that a replay expires the same
pages. Urls fetched without a ``fetched_at`` have no time to compare: they stay.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import IO, TypeVar

from neardup.core import NeardupError, normalise_fetched_at
from neardup.state import NO_TIME, State, fetched_at_to_micros

from ..detection.events import write_events
from ..detection.union import ref_of
from ..detection.versions import expire_urls

__all__ = ["expire"]

T = TypeVar("T")

#: urls removed in one transaction
BATCH = 1000


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def expire(state: State, before: str, events: IO[str] | None = None) -> dict[str, int]:
    """Remove every live url last fetched before ``before`` (ISO-8601); what it did."""
    if state.settings.versions != "latest":
        raise NeardupError(
            "expire removes urls from a state that keeps each url's latest version "
            "(versions = latest); this one keeps every fetch (versions = all)"
        )
    bound = fetched_at_to_micros(normalise_fetched_at(before))
    old = [
        (url, version)
        for url, version in state.view().live.scan()
        if not version.deleted and NO_TIME < version.last_fetched < bound
    ]
    for chunk in _chunks(old, BATCH):
        view, gauges = state.view(), dict[str, int]()
        result = expire_urls(view, state.settings, chunk, partial(ref_of, view), gauges)
        view.counters.add_many(gauges)
        view.counters.add_many(result.counter_increments())
        view.counters.add("pages_expired", result.counts.removed)
        view.commit()
        if events is not None:
            write_events(events, result.events)
    state.store.compact()
    return {"expired": len(old), "disk_bytes": state.store.disk_bytes(flush=True)}
