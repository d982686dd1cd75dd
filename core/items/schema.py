"""The item schema: which fields of a record are compared, how, and with what weight.

Parsed from TOML text (the caller reads the file; ``tomllib`` parses it)::

    id = "id"
    url = "url"              # optional: the field holding the item's source link
    threshold = 0.5          # optional: match probability at or above which two items match
    [fields.name]
    type = "text"
    weight = 3
    [fields.location]
    type = "geo"
    lat = "latitude"
    lon = "longitude"
    radius = 150             # optional, metres
    weight = 2

Every mistake is a ``SchemaError`` naming the line (when the text has one for it) and the
field. The schema is stored with the state as JSON (``to_json``); ``differences`` names what
makes two schemas incompatible.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from ..exceptions import SchemaError
from .profiles import PROFILES, infer_profile

__all__ = [
    "DEFAULT_RADIUS_M",
    "DEFAULT_THRESHOLD",
    "MAX_FIELDS",
    "FieldSpec",
    "FieldType",
    "IdentifierKind",
    "ItemSchema",
    "LinkMode",
    "synonyms_path",
]

FieldType = Literal["text", "category", "geo", "identifier", "longtext", "number"]
IdentifierKind = Literal["code", "phone", "url"]
LinkMode = Literal["across", "any"]

#: Match probability at or above which two items match (``model.py``: the odds are learned).
DEFAULT_THRESHOLD = 0.5
#: The distance (metres) the geo comparison's bands are measured in: r/8 to 8r.
DEFAULT_RADIUS_M = 200.0
#: The key plan enumerates subsets of fields: more than this would take too long.
MAX_FIELDS = 14
#: what scoring a pair's values costs, roughly, by type (a text's word and n-gram sets, a
#: longtext's samples cost most): the verifier scores the fields with most weight per cost
#: first
_SCORING_COST: dict[str, float] = {
    "category": 1.0,
    "identifier": 1.0,
    "number": 1.0,
    "geo": 2.0,
    "text": 4.0,
    "longtext": 8.0,
}

_TOP_KEYS = {
    "id",
    "url",
    "threshold",
    "min_weight",
    "source",
    "link",
    "once",
    "synonyms",
    "language",
    "learn",
    "fields",
}
_FIELD_KEYS: dict[str, set[str]] = {
    "text": {"type", "weight", "profile"},
    "category": {"type", "weight"},
    "geo": {"type", "weight", "lat", "lon", "radius"},
    "identifier": {"type", "weight", "kind"},
    "longtext": {"type", "weight", "profile"},
    "number": {"type", "weight"},
}
_LANGUAGES = ("english", "french", "german", "spanish", "italian", "dutch", "portuguese")


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One compared field. ``name`` is the record's key (geo fields read ``lat``/``lon``)."""

    name: str
    type: FieldType
    weight: float
    #: geo: the record keys of latitude and longitude, and the radius in metres
    lat: str | None = None
    lon: str | None = None
    radius: float | None = None
    #: identifier: how values are normalised before they are compared for equality
    kind: IdentifierKind = "code"
    #: text, longtext: how its words are read (``profiles.py``); None: from the field's name
    profile: str | None = None

    @property
    def reading(self) -> str:
        """The profile its words are read with: the one named, or the one its name suggests."""
        return self.profile if self.profile is not None else infer_profile(self.name)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "weight": self.weight}
        if self.profile is not None:
            data["profile"] = self.profile
        if self.type == "geo":
            data.update(lat=self.lat, lon=self.lon, radius=self.radius)
        if self.type == "identifier":
            data["kind"] = self.kind
        return data


@dataclass(frozen=True, slots=True)
class ItemSchema:
    """A validated schema. Build it with ``from_toml`` (or directly, then it is validated)."""

    id_field: str
    fields: tuple[FieldSpec, ...]
    url_field: str | None = None
    threshold: float = DEFAULT_THRESHOLD
    #: a pair matches only when the fields both items have weigh at least this much; None: no
    #: such bound (the model weighs what is missing as neither for nor against)
    min_weight: float | None = None
    #: the field naming an item's source (a site, a catalogue)
    source_field: str | None = None
    #: "across" links only items of different sources, "any" links any two
    link: LinkMode = "any"
    #: sources that list each entity once (a catalogue beside a source that repeats): a
    #: cluster holds at most one item of each, and two items of one are never compared
    once: tuple[str, ...] = ()
    #: Snowball stemmer language (PyStemmer)
    language: str = "english"
    #: extra synonym table, as text (the caller reads the file the TOML names)
    synonyms: str = ""
    #: whether runs fit the model to the data (``model.py``); false: the model stays the
    #: schema's prior, or one ``neardup fit`` was asked for
    learn: bool = True
    _by_name: dict[str, FieldSpec] = field(init=False, repr=False, compare=False)
    #: the fields' indexes, most weight for their cost first: the order in which a pair's
    #: verification scores them, so that a pair that cannot match ends soonest
    scoring_order: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check(bool(self.fields), "the schema has no [fields.NAME] table: add at least one field")
        _check(
            len(self.fields) <= MAX_FIELDS,
            f"the schema has {len(self.fields)} fields: at most {MAX_FIELDS} are supported",
        )
        names = [spec.name for spec in self.fields]
        _check(len(set(names)) == len(names), f"field names repeat: {names}")
        _check(
            isinstance(self.id_field, str) and bool(self.id_field),
            'the schema has no id: add a top-level line such as id = "id"',
        )
        _check(
            _is_number(self.threshold) and 0.0 < self.threshold <= 1.0,
            f"threshold={self.threshold!r} is out of range: use a score in (0, 1], such as 0.7",
        )
        total = sum(spec.weight for spec in self.fields if _is_number(spec.weight))
        _check(
            self.min_weight is None
            or (_is_number(self.min_weight) and 0.0 < self.min_weight <= total),
            f"min_weight={self.min_weight!r} is out of range: use a weight in (0, {total:g}], "
            "the total weight of the fields",
        )
        _check(self.link in get_args(LinkMode), f"link={self.link!r} is unknown: use across or any")
        _check(isinstance(self.learn, bool), f"learn={self.learn!r} must be true or false")
        _check(
            self.link == "any" or self.source_field is not None,
            'link = "across" needs a source field: add source = "FIELD"',
        )
        _check(
            isinstance(self.once, tuple) and all(isinstance(s, str) and s for s in self.once),
            f'once={self.once!r} must be a list of source names, such as ["dblp"]',
        )
        _check(
            not self.once or self.source_field is not None,
            'once needs a source field: add source = "FIELD"',
        )
        _check(
            not self.once or self.link == "any",
            f'once={list(self.once)!r} is what link = "across" does for every source: drop one',
        )
        _check(
            self.language in _LANGUAGES,
            f"language={self.language!r} is not supported: use one of {', '.join(_LANGUAGES)}",
        )
        for spec in self.fields:
            _check_field(spec)
        object.__setattr__(self, "_by_name", {spec.name: spec for spec in self.fields})
        object.__setattr__(
            self,
            "scoring_order",
            tuple(
                sorted(
                    range(len(self.fields)),
                    key=lambda at: -self.fields[at].weight / _SCORING_COST[self.fields[at].type],
                )
            ),
        )

    @property
    def total_weight(self) -> float:
        return sum(spec.weight for spec in self.fields)

    @property
    def least_weight(self) -> float:
        """The weight the fields both items have must reach for the pair to match."""
        return 0.0 if self.min_weight is None else float(self.min_weight)

    def field(self, name: str) -> FieldSpec:
        """The field called ``name`` (KeyError if there is none)."""
        return self._by_name[name]

    @classmethod
    def from_toml(cls, text: str, synonyms_text: str | None = None) -> ItemSchema:
        """Parse and validate TOML text. When it names a ``synonyms`` file, the caller reads that
        file (see ``synonyms_path``) and passes its text as ``synonyms_text``."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise SchemaError(f"the schema is not valid TOML: {error}") from error
        return _from_mapping(data, text, synonyms_text)

    def to_json(self) -> str:
        """Stable JSON (sorted keys) of everything that shapes prepared items and scores."""
        return json.dumps(self._as_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ItemSchema:
        """The schema ``to_json`` wrote."""
        data = json.loads(text)
        if not isinstance(data, dict) or "fields" not in data:
            raise SchemaError(f"stored schema {text[:80]!r} is not a schema's JSON")
        fields = tuple(
            FieldSpec(
                name=name,
                type=spec["type"],
                weight=spec["weight"],
                lat=spec.get("lat"),
                lon=spec.get("lon"),
                radius=spec.get("radius"),
                kind=spec.get("kind", "code"),
                profile=spec.get("profile"),
            )
            for name, spec in data["fields"]
        )
        return cls(
            id_field=data["id"],
            fields=fields,
            url_field=data["url"],
            threshold=data["threshold"],
            min_weight=data["min_weight"],
            source_field=data["source"],
            link=data["link"],
            once=tuple(data.get("once", ())),
            language=data["language"],
            synonyms=data["synonyms"],
            learn=data.get("learn", True),
        )

    def listed_once(self, source: str | None) -> bool:
        """Whether ``source`` lists each entity once (every source does with ``link =
        "across"``): two of its items are never one entity."""
        return self.link == "across" or (source is not None and source in self.once)

    def compares(self, source: str | None, other: str | None) -> bool:
        """Whether two items of these sources are ever compared: not two of one source that
        lists each entity once."""
        return source != other or not self.listed_once(source)

    def differences(self, other: ItemSchema) -> list[str]:
        """What differs between this schema and ``other`` (the stored one), one line each, named
        by its TOML path; empty when they are interchangeable."""
        mine, theirs = self._as_dict(), other._as_dict()
        found = [
            f"{key}: stored {theirs.get(key)!r}, requested {mine.get(key)!r}"
            for key in sorted(set(mine) | set(theirs))
            if key not in ("fields", "synonyms") and mine.get(key) != theirs.get(key)
        ]
        if mine["synonyms"] != theirs["synonyms"]:
            found.append("synonyms: the extra synonym table differs")
        my_fields, their_fields = dict(mine["fields"]), dict(theirs["fields"])
        if list(my_fields) != list(their_fields) and set(my_fields) == set(their_fields):
            found.append(f"fields: stored order {list(their_fields)}, requested {list(my_fields)}")
        for name in sorted(set(my_fields) | set(their_fields)):
            if name not in their_fields:
                found.append(f"fields.{name}: not in the stored schema")
            elif name not in my_fields:
                found.append(f"fields.{name}: only in the stored schema")
            else:
                for key in sorted(set(my_fields[name]) | set(their_fields[name])):
                    was, now = their_fields[name].get(key), my_fields[name].get(key)
                    if was != now:
                        found.append(f"fields.{name}.{key}: stored {was!r}, requested {now!r}")
        return found

    def _as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id_field,
            "url": self.url_field,
            "threshold": self.threshold,
            "min_weight": self.min_weight,
            "source": self.source_field,
            "link": self.link,
            **({"once": list(self.once)} if self.once else {}),
            "language": self.language,
            "synonyms": self.synonyms,
            **({} if self.learn else {"learn": False}),
            "fields": [[spec.name, spec.to_dict()] for spec in self.fields],
        }


def synonyms_path(text: str) -> str | None:
    """The synonyms file a schema's TOML names (relative to the schema file), if any: the caller
    reads it and passes its text to ``ItemSchema.from_toml``."""
    try:
        value = tomllib.loads(text).get("synonyms")
    except tomllib.TOMLDecodeError as error:
        raise SchemaError(f"the schema is not valid TOML: {error}") from error
    return value if isinstance(value, str) else None


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise SchemaError(message)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_field(spec: FieldSpec) -> None:
    where = f"[fields.{spec.name}]"
    _check(
        spec.type in _FIELD_KEYS,
        f"{where} type = {spec.type!r} is unknown: use one of {', '.join(_FIELD_KEYS)}",
    )
    _check(
        _is_number(spec.weight) and spec.weight > 0,
        f"{where} weight = {spec.weight!r} must be a positive number (such as 1, 2 or 0.5)",
    )
    if spec.type == "geo":
        _check(
            isinstance(spec.lat, str) and isinstance(spec.lon, str) and bool(spec.lat and spec.lon),
            f'{where} is geo without lat and lon: add lat = "FIELD" and lon = "FIELD", the '
            "record keys holding the latitude and longitude",
        )
        _check(
            spec.radius is None or (_is_number(spec.radius) and 1.0 <= spec.radius <= 100_000.0),
            f"{where} radius = {spec.radius!r} is out of range: use metres from 1 to 100000",
        )
    _check(
        spec.profile is None or spec.profile in PROFILES,
        f"{where} profile = {spec.profile!r} is unknown: use one of {', '.join(PROFILES)}",
    )
    if spec.type == "identifier":
        _check(
            spec.kind in get_args(IdentifierKind),
            f"{where} kind = {spec.kind!r} is unknown: use code, phone or url",
        )


_HEADER = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'. ]+?)\s*=")


def _line_of(text: str, table: str, key: str | None = None) -> int | None:
    """1-based line of ``key`` in ``[table]`` ('' for the top level), or of the header itself."""
    current = ""
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            current = header.group(1).replace('"', "").replace(" ", "")
            if key is None and current == table:
                return number
            continue
        found = _KEY.match(line)
        if key is not None and current == table and found:
            name = found.group(1).strip().strip("\"'")
            if name == key:
                return number
    return None


def _at(text: str, table: str, key: str | None = None) -> str:
    line = _line_of(text, table, key)
    if line is None and key is not None:
        line = _line_of(text, table)
    return f"line {line}: " if line is not None else ""


def _from_mapping(data: dict[str, Any], text: str, synonyms_text: str | None) -> ItemSchema:
    for key in data:
        if key not in _TOP_KEYS:
            raise SchemaError(
                f"{_at(text, '', key)}unknown top-level key {key!r}: the keys are "
                f"{', '.join(sorted(_TOP_KEYS))}"
            )
    if "id" not in data:
        raise SchemaError('the schema has no id: add a top-level line such as id = "id"')
    for key in ("id", "url", "source", "link", "synonyms", "language"):
        if key in data and not isinstance(data[key], str):
            raise SchemaError(f"{_at(text, '', key)}{key} = {data[key]!r} must be a string")
    raw_fields = data.get("fields", {})
    if not isinstance(raw_fields, dict):
        raise SchemaError(f"{_at(text, '', 'fields')}fields must be tables: [fields.NAME]")
    fields = [_field_from(name, spec, text) for name, spec in raw_fields.items()]
    named = data.get("synonyms")
    if named is not None and synonyms_text is None:
        raise SchemaError(
            f"{_at(text, '', 'synonyms')}the schema names the synonyms file {named!r}: read it "
            "and pass its text (synonyms_text)"
        )
    try:
        return ItemSchema(
            id_field=data["id"],
            fields=tuple(fields),
            url_field=data.get("url"),
            threshold=data.get("threshold", DEFAULT_THRESHOLD),
            min_weight=data.get("min_weight"),
            source_field=data.get("source"),
            link=data.get("link", "any"),
            once=_source_names(data.get("once", []), text),
            language=data.get("language", "english"),
            synonyms=synonyms_text or "",
            learn=data.get("learn", True),
        )
    except SchemaError as error:
        # top-level messages start with "key=value": point at that key's line
        message = str(error)
        named = message.split("=", 1)[0] if "=" in message.split(" ", 1)[0] else ""
        prefix = _at(text, "", named) if named in _TOP_KEYS else ""
        raise SchemaError(prefix + message) from None


def _source_names(value: Any, text: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(name, str) and name for name in value):
        raise SchemaError(
            f"{_at(text, '', 'once')}once = {value!r} must be a list of source names, "
            'such as ["dblp"]'
        )
    return tuple(value)


def _field_from(name: str, spec: Any, text: str) -> FieldSpec:
    table = f"fields.{name}"
    if not isinstance(spec, dict):
        raise SchemaError(f"{_at(text, 'fields', name)}fields.{name} must be a table")
    kind = spec.get("type")
    if kind not in _FIELD_KEYS:
        raise SchemaError(
            f"{_at(text, table, 'type')}[fields.{name}] type = {kind!r} is unknown: use one of "
            f"{', '.join(_FIELD_KEYS)}"
        )
    for key in spec:
        if key not in _FIELD_KEYS[kind]:
            raise SchemaError(
                f"{_at(text, table, key)}[fields.{name}] has unknown key {key!r}: a {kind} field "
                f"takes {', '.join(sorted(_FIELD_KEYS[kind]))}"
            )
    if "weight" not in spec:
        raise SchemaError(f"{_at(text, table)}[fields.{name}] has no weight: add weight = 1")
    built = FieldSpec(
        name=name,
        type=cast(FieldType, kind),
        weight=spec["weight"],
        lat=spec.get("lat"),
        lon=spec.get("lon"),
        radius=spec.get("radius", DEFAULT_RADIUS_M if kind == "geo" else None),
        kind=spec.get("kind", "code"),
        profile=spec.get("profile"),
    )
    return _validated_field(built, text)


def _validated_field(spec: FieldSpec, text: str) -> FieldSpec:
    try:
        _check_field(spec)
    except SchemaError as error:
        message = str(error)
        key = message.split("]", 1)[1].split("=")[0].strip() if "]" in message else None
        raise SchemaError(_at(text, f"fields.{spec.name}", key) + message) from None
    return spec
