"""The embedded mode: input files in, events out, on one state directory, without Kafka.

Pages are prepared in a thread or in a child process (``neardup run``'s default) while the
batch before them is detected.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import IO, Any

from neardup.core import DEFAULT_MAX_RECORD_BYTES, Page, PreparedDoc, record_from_json
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.prepared_codec import decode_batch
from neardup.core.prepared_items import item_or_tombstone
from neardup.state import State

from ..detection import BatchListener, BatchResult, Detector, Stage, encode_event
from ..detection.history import DEFAULT_HISTORY_EVERY, HistoryRecorder
from ..detection.items import ItemDetector
from .inputs import DeadLetter, iter_lines, iter_records
from .prepare_work import (
    DEFAULT_BATCH_BYTES,
    PrepareMode,
    executor,
    prepare_encoded_timed,
    prepare_pages_timed,
)
from .progress import RunObserver
from .run_summary import RunSummary
from .stopping import Stopped, StopSignals

__all__ = ["DEFAULT_BATCH_SIZE", "run"]

#: pages prepared together and written in one transaction
DEFAULT_BATCH_SIZE = 256

#: a batch's prepared documents (from a child process, in binary: ``prepare_work``), or
#: items, and the seconds preparing them took
Prepared = tuple[list[PreparedDoc] | bytes | list[PreparedItem], float]


def _content(record: Page | PreparedItem) -> int:
    """The content characters of a page (what preparing it costs); an item is prepared as
    it is read."""
    return len(record.content) if isinstance(record, Page) else 0


def _batches(
    items: Iterable[Page | PreparedItem | DeadLetter], size: int, max_bytes: int
) -> Iterator[tuple[list[Page | PreparedItem], list[DeadLetter]]]:
    """Batches of at most ``size`` pages whose content holds at most ``max_bytes`` characters
    (or one larger page), with the dead letters met on the way."""
    pages: list[Page | PreparedItem] = []
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
    inputs: Iterable[str], max_bytes: int, items: ItemPreparer | None
) -> Iterator[Page | PreparedItem | DeadLetter]:
    for name in inputs:
        if items is None:
            yield from iter_records(name, max_bytes)
        else:  # items are prepared as they are read: a bad one is a dead letter with its line
            yield from iter_lines(
                name,
                lambda line, most: item_or_tombstone(items, record_from_json(line, most)),
                max_bytes,
            )


def _items_as_they_are(items: list[PreparedItem], settings: str) -> Prepared:
    return items, 0.0


def _until_stopped(
    records: Iterator[Page | PreparedItem | DeadLetter], signals: StopSignals
) -> Iterator[Page | PreparedItem | DeadLetter]:
    """The records until a stop is asked for: the input ends there, even while a read waits
    on a pipe, and what was read before it is stored."""
    while signals.requested is None:
        try:
            with signals.interruptible():
                record = next(records)
        except (StopIteration, Stopped):
            return
        yield record


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
    items: ItemPreparer | None = None,
) -> RunSummary:
    """Process every input into the state; write events and dead letters as JSON Lines.

    ``prepare``: where pages are prepared while the batch before them is detected, "process"
    (a child process: a second core) or "thread" (this process; ``prepare_work`` says why a
    thread gains little). ``observers`` (``progress.py``) see the summary after every batch and
    at the end; ``listeners`` (the service's metrics and dashboard) each batch and dead letter.
    ``signals``: a stop they ask for ends the input; what was read before it is stored, and
    the summary says so (``RunSummary.stopped_by``). ``history_every``: seconds between two
    samples of the state's history (``detection.history``). ``items``: item mode, the inputs
    JSON Lines of records of its schema (``detection.items``)."""
    stage = Detector(state).stage if items is None else ItemDetector(state, items.schema).stage
    history = HistoryRecorder(history_every)
    summary = RunSummary()
    started = time.monotonic()

    def detect(pages: Future[Prepared], dead: int) -> tuple[BatchResult, dict[Stage, float]]:
        """One batch into the state, with its dead letters' count and, every few seconds, a
        sample of the state's history, in one write."""
        prepared, preparing = pages.result()
        if isinstance(prepared, bytes):
            decoding = time.perf_counter()
            prepared = decode_batch(prepared, state.settings)
            preparing += time.perf_counter() - decoding
        view, result = stage(prepared)  # type: ignore[arg-type]
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

    def finish(pages: Future[Prepared] | None, dead: list[DeadLetter]) -> None:
        for letter in dead:
            summary.dead_letters[letter.reason] += 1
            if dead_letters is not None:
                dead_letters.write(json.dumps(letter.to_json()) + "\n")
            for listener in listeners:
                listener.dead_letter(letter.reason)
        if pages is None:
            view = state.view()
            view.counters.add("dead_letters", len(dead))
            view.commit()
        else:
            result, seconds = detect(pages, len(dead))
            for listener in listeners:
                listener.batch_done(result, seconds)
            summary.add(result)
            if events is not None:
                for event in result.events:
                    events.write(encode_event(event).decode() + "\n")
        summary.records += len(dead)
        for observer in observers:
            observer.update(summary)

    settings = state.settings.to_json()
    prepare_batch: Callable[[list[Any], str], Prepared] = (
        _items_as_they_are
        if items is not None
        else prepare_encoded_timed
        if prepare == "process"
        else prepare_pages_timed
    )
    if items is not None:
        prepare = "thread"  # nothing to prepare apart
    # The next batch is prepared (parsed, tokenised, sketched) while this one is ingested;
    # batches are still ingested one at a time, in input order.
    records = _all_records(inputs, max_record_bytes, items)
    if signals is not None:
        records = _until_stopped(records, signals)
    with executor(prepare) as preparing:
        waiting: tuple[Future[Prepared] | None, list[DeadLetter]] | None = None
        for pages, dead in _batches(records, batch_size, batch_bytes):
            ahead = preparing.submit(prepare_batch, pages, settings) if pages else None
            if waiting is not None:
                finish(*waiting)
            waiting = (ahead, dead)
        if waiting is not None:
            finish(*waiting)
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
