"""Geo: two points within the radius always share a cell, at cell edges, poles, antimeridian."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from neardup.core.items.geo import (
    EARTH_RADIUS_M,
    GeoGrid,
    centroid,
    geo_similarity,
    haversine_m,
    precision_for,
)


def destination(lat: float, lon: float, bearing: float, distance: float) -> tuple[float, float]:
    """The point ``distance`` metres from (lat, lon) along ``bearing`` (degrees)."""
    phi, lam, theta = math.radians(lat), math.radians(lon), math.radians(bearing)
    delta = distance / EARTH_RADIUS_M
    phi2 = math.asin(
        math.sin(phi) * math.cos(delta) + math.cos(phi) * math.sin(delta) * math.cos(theta)
    )
    lam2 = lam + math.atan2(
        math.sin(theta) * math.sin(delta) * math.cos(phi),
        math.cos(delta) - math.sin(phi) * math.sin(phi2),
    )
    lon2 = (math.degrees(lam2) + 540.0) % 360.0 - 180.0
    return max(-90.0, min(90.0, math.degrees(phi2))), lon2


latitudes = st.one_of(
    st.floats(-90, 90),
    st.floats(80, 90),  # polar: cells are narrow in longitude
    st.floats(-90, -80),
    st.sampled_from([0.0, 89.9999, -89.9999, 90.0, -90.0]),
)
longitudes = st.one_of(
    st.floats(-180, 180),
    st.floats(179.99, 180),  # the antimeridian
    st.floats(-180, -179.99),
)


@given(
    lat=latitudes,
    lon=longitudes,
    bearing=st.floats(0, 360),
    share=st.floats(0, 0.99999),
    radius=st.sampled_from([10.0, 50.0, 200.0, 1000.0, 25_000.0]),
)
def test_points_within_the_radius_always_share_a_cell(
    lat: float, lon: float, bearing: float, share: float, radius: float
) -> None:
    grid = GeoGrid(radius)
    lat2, lon2 = destination(lat, lon, bearing, share * radius)
    assert haversine_m(lat, lon, lat2, lon2) <= radius * 1.000001
    assert grid.cell(lat2, lon2) in grid.cells_within(lat, lon)
    assert grid.cell(lat, lon) in grid.cells_within(lat2, lon2)


@pytest.mark.parametrize("radius", [50.0, 200.0, 1000.0])
def test_neighbours_across_a_cell_edge_and_the_antimeridian(radius: float) -> None:
    grid = GeoGrid(radius)
    # two points 0.4 radius apart on either side of the antimeridian
    step = 0.2 * radius / (EARTH_RADIUS_M * math.pi / 180.0)
    east, west = (10.0, 180.0 - step), (10.0, -180.0 + step)
    assert grid.cell(*east) != grid.cell(*west)
    assert grid.cell(*west) in grid.cells_within(*east)
    # a cell edge: the same point a hair on either side of a row boundary
    height = 180.0 / (1 << (5 * grid.precision // 2))
    edge = -90.0 + height * round((45.0 + 90.0) / height)
    below, above = (edge - 1e-9, 7.0), (edge + 1e-9, 7.0)
    assert grid.cell(*below) != grid.cell(*above)
    assert grid.cell(*above) in grid.cells_within(*below)


def test_low_latitudes_look_up_at_most_the_cell_and_its_8_neighbours() -> None:
    grid = GeoGrid(200.0)
    assert grid.precision == precision_for(200.0) == 6
    for lat in (0.0, 30.0, 51.9, -45.0):
        assert 1 <= len(grid.cells_within(lat, -8.48)) <= 9


def test_near_the_poles_there_are_more_columns_then_one_polar_token() -> None:
    grid = GeoGrid(200.0)
    assert len(grid.cells_within(86.5, 0.3)) > len(grid.cells_within(60.0, 0.3)) + 4
    assert grid.cell(89.99, 10.0) == grid.cell(89.99, -170.0) == "^N"
    assert grid.cell(-89.99, 10.0) == "^S"


def test_similarity_and_centroid_across_the_antimeridian() -> None:
    assert geo_similarity(0.0, 200.0) == 1.0
    assert geo_similarity(200.0, 200.0) == geo_similarity(500.0, 200.0) == 0.0
    assert 0.9 < geo_similarity(50.0, 200.0) < 1.0
    lat, lon = centroid([(10.0, 179.0), (10.0, -179.0)])
    assert abs(abs(lon) - 180.0) < 1e-6 and abs(lat - 10.0) < 0.01
    assert haversine_m(0.0, 179.9999, 0.0, -179.9999) < 30.0
