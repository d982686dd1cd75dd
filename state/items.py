"""Item mode's records: each item's prepared form by its id (``neardup.core.items``), and
the schema its state was built with.

An item's id (the schema's id field) is a string; it is stored under a 64-bit hash of it,
the id the clusters, the events and the candidate index use. The cluster tables are those of
the pages (``clusters.py``), with the item id in the place of a page's URL, so that
``neardup clusters`` lists item ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import xxhash
from neardup.core import IncompatibleStateError
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema

from .codec import decode_id, encode_id
from .store import Store
from .transaction import Transaction

__all__ = [
    "ItemRecords",
    "check_or_store_schema",
    "item_doc_id",
    "stored_model",
    "stored_schema",
]

_SCHEMA = b"item_schema"
_MODEL = b"item_model"


def item_doc_id(item_id: str) -> int:
    """The 64-bit id of an item: the same item id always gives the same one."""
    return xxhash.xxh3_64_intdigest(b"item\x1f" + item_id.encode("utf-8", "surrogatepass"))


class ItemRecords:
    """The items of a state, read and written inside a transaction."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx

    def get(self, doc_id: int) -> PreparedItem | None:
        raw = self._tx.get("items", encode_id(doc_id))
        return None if raw is None else PreparedItem.decode(raw)

    def get_many(self, doc_ids: Sequence[int]) -> list[PreparedItem | None]:
        found = self._tx.get_many("items", [encode_id(doc_id) for doc_id in doc_ids])
        return [None if raw is None else PreparedItem.decode(raw) for raw in found]

    def put(self, doc_id: int, item: PreparedItem) -> None:
        self._tx.put("items", encode_id(doc_id), item.encode())

    def delete(self, doc_id: int) -> None:
        self._tx.delete("items", encode_id(doc_id))

    def put_model(self, model: ItemModel) -> None:
        """The model that scores the state's items from now on (``core.items.model``)."""
        self._tx.put("meta", _MODEL, model.encode())

    def all_ids(self) -> list[int]:
        """Every stored item's doc id, ascending."""
        return [decode_id(key) for key in self._tx.store.keys("items")]


def stored_model(store: Store) -> ItemModel | None:
    """The model a state's items are scored with (None: none fitted or stored yet)."""
    raw = store.get("meta", _MODEL)
    return None if raw is None else ItemModel.decode(raw)


def stored_schema(store: Store) -> ItemSchema | None:
    """The item schema a state was built with, or None for a state of pages."""
    raw = store.get("meta", _SCHEMA)
    return None if raw is None else ItemSchema.from_json(raw.decode())


def check_or_store_schema(store: Store, schema: ItemSchema | None) -> ItemSchema | None:
    """The schema to use: the stored one, checked against ``schema`` if given; a state of
    pages (documents but no schema) takes none, and a new state stores ``schema``."""
    stored = stored_schema(store)
    if schema is None:
        return stored
    if stored is None:
        if store.get("meta", b"count:documents") not in (None, bytes(8)):
            raise IncompatibleStateError(
                "this state holds pages, not items: give --schema to a new state directory"
            )
        store.write({"meta": {_SCHEMA: schema.to_json().encode()}})
        return schema
    differences = stored.differences(schema)
    if differences:
        raise IncompatibleStateError(
            "the state was built with another item schema ("
            + "; ".join(differences)
            + "): leave out --schema to use the stored one, or use a new state directory"
        )
    return stored
