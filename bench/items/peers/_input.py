"""The peers' input: fields, values normalised alike for both, and small helpers."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KINDS = ("text", "category", "identifier", "geo", "longtext", "number")


@dataclass(frozen=True)
class Field:
    """A compared field: the record key (``name``), its kind, and a geo field's two keys."""

    name: str
    kind: str
    lat: str | None = None
    lon: str | None = None
    #: the schema's weight (1 when none is given): splink's rules start from the heaviest
    weight: float = 1.0


def parse_fields(fields: Sequence[Sequence[Any]]) -> list[Field]:
    out = []
    for entry in fields:
        name, kind, *rest = entry
        options: Mapping[str, Any] = rest[0] if rest else {}
        if kind not in KINDS:
            raise ValueError(f"field {name!r}: kind {kind!r} is not one of {', '.join(KINDS)}")
        weight = float(options.get("weight", 1.0))
        if kind == "geo":
            lat = str(options.get("lat", f"{name}_lat"))
            lon = str(options.get("lon", f"{name}_lon"))
            out.append(Field(str(name), kind, lat, lon, weight))
        else:
            out.append(Field(str(name), kind, weight=weight))
    if len({f.name for f in out}) != len(out):
        raise ValueError("field names repeat")
    return out


def fields_from_schema(schema: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """The ``fields`` of an item schema (``ItemSchema`` or its TOML text), each with its
    weight (and a geo field's two keys)."""
    if isinstance(schema, str):
        from neardup.core.items.schema import ItemSchema

        schema = ItemSchema.from_toml(schema)
    out: list[tuple[str, str, dict[str, Any]]] = []
    for spec in schema.fields:
        options: dict[str, Any] = {"weight": float(spec.weight)}
        if spec.type == "geo":
            options.update(lat=spec.lat, lon=spec.lon)
        out.append((spec.name, spec.type, options))
    return out


_SPACE = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[\W_]+")
WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"[^0-9.eE+-]")


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = _SPACE.sub(" ", str(value)).strip().lower()
    return text or None


def _float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    else:
        try:
            number = float(_NUMBER.sub("", str(value)))
        except ValueError:
            return None
    return None if math.isnan(number) or math.isinf(number) else number


def normalise(record: Mapping[str, Any], field: Field) -> Any:
    """A field's value as both peers get it; None when missing."""
    if field.kind == "geo":
        lat, lon = _float(record.get(field.lat or "")), _float(record.get(field.lon or ""))
        if lat is None or lon is None or not (-90 <= lat <= 90 and -180 <= lon <= 180):
            return None
        return (lat, lon)
    if field.kind == "number":
        return _float(record.get(field.name))
    text = _text(record.get(field.name))
    if text is not None and field.kind == "identifier":
        text = _NOT_ALNUM.sub("", text) or None
    return text


def sources_of(records: Sequence[Mapping[str, Any]]) -> list[str]:
    sources = sorted({str(r["source"]) for r in records if r.get("source") not in (None, "")})
    if len(sources) < 2 or any(r.get("source") in (None, "") for r in records):
        raise ValueError("link_across needs a source on every record, and two sources or more")
    return sources


def check_ids(records: Sequence[Mapping[str, Any]]) -> list[str]:
    ids = [str(r["id"]) for r in records]
    if len(set(ids)) != len(ids):
        raise ValueError("record ids repeat")
    return ids


class UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        parent = self.parent
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while x != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def version_of(package: str) -> str:
    from importlib.metadata import version

    return version(package)


class Stages:
    """A run's clock: ``stages("name")`` records the seconds since the previous stage (or
    the start) under that name, in ``seconds``."""

    def __init__(self) -> None:
        self.started = self._clock = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self._clock, 2)
        self._clock = now
