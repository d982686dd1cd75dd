"""The embedded mode: input files in, events out, on one state directory, without Kafka.

Pages, or item records, are prepared in a thread or in a child process (``neardup run``'s
default) while the batch before them is detected. With a retention window, the sweep a batch
makes due is done before the next batch (``detection.retention``).
"""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from functools import partial
from typing import IO, Any, cast

from neardup.core import (
    DEFAULT_MAX_RECORD_BYTES,
    AbandonedError,
    BadRecordError,
    Page,
    PreparedDoc,
    page_from_json,
)
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.prepared_codec import decode_batch
from neardup.state import State

from ..detection import BatchListener, BatchResult, Detector, Stage
from ..detection.events import write_events
from ..detection.history import DEFAULT_HISTORY_EVERY, HistoryRecorder
from ..detection.items import ItemDetector
from ..detection.retention import (
    Retention,
    Sweeper,
    begin_sweep_if_due,
    check_retention,
    latest_fetch,
)
from .inputs import DeadLetter, NumberedLine, is_warc, iter_numbered_lines, iter_records
from .item_fitting import fit_ahead, fit_at_end
from .prepare_work import (
    DEFAULT_BATCH_BYTES,
    Prepared,
    PrepareMode,
    decode_items,
    executor,
    prepare_encoded_timed,
    prepare_items_timed,
    prepare_pages_timed,
)
from .progress import RunObserver
from .run_summary import RunSummary
from .stopping import Stopped, StopSignals

__all__ = ["DEFAULT_BATCH_SIZE", "run"]

#: pages prepared together and written in one transaction
DEFAULT_BATCH_SIZE = 256

#: what a batch is made of: pages, or the lines of records to be parsed where they are
#: prepared (items; pages prepared in a child process)
Record = Page | NumberedLine


def _content(record: Record) -> int:
    """The content characters of a page, or the bytes of an item's line (what preparing it
    costs)."""
    return len(record.content) if isinstance(record, Page) else len(record.raw)


def _batches(
    items: Iterable[Record | DeadLetter], size: int, max_bytes: int
) -> Iterator[tuple[list[Record], list[DeadLetter]]]:
    """Batches of at most ``size`` pages whose content holds at most ``max_bytes`` characters
    (or one larger page), with the dead letters met on the way."""
    pages: list[Record] = []
    dead: list[DeadLetter] = []
    held = 0
    for item in items:
        if isinstance(item, DeadLetter):
            dead.append(item)
        else:
            if pages and held + _content(item) > max_bytes:
                yield pages, dead
                pages, dead, held = [], [], 0
            pages.append(item)
            held += _content(item)
        if len(pages) >= size or len(dead) >= size:
            yield pages, dead
            pages, dead, held = [], [], 0
    if pages or dead:
        yield pages, dead


def _all_records(
    inputs: Iterable[str], max_bytes: int, items: bool, lines: bool
) -> Iterator[Record | DeadLetter]:
    """Every input's records: item records, and with ``lines`` JSON Lines pages, as their
    lines, parsed where they are prepared (a bad one is a dead letter with its line)."""
    for name in inputs:
        if items or (lines and not is_warc(name)):
            yield from iter_numbered_lines(name, max_bytes)
        else:
            yield from iter_records(name, max_bytes)


def _until_stopped(
    records: Iterator[Record | DeadLetter], signals: StopSignals
) -> Iterator[Record | DeadLetter]:
    """The records until a stop is asked for: the input ends there, even while a read waits
    on a pipe, and what was read before it is stored."""
    while signals.requested is None:
        try:
            with signals.interruptible():
                record = next(records)
        except (StopIteration, Stopped):
            return
        yield record


class _ParseBalance:
    """Where a batch of JSON Lines pages is parsed when a child process prepares them: in the
    child, unless the child took longer over the last batch than this process over its
    detection (the SimHash mode's detection is light, min-hash's is not: each side's load
    depends on the settings and the pages, so it is measured, batch by batch)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        #: the seconds of the last batch: the child's, this process's, and this process's
        #: wait for the child (not work)
        self.child = self.parent = self.waited = 0.0

    def here(self) -> bool:
        return self.enabled and self.child > self.parent


def _parsed_here(
    batch: list[Record], dead: list[DeadLetter], max_bytes: int
) -> tuple[list[Record], list[DeadLetter]]:
    pages: list[Record] = []
    for record in batch:
        if isinstance(record, NumberedLine):
            try:
                pages.append(page_from_json(record.raw, max_bytes))
            except BadRecordError as error:
                dead.append(record.refused(error.reason, str(error)))
        else:
            pages.append(record)
    return pages, dead


def run(
    state: State,
    inputs: Iterable[str],
    events: IO[str] | None = None,
    dead_letters: IO[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    observers: Sequence[RunObserver] = (),
    prepare: PrepareMode = "thread",
    listeners: Sequence[BatchListener] = (),
    signals: StopSignals | None = None,
    history_every: float = DEFAULT_HISTORY_EVERY,
    items: ItemSchema | None = None,
    retention: Retention | None = None,
) -> RunSummary:
    """Process every input into the state; write events and dead letters as JSON Lines.

    ``prepare``: where pages are prepared while the batch before them is detected, "process"
    (a child process: a second core) or "thread" (this process; ``prepare_work`` says why a
    thread gains little). ``observers`` (``progress.py``) see the summary after every batch and
    at the end; ``listeners`` (the service's metrics and dashboard) each batch and dead letter.
    ``signals``: a stop they ask for ends the input; what was read before it is stored, and
    the summary says so (``RunSummary.stopped_by``). ``history_every``: seconds between two
    samples of the state's history (``detection.history``). ``items``: item mode, the inputs
    JSON Lines of records of this schema (``detection.items``). ``retention``: a window behind
    the latest fetched_at applied; the urls last fetched before it are removed as deletions,
    by sweeps between batches (a stop waits for a sweep under way; one a crash cut short is
    finished first)."""
    inputs = list(inputs)
    if retention is not None:
        check_retention(state.settings, items is not None)
    stopping = signals is not None

    def should_stop() -> bool:
        return signals is not None and signals.requested is not None

    preparing = executor(prepare)
    try:
        if items is not None:
            with contextlib.suppress(AbandonedError):  # stopped: the loop below reads nothing
                child = preparing if prepare == "process" else None
                fit_ahead(state, items, inputs, max_record_bytes, should_stop, child)
        stage = (
            Detector(state).stage
            if items is None
            else ItemDetector(state, items, should_stop if stopping else None).stage
        )
    except BaseException:
        preparing.shutdown(cancel_futures=True)
        raise
    sweeper = None
    if items is None and state.settings.versions == "latest":
        sweeper = Sweeper(state) if retention is None else Sweeper(state, retention.chunk)
    history = HistoryRecorder(history_every)
    balance = _ParseBalance(items is None and prepare == "process")
    summary = RunSummary()
    started = time.monotonic()

    def opened(
        pages: Future[Prepared], batch: list[Record], dead: list[DeadLetter]
    ) -> tuple[list[PreparedDoc] | list[PreparedItem], float]:
        """A batch's prepared documents or items, decoded, and the seconds they took; a
        record refused while preparing joins the batch's dead letters."""
        waiting_since = time.perf_counter()
        prepared, refused, preparing = pages.result()
        balance.child, balance.waited = preparing, time.perf_counter() - waiting_since
        decoding = time.perf_counter()
        lines = cast(list[NumberedLine], batch)  # only lines are parsed, and refused, there
        dead.extend(lines[index].refused(*why) for index, *why in refused)
        if items is not None:
            assert isinstance(prepared, bytes)
            return decode_items(prepared), preparing + time.perf_counter() - decoding
        if isinstance(prepared, bytes):
            prepared = decode_batch(prepared, state.settings)
        return prepared, preparing + time.perf_counter() - decoding

    def detect(
        prepared: list[PreparedDoc] | list[PreparedItem], preparing: float, dead: int
    ) -> tuple[BatchResult, dict[Stage, float]]:
        """One batch into the state, with its dead letters' count and, every few seconds, a
        sample of the state's history, in one write."""
        view, result = stage(prepared)  # type: ignore[arg-type]
        if sweeper is not None:  # pages whose latest version counts: event time moves
            view.event_time.see(latest_fetch(cast(list[PreparedDoc], prepared)))
        if retention is not None:
            begin_sweep_if_due(view, retention)
        view.counters.add("dead_letters", dead)
        history.record(view, result)
        committing = time.perf_counter()
        view.commit()
        seconds: dict[Stage, float] = {
            "prepare": preparing,
            **result.stage_seconds,
            "commit": time.perf_counter() - committing,
        }
        return result, seconds

    def finish(pages: Future[Prepared] | None, batch: list[Record], dead: list[DeadLetter]) -> None:
        prepared = None if pages is None else opened(pages, batch, dead)
        for letter in dead:
            summary.dead_letters[letter.reason] += 1
            if dead_letters is not None:
                dead_letters.write(json.dumps(letter.to_json()) + "\n")
            for listener in listeners:
                listener.dead_letter(letter.reason)
        if prepared is None:
            view = state.view()
            view.counters.add("dead_letters", len(dead))
            view.commit()
        else:
            result, seconds = detect(*prepared, len(dead))
            for listener in listeners:
                listener.batch_done(result, seconds)
            summary.add(result)
            if events is not None:
                write_events(events, result.events)
            sweep()
        summary.records += len(dead)
        for observer in observers:
            observer.update(summary)

    def sweep() -> None:
        """The sweep due, a chunk a transaction, to its end (a stop waits for it: nothing
        may be applied while one is due)."""
        while sweeper is not None and (chunk := sweeper.stage()) is not None:
            sweeper.commit(chunk)
            summary.add(chunk.result)
            if events is not None:
                write_events(events, chunk.result.events)

    prepare_batch: Callable[[list[Any], str], Prepared]
    context = state.settings.to_json() if items is None else items.to_json()
    if items is not None:
        prepare_batch = partial(prepare_items_timed, max_bytes=max_record_bytes)
    elif prepare == "process":
        prepare_batch = partial(prepare_encoded_timed, max_bytes=max_record_bytes)
    else:
        prepare_batch = prepare_pages_timed
    # The next batch is prepared (parsed, tokenised, sketched) while this one is ingested;
    # batches are still ingested one at a time, in input order.
    records = _all_records(inputs, max_record_bytes, items is not None, prepare == "process")
    if signals is not None:
        records = _until_stopped(records, signals)
    try:
        with preparing:
            sweep()  # one a run cut short left due
            waiting: tuple[Future[Prepared] | None, list[Record], list[DeadLetter]] | None = None
            since = time.perf_counter()  # this process's work a batch: reading, parsing, detecting
            for lines, dead in _batches(records, batch_size, batch_bytes):
                batch, dead = (
                    _parsed_here(lines, dead, max_record_bytes) if balance.here() else (lines, dead)
                )
                work: list[Any] = [r.raw if isinstance(r, NumberedLine) else r for r in batch]
                ahead = preparing.submit(prepare_batch, work, context) if batch else None
                balance.waited = 0.0
                if waiting is not None:
                    finish(*waiting)
                waiting = (ahead, batch, dead)
                now = time.perf_counter()
                balance.parent, since = now - since - balance.waited, now
            if waiting is not None:
                finish(*waiting)
        if items is not None and not should_stop():
            refitted = fit_at_end(state, items, should_stop)
            if refitted is not None:
                summary.add(refitted)
                if events is not None:
                    write_events(events, refitted.events)
    except AbandonedError:
        pass  # a stop cut a batch short: it is dropped, and the next run does it again
    if signals is not None and signals.requested is not None:
        summary.stopped_by = signal.Signals(signals.requested).name
    # the input is done: the state's buffered writes go to disk while the caller goes on
    state.store.flush_in_background()
    if events is not None:
        events.flush()
    if dead_letters is not None:
        dead_letters.flush()
    summary.seconds = time.monotonic() - started
    for observer in observers:
        observer.finish(summary)
    return summary
