"""Preparing pages away from the detector: in a child process or a thread beside it.

Preparing (parse, canonical form, shingles, sketch) is most of a page's cost and keeps no
state, so a worker, and ``neardup run``, do it in a process of their own by default: the
detector's interpreter keeps its GIL, and the two use two cores. A thread does not: the HTML
parser releases the GIL for every page and then waits for it while the detector runs Python,
up to a switch interval (5 ms) each time (``python -m bench.gil_convoy`` measures it), so the
two threads mostly take turns.
``executor("thread")`` keeps preparing in the process, for a machine with one core or for a
single-process measurement.

Arguments and results cross the process boundary, so they are plain data: the settings as
JSON, refusals as (index, reason, message) instead of exceptions, JSON Lines records as
their lines (parsed in the child: the parent's interpreter is the detector's), pages from
WARC files as frozen dataclasses (pickled), and prepared documents in the binary form of
the Kafka mode's prepared messages (``neardup.core.prepared_codec``): pickled, a batch's
documents and their numpy arrays cost both sides several times as much, and the parent
spends that time holding the interpreter lock its detector needs (docs/benchmarks.md, "What
today's defaults are measured against").
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from functools import cache
from typing import Literal, TypeVar, get_args

import msgspec
from neardup.core import (
    BadRecordError,
    Page,
    PreparedDoc,
    Preparer,
    Settings,
    page_from_json,
    record_from_json,
)
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.prepared_codec import encode_batch
from neardup.core.prepared_items import item_or_tombstone

from .lifetime import prepare_child

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "PREPARE_MODES",
    "PrepareMode",
    "Prepared",
    "Refusal",
    "decode_items",
    "executor",
    "item_preparer_for",
    "prepare_encoded_timed",
    "prepare_items_timed",
    "prepare_pages",
    "prepare_pages_timed",
    "preparer_for",
]

#: the content a batch of pages holds at most, in characters (bytes of ASCII text), unless
#: one page alone holds more: preparing a page takes many times its size in memory for a
#: moment, so this bounds a run's memory whatever the pages' sizes (docs/limits.md)
DEFAULT_BATCH_BYTES = 16 << 20

T = TypeVar("T")

#: where pages are prepared: a child process (a second core) or a thread of this process
PrepareMode = Literal["process", "thread"]
PREPARE_MODES: tuple[PrepareMode, ...] = get_args(PrepareMode)


@cache
def preparer_for(settings_json: str) -> Preparer:
    """One Preparer per settings JSON, kept: its lookup tables stay warm between batches."""
    return Preparer(Settings.from_json(settings_json))


def executor(mode: str) -> Executor:
    """Where preparation runs: a child process (spawned, not forked: the worker has
    threads), which ends with this process however it ends (``lifetime.py``), or a thread
    of this process."""
    if mode == "process":
        return ProcessPoolExecutor(
            1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=prepare_child,
            initargs=(os.getpid(),),
        )
    if mode == "thread":
        return ThreadPoolExecutor(1, thread_name_prefix="neardup-prepare")
    raise ValueError(f"prepare mode {mode!r}: use one of {', '.join(PREPARE_MODES)}")


#: a record refused while preparing: (its index in the batch, the reason, the message)
Refusal = tuple[int, str, str]
#: a batch prepared: its documents (a list, or encoded for a trip between processes), the
#: records refused on the way, and the seconds it took where it ran
Prepared = tuple[list[PreparedDoc] | bytes, list[Refusal], float]


def prepare_pages(pages: list[Page], settings_json: str) -> list[PreparedDoc]:
    """``Preparer.prepare`` with the settings as JSON: what an executor of either mode runs."""
    return preparer_for(settings_json).prepare(pages)


def prepare_pages_timed(pages: list[Page], settings_json: str) -> Prepared:
    """``prepare_pages`` and the seconds it took, measured where it ran (pages parsed by the
    caller: nothing is refused here)."""
    started = time.perf_counter()
    return prepare_pages(pages, settings_json), [], time.perf_counter() - started


def _parsed(
    records: list[Page | bytes], max_bytes: int, parse: Callable[[bytes, int], T]
) -> tuple[list[T | Page], list[Refusal]]:
    """Each record parsed if it is a JSON Lines line (a Page, from a WARC file, is already),
    and the lines refused."""
    parsed: list[T | Page] = []
    refused: list[Refusal] = []
    for index, record in enumerate(records):
        if isinstance(record, Page):
            parsed.append(record)
            continue
        try:
            parsed.append(parse(record, max_bytes))
        except BadRecordError as error:
            refused.append((index, error.reason, str(error)))
    return parsed, refused


def prepare_encoded_timed(
    records: list[Page | bytes], settings_json: str, max_bytes: int
) -> Prepared:
    """For a child process: JSON Lines lines parsed here (the parent's interpreter is the
    detector's) and the pages prepared, as one prepared batch
    (``neardup.core.prepared_codec``) without the pages' content."""
    started = time.perf_counter()
    preparer = preparer_for(settings_json)
    pages, refused = _parsed(records, max_bytes, page_from_json)
    encoded = encode_batch(preparer.prepare(pages), preparer.settings)
    return encoded, refused, time.perf_counter() - started


_ITEM_DECODER = msgspec.msgpack.Decoder(list[PreparedItem])


@cache
def item_preparer_for(schema_json: str) -> ItemPreparer:
    """One preparer per schema, kept: its normaliser and key plan are made once."""
    return ItemPreparer(ItemSchema.from_json(schema_json))


def _item_record(preparer: ItemPreparer) -> Callable[[bytes, int], PreparedItem]:
    return lambda line, max_bytes: item_or_tombstone(preparer, record_from_json(line, max_bytes))


def prepare_items_timed(records: list[Page | bytes], schema_json: str, max_bytes: int) -> Prepared:
    """Item records (JSON Lines) prepared, encoded (msgpack: a child process sends them back
    far faster than a pickle of the items), with the lines refused and the seconds it took."""
    started = time.perf_counter()
    items, refused = _parsed(records, max_bytes, _item_record(item_preparer_for(schema_json)))
    encoded = msgspec.msgpack.encode(items)
    return encoded, refused, time.perf_counter() - started


def decode_items(data: bytes) -> list[PreparedItem]:
    """The items ``prepare_items_timed`` encoded."""
    return _ITEM_DECODER.decode(data)
