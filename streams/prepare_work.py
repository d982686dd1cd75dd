"""Preparing pages away from the detector: the prepare agent's work (page messages in,
prepared batches out), and the embedded run's (pages in, prepared documents out).

Preparing (parse, canonical form, shingles, sketch) is most of a page's cost and keeps no
state, so a worker, and ``neardup run``, do it in a process of their own by default: the
detector's interpreter keeps its GIL, and the two use two cores. A thread does not: the HTML
parser releases the GIL for every page and then waits for it while the detector runs Python,
up to a switch interval (5 ms) each time (``python -m bench.gil_convoy``: 31 us per page
alone, 10 ms beside a busy thread), so the two threads mostly take turns.
``executor("thread")`` keeps preparing in the process, for a machine with one core or for a
single-process measurement.

Arguments and results cross the process boundary, so they are plain data: the settings as
JSON, refusals as (index, reason, message) instead of exceptions, and pages and prepared
documents as frozen dataclasses of strings, numbers and numpy arrays (pickled).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from functools import cache

from neardup.core import BadRecordError, Page, PreparedDoc, Preparer, Settings, page_from_json

from .prepared_codec import encode_document, frame

__all__ = [
    "MESSAGE_BYTES",
    "PREPARE_MODES",
    "Refusal",
    "executor",
    "prepare_messages",
    "prepare_pages",
]

#: prepared batches stay well under Kafka's default 1 MB message limit
MESSAGE_BYTES = 512 * 1024
PREPARE_MODES = ("process", "thread")

#: a page message that cannot be prepared: its index in the batch, reason code, message
Refusal = tuple[int, str, str]


@cache
def _preparer(settings_json: str) -> Preparer:
    return Preparer(Settings.from_json(settings_json))


def executor(mode: str) -> Executor:
    """Where ``prepare_messages`` runs: a child process (spawned, not forked: the worker has
    threads) or a thread of this process."""
    if mode == "process":
        return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    if mode == "thread":
        return ThreadPoolExecutor(1, thread_name_prefix="neardup-prepare")
    raise ValueError(f"prepare mode {mode!r}: use one of {', '.join(PREPARE_MODES)}")


def prepare_pages(pages: list[Page], settings_json: str) -> list[PreparedDoc]:
    """``Preparer.prepare`` with the settings as JSON: what an executor of either mode runs."""
    return _preparer(settings_json).prepare(pages)


def prepare_messages(
    values: list[bytes], settings_json: str, max_record_bytes: int, limit: int = MESSAGE_BYTES
) -> tuple[list[bytes], list[Refusal]]:
    """Page messages (JSON) to prepared batches of at most ``limit`` bytes, in order, and the
    refusals (bad JSON, a bad record, a document too large to send), by index."""
    preparer = _preparer(settings_json)
    pages: list[Page] = []
    positions: list[int] = []
    refused: list[Refusal] = []
    for index, value in enumerate(values):
        try:
            pages.append(page_from_json(value, max_record_bytes))
            positions.append(index)
        except BadRecordError as error:
            refused.append((index, error.reason, str(error)))
    prepared_with = preparer.settings.to_json().encode()
    # a message of one document is this much more than the document's own part
    overhead = len(frame([], prepared_with))
    messages: list[bytes] = []
    group: list[bytes] = []
    size = 0
    for index, doc in zip(positions, preparer.prepare(pages), strict=True):
        encoded = encode_document(doc)
        one = overhead + len(encoded)
        if one > limit:
            refused.append(
                (
                    index,
                    "too_large",
                    f"the prepared document is {one} bytes, over the {limit}-byte message "
                    "limit (its url or content type is that long)",
                )
            )
            continue
        if group and size + one > limit:
            messages.append(frame(group, prepared_with))
            group, size = [], 0
        group.append(encoded)
        size += one
    if group:
        messages.append(frame(group, prepared_with))
    return messages, sorted(refused)
