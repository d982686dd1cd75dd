"""Retention by event time: ``neardup expire`` removes the urls of a state that were last
fetched before a date, as deletions, and gives the disk back.

Event time, not the wall clock: the bound is a date the caller gives (a run or a worker
with ``--expire-after`` keeps one a window behind the latest ``fetched_at`` it has applied:
``detection.retention``), so that a replay expires the same pages. Urls fetched without a
``fetched_at`` have no time to compare: they stay.
"""

from __future__ import annotations

from typing import IO

from neardup.core import NeardupError, normalise_fetched_at
from neardup.state import State, fetched_at_to_micros

from ..detection.events import write_events
from ..detection.retention import EXPIRED_PER_TRANSACTION, expire_chunk, expired_before

__all__ = ["expire"]

#: slices of the indexes swept in one transaction (``state.sweep``)
_SLICES_PER_TRANSACTION = 256


def expire(state: State, before: str, events: IO[str] | None = None) -> dict[str, int]:
    """Remove every live url last fetched before ``before`` (ISO-8601); what it did."""
    if state.settings.versions != "latest":
        raise NeardupError(
            "expire removes urls from a state that keeps each url's latest version "
            "(versions = latest); this one keeps every fetch (versions = all)"
        )
    bound = fetched_at_to_micros(normalise_fetched_at(before))
    old = expired_before(state, bound)
    for start in range(0, len(old), EXPIRED_PER_TRANSACTION):
        view = state.view()
        result = expire_chunk(view, state.settings, old[start : start + EXPIRED_PER_TRANSACTION])
        view.commit()
        if events is not None:
            write_events(events, result.events)
    view = state.view()
    view.kept.expire_before(bound)  # and the departed versions kept from before the date
    view.commit()
    # their postings and fingerprints out of the indexes before compacting: two passes at
    # most (the first may have begun before they left)
    until = state.view().sweep.sweep_pass + 2
    while True:
        view = state.view()
        swept = view.sweep.drain(_SLICES_PER_TRANSACTION, until)
        view.commit()
        if swept:
            break
    state.store.compact()
    return {"expired": len(old), "disk_bytes": state.store.disk_bytes(flush=True)}
