"""A prepared field's value, one small struct per field type (msgspec: compact to store).

Token tuples are distinct hashes, sorted.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "SKETCH_SIZE",
    "CategoryValue",
    "FieldValue",
    "GeoValue",
    "IdentifierValue",
    "LongTextValue",
    "NumberValue",
    "TextValue",
]


#: s, the bottom-s sample kept of a longtext's shingles
SKETCH_SIZE = 64


class TextValue(msgspec.Struct, frozen=True, array_like=True, tag=1):
    """Words and character bigrams, apart. ``grams`` sorted; ``numbers``: hashes of the words
    that are numbers (two texts whose numbers differ entirely name different things: "12 Main
    St", "14 Main St"); ``codes``: hashes of the codes inside the text (``codes.py``).
    ``unused``: empty (older states kept word tokens there)."""

    display: str
    words: str  # the canonical words, space separated
    unused: tuple[int, ...]
    grams: tuple[int, ...]
    numbers: tuple[int, ...] = ()
    codes: tuple[int, ...] = ()


class CategoryValue(msgspec.Struct, frozen=True, array_like=True, tag=2):
    display: str
    value: str
    token: int


class IdentifierValue(msgspec.Struct, frozen=True, array_like=True, tag=3):
    display: str
    value: str
    token: int


class GeoValue(msgspec.Struct, frozen=True, array_like=True, tag=4):
    lat: float
    lon: float


class LongTextValue(msgspec.Struct, frozen=True, array_like=True, tag=5):
    """A description: the bottom-s sample of its word shingles (all of them when fewer)."""

    display: str  # the first characters, for a merged record
    sketch: tuple[int, ...]


class NumberValue(msgspec.Struct, frozen=True, array_like=True, tag=6):
    value: float


FieldValue = TextValue | CategoryValue | IdentifierValue | GeoValue | LongTextValue | NumberValue
