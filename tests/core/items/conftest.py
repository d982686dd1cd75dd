"""Schemas shared by item mode's tests."""

from __future__ import annotations

import pytest
from neardup.core.items.schema import ItemSchema

LISTINGS_TOML = """\
id = "id"
url = "url"          # optional: the field holding the item's source link
[fields.name]
type = "text"
weight = 3
[fields.address]
type = "text"
weight = 2
[fields.city]
type = "category"
weight = 1
[fields.location]
type = "geo"
lat = "latitude"
lon = "longitude"
weight = 2
"""


@pytest.fixture
def listings_toml() -> str:
    return LISTINGS_TOML


@pytest.fixture
def listings_schema() -> ItemSchema:
    return ItemSchema.from_toml(LISTINGS_TOML)
