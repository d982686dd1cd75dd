"""Locations: geohash cells that two points within a radius always share, and distances.

A location posts one token, its geohash cell, and looks up every cell a point within the
radius can lie in (``GeoGrid.cells_within``). The precision is the finest whose cells are at
least the radius high and wide (at the equator), so at low and middle latitudes those are the
cell and some of its 8 neighbours. Toward the poles cells narrow in longitude (by the cosine
of the latitude) and the neighbours no longer reach the radius: the columns are taken from the
disk's true longitude span, asin(sin(r/R) / cos(lat)), so there are more of them. Beyond a
cap latitude (where that would exceed ``MAX_COLUMNS``) every location posts one polar token
per hemisphere instead of a cell, and a disk that reaches the cap looks the polar token up;
a location above the cap looks up the cells below the cap within its disk's reach, whose
span is bounded by the one at the cap. Longitudes wrap, so the antimeridian is no edge.

Written here because geohash libraries give a cell's 8 neighbours but not the cells a disk
covers; pygeohash names the cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pygeohash

__all__ = [
    "EARTH_RADIUS_M",
    "MAX_COLUMNS",
    "METRES_PER_DEGREE",
    "GeoGrid",
    "centroid",
    "geo_similarity",
    "haversine_m",
    "precision_for",
]

#: mean Earth radius (IUGG), metres
EARTH_RADIUS_M = 6_371_008.8
#: most cell columns a location looks up before the polar cap takes over
MAX_COLUMNS = 8
#: the length of a degree of latitude (and of longitude at the equator), metres
METRES_PER_DEGREE = math.pi * EARTH_RADIUS_M / 180.0
# keeps float rounding at a cell's edge from leaving a neighbour out (degrees, ~1 mm)
_SLACK_DEG = 1e-8


def haversine_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in metres (haversine formula on a sphere)."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    half_dphi = (phi2 - phi1) / 2.0
    half_dlambda = math.radians(lon2 - lon1) / 2.0
    h = math.sin(half_dphi) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(half_dlambda) ** 2
    return 2.0 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def geo_similarity(distance_m: float, radius_m: float) -> float:
    """1 at the same place, 0 at the radius and beyond: 1 - (d/r)^2, flat near 0, so that pins
    moved by a few tens of metres lose little, and falling fast toward the radius."""
    return max(0.0, 1.0 - (distance_m / radius_m) ** 2)


def _cell_degrees(precision: int) -> tuple[float, float]:
    bits = 5 * precision
    lon_bits, lat_bits = (bits + 1) // 2, bits // 2
    return 180.0 / (1 << lat_bits), 360.0 / (1 << lon_bits)


def precision_for(radius_m: float) -> int:
    """The finest geohash precision whose cells are at least ``radius_m`` high and wide (wide at
    the equator); 1 for radii beyond a precision-1 cell."""
    for precision in range(12, 0, -1):
        height, width = _cell_degrees(precision)
        if min(height, width) * METRES_PER_DEGREE >= radius_m:
            return precision
    return 1


@dataclass(frozen=True, slots=True)
class GeoGrid:
    """The cells of one radius. ``cell`` is what a location posts, ``cells_within`` what it
    looks up: if two locations are at most ``radius_m`` apart, each one's cell is among the
    other's ``cells_within``."""

    radius_m: float
    precision: int = field(init=False)
    #: |latitude| from which locations post the polar token
    cap_lat: float = field(init=False)
    _height: float = field(init=False, repr=False)
    _width: float = field(init=False, repr=False)
    _delta: float = field(init=False, repr=False)  # the radius as an angle (radians)

    def __post_init__(self) -> None:
        precision = precision_for(self.radius_m)
        height, width = _cell_degrees(precision)
        delta = self.radius_m / EARTH_RADIUS_M
        # at the cap the disk spans (MAX_COLUMNS - 2) / 2 columns each side at most
        reach = math.radians(min(89.0, width * (MAX_COLUMNS - 2) / 2.0))
        cap = math.degrees(math.acos(min(1.0, math.sin(delta) / math.sin(reach))))
        cap = min(cap, 90.0 - 2.0 * math.degrees(delta))
        object.__setattr__(self, "precision", precision)
        object.__setattr__(self, "cap_lat", max(0.0, cap))
        object.__setattr__(self, "_height", height)
        object.__setattr__(self, "_width", width)
        object.__setattr__(self, "_delta", delta)

    def cell(self, lat: float, lon: float) -> str:
        """The token a location posts: its geohash cell, or "^N"/"^S" beyond the cap."""
        if abs(lat) >= self.cap_lat:
            return "^N" if lat > 0 else "^S"
        return self._name(self._row(lat), self._column(lon))

    def cells_within(self, lat: float, lon: float) -> list[str]:
        """Every token a location at most ``radius_m`` away may post (sorted, distinct)."""
        delta_deg = math.degrees(self._delta)
        found: set[str] = set()
        if abs(lat) + delta_deg >= self.cap_lat:
            found.add("^N" if lat > 0 else "^S")
        # the disk's longitude span at the latitude bounding its part below the cap
        bounding_lat = min(abs(lat), self.cap_lat)
        ratio = math.sin(self._delta) / math.cos(math.radians(bounding_lat))
        span = math.degrees(math.asin(min(1.0, ratio))) + _SLACK_DEG
        low = max(-self.cap_lat, lat - delta_deg - _SLACK_DEG)
        high = min(self.cap_lat, lat + delta_deg + _SLACK_DEG)
        if low <= high:
            columns = self._columns(lon - span, lon + span)
            for row in range(self._row(low), self._row(high) + 1):
                found.update(self._name(row, column) for column in columns)
        return sorted(found)

    def _row(self, lat: float) -> int:
        rows = round(180.0 / self._height)
        return min(rows - 1, max(0, math.floor((lat + 90.0) / self._height)))

    def _column(self, lon: float) -> int:
        columns = round(360.0 / self._width)
        return math.floor((lon + 180.0) / self._width) % columns

    def _columns(self, west: float, east: float) -> list[int]:
        total = round(360.0 / self._width)
        first = math.floor((west + 180.0) / self._width)
        last = math.floor((east + 180.0) / self._width)
        if last - first + 1 >= total:
            return list(range(total))
        return [column % total for column in range(first, last + 1)]

    def _name(self, row: int, column: int) -> str:
        centre_lat = -90.0 + (row + 0.5) * self._height
        centre_lon = -180.0 + (column + 0.5) * self._width
        return pygeohash.encode(centre_lat, centre_lon, self.precision)


def centroid(points: list[tuple[float, float]]) -> tuple[float, float]:
    """The mean of locations as unit vectors, back to latitude and longitude: points on both
    sides of the antimeridian average near it, not near longitude 0."""
    x = y = z = 0.0
    for lat, lon in points:
        phi, lam = math.radians(lat), math.radians(lon)
        x += math.cos(phi) * math.cos(lam)
        y += math.cos(phi) * math.sin(lam)
        z += math.sin(phi)
    norm = math.sqrt(x * x + y * y + z * z)
    if norm < 1e-12:  # antipodal points: no meaningful mean, keep the first
        return points[0]
    return math.degrees(math.asin(z / norm)), math.degrees(math.atan2(y, x))
