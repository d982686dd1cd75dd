"""The prepare agent's work: page messages (JSON) in, prepared batches (binary) out."""

from __future__ import annotations

from collections.abc import Iterator

from neardup.core import (
    BadRecordError,
    Page,
    PreparedDoc,
    Preparer,
    page_from_json,
    record_from_json,
)
from neardup.core.items.prepare import PreparedItem
from neardup.core.prepared_codec import encode_document, frame
from neardup.core.prepared_items import encode_items, item_or_tombstone, item_overhead

from ..running.prepare_work import DEFAULT_BATCH_BYTES, item_preparer_for, preparer_for

__all__ = ["MESSAGE_BYTES", "Refusal", "prepare_item_messages", "prepare_messages"]

#: prepared batches stay well under Kafka's default 1 MB message limit
MESSAGE_BYTES = 512 * 1024

#: a page message that cannot be prepared: its index in the batch, reason code, message
Refusal = tuple[int, str, str]


def prepare_messages(
    values: list[bytes],
    settings_json: str,
    max_record_bytes: int,
    limit: int = MESSAGE_BYTES,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> tuple[list[bytes], list[Refusal]]:
    """Page messages (JSON) to prepared batches of at most ``limit`` bytes, in order, and the
    refusals (bad JSON, a bad record, a document too large to send), by index. Pages are
    prepared a part of at most ``batch_bytes`` content characters at a time."""
    preparer = preparer_for(settings_json)
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
    for index, doc in zip(positions, _prepared(preparer, pages, batch_bytes), strict=True):
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


def _prepared(preparer: Preparer, pages: list[Page], batch_bytes: int) -> Iterator[PreparedDoc]:
    """The pages prepared in parts of at most ``batch_bytes`` content characters (or one
    larger page): preparing takes many times a part's size in memory for a moment."""
    part: list[Page] = []
    held = 0
    for page in pages:
        if part and held + len(page.content) > batch_bytes:
            yield from preparer.prepare(part)
            part, held = [], 0
        part.append(page)
        held += len(page.content)
    if part:
        yield from preparer.prepare(part)


def prepare_item_messages(
    values: list[bytes], schema_json: str, max_record_bytes: int, limit: int = MESSAGE_BYTES
) -> tuple[list[bytes], list[Refusal]]:
    """Item mode's ``prepare_messages``: records (JSON) to prepared batches of items of at
    most ``limit`` bytes, in order, and the refusals by index."""
    preparer = item_preparer_for(schema_json)
    schema = schema_json.encode()
    overhead = item_overhead(schema)
    messages: list[bytes] = []
    group: list[PreparedItem] = []
    size = 0
    refused: list[Refusal] = []
    for index, value in enumerate(values):
        try:
            item = item_or_tombstone(preparer, record_from_json(value, max_record_bytes))
        except BadRecordError as error:
            refused.append((index, error.reason, str(error)))
            continue
        one = len(encode_items([item], schema)) - overhead
        if overhead + one > limit:
            refused.append(
                (index, "too_large", f"the prepared item is over the {limit}-byte message limit")
            )
            continue
        if group and overhead + size + one > limit:
            messages.append(encode_items(group, schema))
            group, size = [], 0
        group.append(item)
        size += one
    if group:
        messages.append(encode_items(group, schema))
    return messages, refused
