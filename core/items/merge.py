"""One record per cluster, built from its members.

Per field type, the rule and why:

* category, identifier: the most common normalised value (ties: the earliest member's), shown
  in the display form its first holder used: a vote, because these are equal or not.
* text: the medoid, the member's text most similar to the others in all (ties: the longer):
  the most representative spelling, where the longest would favour a text with extra words
  ("... Cork, Ireland - Home") and counting shared tokens would too.
* longtext: the longest description kept (their excerpts): descriptions are rarely wrong by
  being long, and a merged record is for reading.
* geo: the centroid of the members' locations as unit vectors (``geo.centroid``): a plain
  mean of longitudes would put points on both sides of the antimeridian near Greenwich.
* number: the median: one outlier (a price typed with an extra zero) does not move it.

The members' urls are listed in member order, without repeats.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .geo import centroid
from .prepare import PreparedItem
from .schema import ItemSchema
from .similarity import jaccard_sorted
from .values import (
    CategoryValue,
    FieldValue,
    GeoValue,
    IdentifierValue,
    LongTextValue,
    NumberValue,
    TextValue,
)

__all__ = ["MergedRecord", "label_field", "merge_field", "merge_items"]


@dataclass(frozen=True, slots=True)
class MergedRecord:
    """A cluster's record: ``fields`` maps field names to merged values (a location is a
    ``{"lat": .., "lon": ..}`` mapping); fields no member has are absent."""

    ids: tuple[str, ...]
    urls: tuple[str, ...]
    fields: dict[str, Any]


def merge_items(members: Sequence[PreparedItem], schema: ItemSchema) -> MergedRecord:
    """The merged record of a cluster's members (at least one)."""
    if not members:
        raise ValueError("a cluster has at least one member")
    merged: dict[str, Any] = {}
    for index, spec in enumerate(schema.fields):
        present = [value for item in members if (value := item.values[index]) is not None]
        if present:
            merged[spec.name] = _merge_values(present)
    urls = tuple(dict.fromkeys(item.url for item in members if item.url))
    return MergedRecord(tuple(item.id for item in members), urls, merged)


def label_field(schema: ItemSchema) -> str | None:
    """The field that names an item to a reader: ``name`` (a field of words), else the
    schema's first text field; None when the schema has none."""
    worded = {spec.name for spec in schema.fields if spec.type not in ("geo", "number")}
    if "name" in worded:
        return "name"
    return next((spec.name for spec in schema.fields if spec.type == "text"), None)


def merge_field(members: Sequence[PreparedItem], schema: ItemSchema, name: str) -> Any:
    """The merged value of the one field ``name`` (as ``merge_items`` gives it), or None when
    no member has it."""
    index = [spec.name for spec in schema.fields].index(name)
    present = [value for item in members if (value := item.values[index]) is not None]
    return _merge_values(present) if present else None


def _merge_values(values: Sequence[FieldValue]) -> Any:
    first = values[0]
    if isinstance(first, (CategoryValue, IdentifierValue)):
        votes = Counter(value.value for value in values if isinstance(value, type(first)))
        winner = max(votes, key=lambda value: votes[value])  # Counter keeps first-seen order
        return next(
            value.display
            for value in values
            if isinstance(value, (CategoryValue, IdentifierValue)) and value.value == winner
        )
    if isinstance(first, TextValue):
        texts = [value for value in values if isinstance(value, TextValue)]

        def support(text: TextValue) -> tuple[float, int]:
            words = set(text.words.split())
            shared = sum(
                len(words & set(other.words.split()))
                / max(1, len(words | set(other.words.split())))
                + jaccard_sorted(text.grams, other.grams)
                for other in texts
            )
            return shared, len(text.display)

        return max(texts, key=support).display
    if isinstance(first, LongTextValue):
        return max((value.display for value in values if isinstance(value, LongTextValue)), key=len)
    if isinstance(first, GeoValue):
        lat, lon = centroid([(v.lat, v.lon) for v in values if isinstance(v, GeoValue)])
        return {"lat": lat, "lon": lon}
    numbers = [value.value for value in values if isinstance(value, NumberValue)]
    return statistics.median(numbers)
