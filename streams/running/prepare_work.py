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
JSON, refusals as (index, reason, message) instead of exceptions, pages as frozen
dataclasses (pickled), and prepared documents in the binary form of the Kafka mode's
prepared messages (``neardup.core.prepared_codec``): pickled, a batch's documents and their
numpy arrays cost both sides several times as much, and the parent spends that time
holding the interpreter lock its detector needs (docs/benchmarks.md, "What today's defaults
are measured against").
"""

from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from functools import cache
from typing import Literal, get_args

import msgspec
from neardup.core import BadRecordError, Page, PreparedDoc, Preparer, Settings, record_from_json
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.prepared_codec import encode_batch
from neardup.core.prepared_items import item_or_tombstone

from .lifetime import prepare_child

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "PREPARE_MODES",
    "ItemBatch",
    "PrepareMode",
    "decode_item_batch",
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


def prepare_pages(pages: list[Page], settings_json: str) -> list[PreparedDoc]:
    """``Preparer.prepare`` with the settings as JSON: what an executor of either mode runs."""
    return preparer_for(settings_json).prepare(pages)


def prepare_pages_timed(pages: list[Page], settings_json: str) -> tuple[list[PreparedDoc], float]:
    """``prepare_pages`` and the seconds it took, measured where it ran."""
    started = time.perf_counter()
    return prepare_pages(pages, settings_json), time.perf_counter() - started


def prepare_encoded_timed(pages: list[Page], settings_json: str) -> tuple[bytes, float]:
    """``prepare_pages_timed`` for a child process: the documents as one prepared batch
    (``neardup.core.prepared_codec``), without the pages' content."""
    started = time.perf_counter()
    preparer = preparer_for(settings_json)
    encoded = encode_batch(preparer.prepare(pages), preparer.settings)
    return encoded, time.perf_counter() - started


class ItemBatch(msgspec.Struct, frozen=True, array_like=True):
    """A batch of item records prepared: the items, and the records refused as
    (index in the batch, reason, message)."""

    items: list[PreparedItem]
    refused: list[tuple[int, str, str]]


_ITEM_BATCH_DECODER = msgspec.msgpack.Decoder(ItemBatch)


@cache
def item_preparer_for(schema_json: str) -> ItemPreparer:
    """One preparer per schema, kept: its normaliser and key plan are made once."""
    return ItemPreparer(ItemSchema.from_json(schema_json))


def prepare_items_timed(
    lines: list[bytes], schema_json: str, max_bytes: int
) -> tuple[bytes, float]:
    """Item records (JSON Lines) prepared, as an encoded ``ItemBatch`` (msgpack: a child
    process sends it back far faster than a pickle of the items), and the seconds it took."""
    started = time.perf_counter()
    preparer = item_preparer_for(schema_json)
    items: list[PreparedItem] = []
    refused: list[tuple[int, str, str]] = []
    for index, line in enumerate(lines):
        try:
            items.append(item_or_tombstone(preparer, record_from_json(line, max_bytes)))
        except BadRecordError as error:
            refused.append((index, error.reason, str(error)))
    encoded = msgspec.msgpack.encode(ItemBatch(items, refused))
    return encoded, time.perf_counter() - started


def decode_item_batch(data: bytes) -> ItemBatch:
    return _ITEM_BATCH_DECODER.decode(data)
