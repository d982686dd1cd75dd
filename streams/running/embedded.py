"""The embedded mode: input files in, events out, on one state directory, without Kafka.

Pages, or item records, are prepared in a thread or in a child process (``neardup run``'s
default) while the batch before them is detected.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from functools import partial
from typing import IO, Any, cast

from neardup.core import DEFAULT_MAX_RECORD_BYTES, Page, PreparedDoc
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.prepared_codec import decode_batch
from neardup.state import State

from ..detection import BatchListener, BatchResult, Detector, Stage, encode_event
from ..detection.history import DEFAULT_HISTORY_EVERY, HistoryRecorder
from ..detection.items import ItemDetector
from .inputs import DeadLetter, NumberedLine, iter_numbered_lines, iter_records
from .prepare_work import (
    DEFAULT_BATCH_BYTES,
    PrepareMode,
    decode_item_batch,
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

#: a batch's prepared documents (from a child process, in binary: ``prepare_work``), or
#: items (an encoded ``ItemBatch``), and the seconds preparing them took
Prepared = tuple[list[PreparedDoc] | bytes, float]
#: what a batch is made of: pages, or the lines of item records
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
    inputs: Iterable[str], max_bytes: int, items: bool
) -> Iterator[Record | DeadLetter]:
    for name in inputs:
        if items:  # parsed where they are prepared: a bad one is a dead letter with its line
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
) -> RunSummary:
    """Process every input into the state; write events and dead letters as JSON Lines.

    ``prepare``: where pages are prepared while the batch before them is detected, "process"
    (a child process: a second core) or "thread" (this process; ``prepare_work`` says why a
    thread gains little). ``observers`` (``progress.py``) see the summary after every batch and
    at the end; ``listeners`` (the service's metrics and dashboard) each batch and dead letter.
    ``signals``: a stop they ask for ends the input; what was read before it is stored, and
    the summary says so (``RunSummary.stopped_by``). ``history_every``: seconds between two
    samples of the state's history (``detection.history``). ``items``: item mode, the inputs
    JSON Lines of records of this schema (``detection.items``)."""
    stage = Detector(state).stage if items is None else ItemDetector(state, items).stage
    history = HistoryRecorder(history_every)
    summary = RunSummary()
    started = time.monotonic()

    def opened(
        pages: Future[Prepared], batch: list[Record], dead: list[DeadLetter]
    ) -> tuple[list[PreparedDoc] | list[PreparedItem], float]:
        """A batch's prepared documents or items, decoded, and the seconds they took; an
        item record refused while preparing joins the batch's dead letters."""
        prepared, preparing = pages.result()
        decoding = time.perf_counter()
        if items is not None:
            assert isinstance(prepared, bytes)
            decoded = decode_item_batch(prepared)
            lines = cast(list[NumberedLine], batch)
            dead.extend(lines[index].refused(*why) for index, *why in decoded.refused)
            return decoded.items, preparing + time.perf_counter() - decoding
        if isinstance(prepared, bytes):
            prepared = decode_batch(prepared, state.settings)
        return prepared, preparing + time.perf_counter() - decoding

    def detect(
        prepared: list[PreparedDoc] | list[PreparedItem], preparing: float, dead: int
    ) -> tuple[BatchResult, dict[Stage, float]]:
        """One batch into the state, with its dead letters' count and, every few seconds, a
        sample of the state's history, in one write."""
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
                for event in result.events:
                    events.write(encode_event(event).decode() + "\n")
        summary.records += len(dead)
        for observer in observers:
            observer.update(summary)

    if items is not None:
        context = items.to_json()
        prepare_batch: Callable[[list[Any], str], Prepared] = partial(
            prepare_items_timed, max_bytes=max_record_bytes
        )
    else:
        context = state.settings.to_json()
        prepare_batch = prepare_encoded_timed if prepare == "process" else prepare_pages_timed
    # The next batch is prepared (parsed, tokenised, sketched) while this one is ingested;
    # batches are still ingested one at a time, in input order.
    records = _all_records(inputs, max_record_bytes, items is not None)
    if signals is not None:
        records = _until_stopped(records, signals)
    with executor(prepare) as preparing:
        waiting: tuple[Future[Prepared] | None, list[Record], list[DeadLetter]] | None = None
        for batch, dead in _batches(records, batch_size, batch_bytes):
            work = [r.raw if isinstance(r, NumberedLine) else r for r in batch]
            ahead = preparing.submit(prepare_batch, work, context) if batch else None
            if waiting is not None:
                finish(*waiting)
            waiting = (ahead, batch, dead)
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
