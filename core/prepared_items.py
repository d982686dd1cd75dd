"""Batches of prepared items, in binary: item mode's prepared messages in Kafka mode; and
tombstones, the records that remove an item.

The prepare agent sends one message per batch of records; the detect agent decodes it. A
message carries the items as prepared (their values) and the schema that made them, so that
a detector refuses batches prepared with another schema instead of mixing their values.

    message = MAGIC, u32 schema length, schema JSON, msgpack list of items
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import msgspec

from .exceptions import BadRecordError
from .items.prepare import ItemPreparer, PreparedItem
from .items.schema import ItemSchema

__all__ = [
    "ITEM_MAGIC",
    "decode_items",
    "encode_items",
    "is_tombstone",
    "item_or_tombstone",
    "item_overhead",
    "tombstone",
]

ITEM_MAGIC = b"NDI2"
_U32 = struct.Struct("<I")
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(list[PreparedItem])


def encode_items(items: Sequence[PreparedItem], schema_json: bytes) -> bytes:
    """One message for ``items`` (prepared with the schema ``schema_json``)."""
    return b"".join(
        [ITEM_MAGIC, _U32.pack(len(schema_json)), schema_json, _ENCODER.encode(list(items))]
    )


def item_overhead(schema_json: bytes) -> int:
    """The bytes of a message of no items."""
    return len(encode_items([], schema_json))


def decode_items(raw: bytes, schema: ItemSchema) -> list[PreparedItem]:
    """The items of a message prepared with ``schema``; a message of another program or
    another schema is a ``BadRecordError``."""
    if raw[: len(ITEM_MAGIC)] != ITEM_MAGIC:
        raise BadRecordError(
            "bad_prepared_batch",
            f"the message starts with {raw[:8]!r}, not {ITEM_MAGIC!r}: not a batch of items "
            "(a worker without --schema prepared pages?)",
        )
    try:
        (length,) = _U32.unpack_from(raw, len(ITEM_MAGIC))
        start = len(ITEM_MAGIC) + _U32.size
        theirs = ItemSchema.from_json(raw[start : start + length].decode())
        items = _DECODER.decode(raw[start + length :])
    except (struct.error, ValueError, msgspec.DecodeError) as error:
        raise BadRecordError("bad_prepared_batch", f"the batch cannot be read: {error}") from error
    differences = schema.differences(theirs)
    if differences:
        raise BadRecordError(
            "schema_mismatch",
            "the batch was prepared with another item schema ("
            + "; ".join(differences)
            + "): every worker of a deployment must use the same --schema",
        )
    return items


def tombstone(item_id: str) -> PreparedItem:
    """What removes an item: a prepared item of its id with no values (a record always has
    one value, or None, per field of its schema)."""
    return PreparedItem(item_id, None, ())


def is_tombstone(item: PreparedItem) -> bool:
    return not item.values


def item_or_tombstone(preparer: ItemPreparer, record: Any) -> PreparedItem:
    """The item of a record, or a tombstone for ``{"<id field>": ..., "deleted": true}``."""
    if isinstance(record, dict) and record.get("deleted") is True:
        item_id = record.get(preparer.schema.id_field)
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or not str(item_id):
            raise BadRecordError(
                "missing_id", f"a deletion needs the item's {preparer.schema.id_field!r}"
            )
        return tombstone(str(item_id).strip())
    return preparer.prepare(record)
