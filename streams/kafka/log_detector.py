"""The Kafka mode's detector: the embedded Detector as a fold over one ordered log.

The prepared topic has one partition; its messages, in offset order, are the detector's
whole input, and its state is a function of the prefix of that log it has applied. The
state keeps the next offset to apply, written in the same atomic write as the batch that
ends there. So:

* a message below that offset was applied already, and its events were sent before the
  write (the caller flushes them first): it is skipped;
* a state behind the first offset it is given (a new worker, or a worker that gets the
  partition back after another one had it) catches up by applying the missing messages
  without sending anything: whoever applied them first sent their events.

The log is the state's changelog, as Kafka Streams reuses a source topic as the changelog of
a table built from it: no per-key changelog is written, and every worker that applies the
same prefix holds the same state.

With a retention window (``detection.retention``) a run of messages stops at the message
after which a sweep is due (the bound is checked after every message, so the sweeps of a
log do not depend on how its messages are grouped into runs); the run's write marks the
sweep due, and the sweep's chunks (``sweep``) are applied, and their events sent, before
the next message: a sweep depends on the state after its message alone, and one a crash cut
short is finished from the state.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from neardup.core import BadRecordError, PreparedDoc, Settings, SettingsError, StateError
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.prepared_codec import decode_batch, settings_of_batch
from neardup.core.prepared_items import decode_items
from neardup.state import State, StateView
from neardup.state.items import stored_model

from ..detection import BatchResult, Detector
from ..detection.history import HistoryRecorder
from ..detection.item_fit import FIRST_FIT, fit_due, item_count, refit
from ..detection.items import ItemDetector, ItemScoring
from ..detection.retention import (
    EXPIRED_PER_TRANSACTION,
    Retention,
    Sweeper,
    begin_sweep_if_due,
    check_retention,
    latest_fetch,
)

__all__ = ["LogDetector", "SettingsCheck", "Staged", "unapplied"]


@dataclass(frozen=True, slots=True)
class Staged:
    """What a run of messages did to the state, not yet durable (``LogDetector.commit``)."""

    view: StateView
    next_offset: int
    #: the detector's result for the documents of the applied messages
    result: BatchResult
    #: messages that could not be applied: (offset, why); they go to the dead letters
    rejected: tuple[tuple[int, BadRecordError], ...] = ()
    #: a chunk of a retention sweep (no messages): the urls it removes
    expired: int | None = None


class LogDetector:
    """A Detector over ``state`` that applies the messages of the log named ``log``."""

    def __init__(
        self,
        state: State,
        log: str,
        history: HistoryRecorder | None = None,
        items: ItemSchema | None = None,
        retention: Retention | None = None,
    ) -> None:
        """``history``: what records the state's history in the batches (a worker's); none
        for a state rebuilt elsewhere. ``items``: item mode's schema (the log's messages are
        batches of items). ``retention``: the window behind the latest fetched_at applied
        (``detection.retention``); a sweep due in the state is finished without one."""
        if retention is not None:
            check_retention(state.settings, items is not None)
        self.state = state
        self.detector = Detector(state)
        self.items = None if items is None else ItemDetector(state, items)
        self.log = log
        self.retention = retention
        chunk = EXPIRED_PER_TRANSACTION if retention is None else retention.chunk
        #: where fetch times count: a url's latest version, of pages
        timed = items is None and state.settings.versions == "latest"
        self.sweeper = Sweeper(state, chunk) if timed else None
        self._history = history
        self._settings = SettingsCheck(state.settings)

    @property
    def next_offset(self) -> int:
        """The offset of the first message this state has not applied."""
        return self.state.view().log_offsets.get(self.log)

    def stage(self, messages: Sequence[tuple[int, bytes]]) -> Staged:
        """Apply (offset, value) messages, in ascending offset order, to one transaction.

        Messages below ``next_offset`` are skipped; bad ones are rejected with a reason. The
        caller sends the events, then calls ``commit``; a crash before it loses nothing,
        since the messages are applied again on restart and give the same events. Where a
        url's latest version counts, a run is one message; with a retention window it stops
        after the message that makes a sweep due (the staged ``next_offset`` says where):
        the caller does the sweep, then the rest."""
        if self.sweeper is not None and self.sweeper.due():
            raise StateError("a retention sweep is due: finish it (sweep) before the log")
        committed = self.state.view()
        start = committed.log_offsets.get(self.log)
        seen = committed.event_time.seen()
        swept = committed.event_time.swept()
        docs: list[PreparedDoc] = []
        items: list[PreparedItem] = []
        rejected: list[tuple[int, BadRecordError]] = []
        last = start - 1
        for offset, value in unapplied(messages, start):
            last = offset
            try:
                if self.items is not None:
                    items += decode_items(value, self.items.schema)
                else:
                    decoded = decode_batch(value, self._settings.check(value))
                    docs += decoded
                    if self.retention is not None:
                        seen = max(seen, latest_fetch(decoded))
                        if self.retention.bound_due(seen, swept) is not None:
                            break  # the sweep comes before the next message
            except BadRecordError as error:
                rejected.append((offset, error))
            if self.sweeper is not None:
                # a url's versions are followed a message at a time: a batch's departures
                # come before its detection, so its events depend on which messages it
                # holds, and a replay after a crash must hold the same ones to send the
                # same events (consumers drop repeats by id)
                break
        if self.items is not None:
            view, result = self.items.stage(items)
        else:
            view, result = self.detector.stage(docs)
            if self.sweeper is not None:
                view.event_time.see(latest_fetch(docs))
            if self.retention is not None:
                begin_sweep_if_due(view, self.retention)
        view.log_offsets.set(self.log, last + 1)
        if self._history is not None:
            self._history.record(view, result)
        return Staged(view, last + 1, result, tuple(rejected))

    def commit(self, staged: Staged) -> None:
        """Make a staged run durable, with the offset it ends at, in one write."""
        staged.view.commit()
        if staged.expired is not None and self.sweeper is not None:
            self.sweeper.committed(staged.expired)

    def sweep(self) -> Staged | None:
        """The next chunk of the retention sweep due, staged as a run of no messages (the
        caller sends its events, then commits), or None when none is due."""
        chunk = None if self.sweeper is None else self.sweeper.stage()
        if chunk is None:
            return None
        return Staged(chunk.view, self.next_offset, chunk.result, expired=chunk.expired)

    def sweep_silently(self) -> None:
        """Finish the sweep due without sending its events (whoever applied the log past
        it sent them)."""
        while (chunk := self.sweep()) is not None:
            self.commit(chunk)

    def catch_up(self, messages: Sequence[tuple[int, bytes]]) -> int:
        """Apply (offset, value) messages, and the sweeps they make due, without sending
        their events (whoever applied them first sent them); the documents applied."""
        documents = 0
        self.sweep_silently()
        while messages and self.next_offset <= messages[-1][0]:
            staged = self.stage(messages)
            self.commit(staged)
            documents += staged.result.documents
            self.sweep_silently()
        return documents

    def refit_if_due(self) -> Staged | None:
        """Item mode, after a commit: when the state has outgrown its model (from
        ``FIRST_FIT`` items on; ``item_fit.fit_due``), fit it again and score every item
        again; staged as a run of no messages (the caller sends its events, then commits)."""
        items = self.items
        if items is None or not items.schema.learn:
            return None
        model = stored_model(self.state.store)
        if not fit_due(item_count(self.state), model, least=FIRST_FIT):
            return None
        view, result, fitted = refit(self.state, items.schema)
        items.scoring = ItemScoring(items.schema, fitted)
        return Staged(view, self.next_offset, result)


def unapplied(messages: Sequence[tuple[int, bytes]], start: int) -> Iterator[tuple[int, bytes]]:
    """The (offset, value) messages at or after ``start``, which must come in ascending
    offset order (those before ``start`` were applied already: skipped)."""
    last = start - 1
    for offset, value in messages:
        if offset <= last:
            if offset >= start:
                raise ValueError(f"offsets must ascend: {offset} after {last}")
            continue
        last = offset
        yield offset, value


class SettingsCheck:
    """Refuses prepared messages made with settings incompatible with a state's."""

    def __init__(self, mine: Settings) -> None:
        self.mine = mine
        self._accepted: set[bytes] = set()  # settings JSON already checked

    def check(self, value: bytes) -> Settings:
        """This deployment's settings, if the message was prepared with compatible ones."""
        mine = self.mine
        raw, _ = settings_of_batch(value)
        if raw in self._accepted:
            return mine
        try:
            theirs = Settings.from_json(raw.decode())
        except (ValueError, SettingsError) as error:
            raise BadRecordError(
                "bad_prepared_batch", f"the batch's settings cannot be read: {error}"
            ) from error
        differences = mine.incompatibilities(theirs)
        if differences:
            raise BadRecordError(
                "settings_mismatch",
                "the batch was prepared with other settings ("
                + "; ".join(differences)
                + "): every worker of a deployment must use the same settings; republish its "
                "pages once the workers agree",
            )
        self._accepted.add(raw)
        return mine
