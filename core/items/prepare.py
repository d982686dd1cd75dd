"""From a decoded JSON record to a ``PreparedItem``: checked, normalised, tokenised.

A record that cannot become an item raises ``BadRecordError`` with a reason code for the
dead letters: ``not_an_object``, ``missing_id``, ``bad_field`` (a value of the wrong type),
``bad_location`` (latitude outside ±90, longitude outside ±180, or only one of them),
``not_finite`` (NaN or infinity), ``too_large`` (a field over ``MAX_FIELD_CHARS``).
A field that is absent, null or empty after normalisation is missing: left out of scores.

``PreparedItem.encode`` is a compact msgpack form for the state. An item's keys are not
prepared with it: they depend on the state's model (``blocking.py``).
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from ..exceptions import BadRecordError
from .compare import term_hash
from .normalise import (
    TextNormaliser,
    gram_tokens,
    normalise_identifier,
    shingle_tokens,
    token_hash,
)
from .schema import FieldSpec, ItemSchema
from .synonyms import listings_table
from .values import (
    SKETCH_SIZE,
    CategoryValue,
    FieldValue,
    GeoValue,
    IdentifierValue,
    LongTextValue,
    NumberValue,
    TextValue,
)

__all__ = [
    "DISPLAY_CHARS",
    "MAX_FIELD_CHARS",
    "SKETCH_SIZE",
    "ItemPreparer",
    "PreparedItem",
]

#: a field longer than this (characters) sends the record to the dead letters as too_large
MAX_FIELD_CHARS = 1_000_000
#: the display form kept per field for merged records (characters)
DISPLAY_CHARS = 200


class PreparedItem(msgspec.Struct, frozen=True, array_like=True):
    """One item ready to index and compare. ``values`` are aligned with the schema's fields
    (None where missing)."""

    id: str
    url: str | None
    values: tuple[FieldValue | None, ...]
    source: str | None = None

    def encode(self) -> bytes:
        """Compact binary form for the state."""
        return _ENCODER.encode(self)

    @staticmethod
    def decode(data: bytes) -> PreparedItem:
        """The item ``encode`` wrote."""
        return _DECODER.decode(data)

    def value(self, schema: ItemSchema, name: str) -> FieldValue | None:
        """The value of field ``name``."""
        return self.values[[spec.name for spec in schema.fields].index(name)]


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(PreparedItem)


class ItemPreparer:
    """Prepares records of one schema (holds its synonym table, stemmer and key plan)."""

    def __init__(self, schema: ItemSchema) -> None:
        self.schema = schema
        table = listings_table()
        if schema.synonyms:
            table = table.extended(schema.synonyms, "the schema's synonyms")
        self.text = TextNormaliser(table, schema.language)
        self._readers = {
            spec.reading: TextNormaliser(table, schema.language, spec.reading)
            for spec in schema.fields
            if spec.type in ("text", "longtext")
        }

    def prepare(self, record: Any) -> PreparedItem:
        """A PreparedItem from a decoded JSON object, or BadRecordError saying why not."""
        if not isinstance(record, dict):
            raise BadRecordError(
                "not_an_object",
                f"expected a JSON object per record, got {type(record).__name__}",
            )
        item_id = _scalar_text(record, self.schema.id_field)
        if item_id is None:
            raise BadRecordError(
                "missing_id",
                f"the record has no {self.schema.id_field!r} (its id): give every record one, "
                "a string or an integer",
            )
        url = _optional_text(record, self.schema.url_field)
        source = _optional_text(record, self.schema.source_field)
        values = tuple(self._value(spec, record) for spec in self.schema.fields)
        return PreparedItem(item_id, url, values, source)

    def _value(self, spec: FieldSpec, record: dict[str, Any]) -> FieldValue | None:
        if spec.type == "geo":
            return _geo(spec, record)
        raw = record.get(spec.name)
        if raw is None:
            return None
        if spec.type == "number":
            return _number(spec, raw)
        text = _field_text(spec, raw)
        if text.strip().lower() in PLACEHOLDERS:
            return None
        display = " ".join(text.split())[:DISPLAY_CHARS]
        if spec.type in ("text", "longtext"):
            reader = self._readers[spec.reading]
            words = reader.words(text)
            if not words:
                return None
            if spec.type == "longtext":
                return LongTextValue(display, tuple(shingle_tokens(words)[:SKETCH_SIZE]))
            numbers = sorted({token_hash("w", word) for word in words if word.isdigit()})
            codes = sorted({term_hash("c", code) for code in reader.codes(text)})
            return TextValue(
                display,
                " ".join(words),
                (),
                tuple(gram_tokens(words)),
                tuple(numbers),
                tuple(codes),
            )
        if spec.type == "category":
            value = self.text.category(text)
            return CategoryValue(display, value, token_hash("v", value)) if value else None
        value = normalise_identifier(text, spec.kind)
        return IdentifierValue(display, value, token_hash("v", value)) if value else None


#: what exports write for a value they do not have (DBLP-Scholar's "N/A", pandas' "nan"):
#: missing, not a value that thousands of records share
PLACEHOLDERS = frozenset({"n/a", "#n/a", "n.a.", "null", "nan", "none", "unknown"})

#: the first number in a string: sign, digits with thousands separators, decimals
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
#: a duration, "3:26" or "1:02:05": read as seconds (its first number alone, the minutes,
#: would make every song of three minutes and some seconds equal)
_DURATION = re.compile(r"^\s*(?:(\d+):)?(\d+):([0-5]\d)\s*$")


def _scalar_text(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise BadRecordError(
            "bad_field",
            f"{key!r} = {_shown(value)} must be a string or an integer, not {type(value).__name__}",
        )
    text = str(value).strip()
    if len(text) > MAX_FIELD_CHARS:
        raise BadRecordError(
            "too_large",
            f"{key!r} has {len(text)} characters, over the limit of {MAX_FIELD_CHARS}: use a "
            "shorter one",
        )
    return text or None


def _optional_text(record: dict[str, Any], key: str | None) -> str | None:
    return None if key is None else _scalar_text(record, key)


def _field_text(spec: FieldSpec, raw: Any) -> str:
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise BadRecordError(
            "bad_field",
            f"field {spec.name!r} = {_shown(raw)} must be text (or a number), not "
            f"{type(raw).__name__}: flatten it or leave it out",
        )
    if isinstance(raw, float) and not math.isfinite(raw):
        raise BadRecordError(
            "not_finite", f"field {spec.name!r} is {raw}: give a finite value or leave it out"
        )
    text = str(raw)
    if len(text) > MAX_FIELD_CHARS:
        raise BadRecordError(
            "too_large",
            f"field {spec.name!r} has {len(text)} characters, over the limit of "
            f"{MAX_FIELD_CHARS}: shorten it or leave it out",
        )
    return text


def _finite(spec: FieldSpec, key: str, raw: Any) -> float:
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError as error:
            raise BadRecordError(
                "bad_field",
                f"field {key!r} of {spec.name!r} = {raw[:40]!r} is not a number: write it "
                "as a decimal such as 12.5",
            ) from error
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise BadRecordError(
            "bad_field",
            f"field {key!r} of {spec.name!r} = {_shown(raw)} must be a number, not "
            f"{type(raw).__name__}",
        )
    value = float(raw)
    if not math.isfinite(value):
        raise BadRecordError(
            "not_finite",
            f"field {key!r} of {spec.name!r} is {value}: give a finite number or leave it out",
        )
    return value


def _number(spec: FieldSpec, raw: Any) -> NumberValue | None:
    if isinstance(raw, str):
        duration = _DURATION.match(raw)
        if duration is not None:
            hours, minutes, seconds = (int(part or 0) for part in duration.groups())
            return NumberValue(float(hours * 3600 + minutes * 60 + seconds))
        found = _NUMBER.search(raw.replace("\u00a0", " "))
        if found is None:
            return None  # "Album only", "call for price": no number given
        raw = found.group().replace(",", "").replace(" ", "")
    return NumberValue(_finite(spec, spec.name, raw))


def _geo(spec: FieldSpec, record: dict[str, Any]) -> GeoValue | None:
    assert spec.lat is not None and spec.lon is not None
    raw_lat, raw_lon = record.get(spec.lat), record.get(spec.lon)
    blank = [
        raw is None or (isinstance(raw, str) and not raw.strip()) for raw in (raw_lat, raw_lon)
    ]
    if all(blank):
        return None
    if any(blank):
        raise BadRecordError(
            "bad_location",
            f"{spec.name!r} has only one of {spec.lat!r} and {spec.lon!r}: give both or neither",
        )
    lat, lon = _finite(spec, spec.lat, raw_lat), _finite(spec, spec.lon, raw_lon)
    if not -90.0 <= lat <= 90.0:
        raise BadRecordError(
            "bad_location",
            f"{spec.lat!r} = {lat} is outside -90..90: a latitude in degrees (swapped with "
            f"{spec.lon!r}?)",
        )
    if not -180.0 <= lon <= 180.0:
        raise BadRecordError(
            "bad_location", f"{spec.lon!r} = {lon} is outside -180..180: a longitude in degrees"
        )
    return GeoValue(lat, lon)


def _shown(value: Any) -> str:
    """A bad value, cut short for a message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
