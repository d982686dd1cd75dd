"""A seeded generator of business listings with ground truth, for tuning and evaluating item mode.

Entities are businesses and places in a few cities; each is listed once or several times by
two sources, with the variants real listings have: Saint/St/Street, Avenue/Ave, North/N,
Fifth/5th, "&"/"and", dropped "The", reordered words, typos, split and joined words, a city
appended to a name, suite numbers, phone formats, pins moved by tens of metres, missing
fields. Hard negatives: chains with many branches (several on one street: same name, another
house number, a few hundred metres apart), several businesses in one building (same address
and pin, another name and suite), and the same kind of name in other cities.

``flavour="coords"`` gives locations to most records, ``"plain"`` to none; ``rich`` adds a
description and a price (``extras.py``). Vocabularies are written here (no download).

Up to about 20,000 listings share twelve real cities; a larger corpus also spreads over
made-up towns (``towns_for``), about ``LISTINGS_PER_TOWN`` listings a town, as a national
catalogue spreads over many towns: with twelve cities only, a million listings would put
80,000 in each, far denser than any real town.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .extras import add_extras, details_of

__all__ = ["LISTINGS_PER_TOWN", "Listing", "generate", "towns_for"]

CITIES = [
    ("Springfield", 39.7817, -89.6501),
    ("Saint Louis", 38.6270, -90.1994),
    ("Portland", 45.5152, -122.6784),
    ("Madison", 43.0731, -89.4012),
    ("Fort Worth", 32.7555, -97.3308),
    ("Columbus", 39.9612, -82.9988),
    ("Mount Vernon", 40.9126, -73.8371),
    ("Salem", 44.9429, -123.0351),
    ("Franklin", 35.9251, -86.8689),
    ("Greenville", 34.8526, -82.3940),
    ("Bristol", 36.5951, -82.1887),
    ("Clinton", 42.4168, -71.6829),
]
#: listings a town holds on average once a corpus outgrows the twelve cities
LISTINGS_PER_TOWN = 1_700
_TOWN_STARTS = [
    "Ash", "Bel", "Brook", "Cedar", "Clear", "Elm", "Fair", "Glen", "Green", "High", "Lake",
    "Maple", "Mill", "North", "Oak", "Pine", "Red", "River", "Rock", "Spring", "Stone", "West",
    "Wood", "Ham", "Hart", "Kings", "Mar", "Rose", "Sand", "Silver",
]  # fmt: skip
_TOWN_ENDS = [
    "field", "ford", "ton", "ville", "burg", "dale", "port", "wood", "view", "haven", "brook",
    "mont", "ridge", "side", "land", "bury", "wick", "stead",
]  # fmt: skip
_TOWN_QUALIFIERS = ["", "East ", "West ", "North ", "South ", "New ", "Port ", "Mount "]


def towns_for(count: int) -> list[tuple[str, float, float]]:
    """The towns of a corpus of ``count`` listings: the twelve cities, and for a larger
    corpus made-up towns at random places in the contiguous United States (seeded: the same
    for every call)."""
    wanted = count // LISTINGS_PER_TOWN
    if wanted <= len(CITIES):
        return list(CITIES)
    rng = random.Random("towns")
    names = [
        f"{qualifier}{start}{end}"
        for qualifier in _TOWN_QUALIFIERS
        for start in _TOWN_STARTS
        for end in _TOWN_ENDS
    ]
    rng.shuffle(names)
    taken = {name for name, _, _ in CITIES}
    made = [name for name in names if name not in taken][: wanted - len(CITIES)]
    return [
        *CITIES,
        *((name, round(rng.uniform(30.0, 48.0), 4), round(rng.uniform(-122.0, -72.0), 4))
          for name in made),
    ]  # fmt: skip


STREETS = [
    "Main",
    "Oak",
    "Maple",
    "Pine",
    "Cedar",
    "Elm",
    "Washington",
    "Lincoln",
    "Jefferson",
    "Madison",
    "Park",
    "Lake",
    "Hill",
    "Church",
    "Mill",
    "Spring",
    "River",
    "Market",
    "Union",
    "Center",
    "Highland",
    "Chestnut",
    "Walnut",
    "Franklin",
    "Jackson",
    "Adams",
    "Cherry",
    "Meadow",
    "Forest",
    "Sunset",
    "Ridge",
    "Grove",
    "Bridge",
    "Water",
    "Prospect",
    "Pleasant",
    "Liberty",
    "Locust",
    "Academy",
    "Broad",
    "Harrison",
    "Grant",
    "Monroe",
    "Willow",
    "Birch",
    "Aspen",
    "Laurel",
    "Magnolia",
    "Dogwood",
    "Poplar",
    "Hickory",
    "Sycamore",
    "Cypress",
    "Juniper",
    "Lafayette",
    "Franklin",
    "Lexington",
    "Hamilton",
    "Warren",
    "Clay",
]
SAINT_STREETS = ["Saint James", "Saint Charles", "Saint Paul", "Saint Marks", "Saint Clair"]
SUFFIXES = [
    ("Street", ["St", "St.", "Str"]),
    ("Avenue", ["Ave", "Ave.", "Av"]),
    ("Road", ["Rd", "Rd."]),
    ("Boulevard", ["Blvd", "Blvd."]),
    ("Drive", ["Dr", "Dr."]),
    ("Lane", ["Ln"]),
    ("Court", ["Ct"]),
    ("Place", ["Pl"]),
    ("Parkway", ["Pkwy"]),
    ("Highway", ["Hwy"]),
    ("Circle", ["Cir"]),
    ("Terrace", ["Ter"]),
]
DIRECTIONS = [("North", "N"), ("South", "S"), ("East", "E"), ("West", "W")]
ORDINALS = [("First", "1st"), ("Second", "2nd"), ("Third", "3rd"), ("Fourth", "4th")]
ORDINALS += [("Fifth", "5th"), ("Sixth", "6th"), ("Seventh", "7th"), ("Eighth", "8th")]
PEOPLE = [
    "Joe",
    "Tony",
    "Maria",
    "Rosa",
    "Frank",
    "Sam",
    "Lucy",
    "Ali",
    "Chen",
    "Omar",
    "Priya",
    "Hans",
    "Olga",
    "Pedro",
    "Ivan",
    "Mei",
    "Kofi",
    "Liam",
    "Nora",
    "Gus",
    "Vera",
    "Abe",
    "Ida",
    "Otto",
    "Rita",
    "Hugo",
    "Lena",
    "Max",
    "Ada",
    "Theo",
    "Zoe",
    "Finn",
    "Ruth",
    "Walt",
    "Bea",
]
SURNAMES = [
    "Murphy",
    "Kelly",
    "Russo",
    "Nguyen",
    "Patel",
    "Schmidt",
    "Garcia",
    "Kowalski",
    "Olsen",
    "Brennan",
    "Moreau",
    "Rossi",
    "Fischer",
    "Novak",
    "Silva",
    "Haddad",
    "Okafor",
    "Tanaka",
    "Larsen",
    "Duffy",
    "Romano",
    "Weber",
    "Costa",
    "Meyer",
    "Byrne",
]
KINDS = [
    "Pizza",
    "Pizzeria",
    "Cafe",
    "Coffee House",
    "Bakery",
    "Diner",
    "Grill",
    "Pharmacy",
    "Hardware",
    "Dental Care",
    "Barber Shop",
    "Laundromat",
    "Books",
    "Florist",
    "Auto Repair",
    "Hotel",
    "Pub",
    "Tavern",
    "Deli",
    "Tailors",
    "Bicycle Shop",
    "Pet Supplies",
    "Optical",
    "Music Store",
    "Yoga Studio",
    "Fitness",
    "Insurance",
    "Law Office",
    "Bistro",
    "Noodle Bar",
    "Taqueria",
    "Steakhouse",
    "Sushi",
    "Ice Cream",
    "Bagels",
    "Butcher",
    "Wine Shop",
    "Salon",
]
ADJECTIVES = [
    "Golden",
    "Blue",
    "Red",
    "Green",
    "Silver",
    "Happy",
    "Lucky",
    "Royal",
    "Little",
    "Big",
    "Old",
    "New",
    "Rustic",
    "Urban",
    "Corner",
    "Sunny",
    "Northern",
    "Southern",
    "Eastside",
    "Westside",
    "Harbor",
    "Village",
    "Garden",
    "Hilltop",
    "Riverside",
]
NOUNS = [
    "Lantern",
    "Anchor",
    "Oak",
    "Fox",
    "Crown",
    "Bell",
    "Star",
    "Rose",
    "Harvest",
    "Compass",
    "Bridge",
    "Mill",
    "Beacon",
    "Sparrow",
    "Kettle",
    "Spoon",
    "Barrel",
    "Thistle",
    "Pepper",
    "Olive",
    "Maple",
    "Acorn",
    "Feather",
    "Pebble",
    "Orchard",
    "Meadow",
]
SAINTS = [
    "Patrick",
    "Mary",
    "Joseph",
    "Anne",
    "Francis",
    "Michael",
    "Brigid",
    "Finbarr",
    "Jude",
    "Luke",
    "Agnes",
    "Columba",
]
SAINT_KINDS = ["Church", "Cathedral", "School", "Hospital", "Parish Hall", "Academy"]
CHAINS = [
    "Quikmart",
    "Java Junction",
    "Burger Barn",
    "Fresh Foods Market",
    "Quick Lube",
    "Taco Town",
    "Bean There",
    "Pizza Palace",
    "Dollar Depot",
    "Wok Express",
    "Sub Station",
    "Donut Den",
    "Mega Mart",
    "Speedy Wash",
    "Green Leaf Pharmacy",
    "City Bank",
    "Book Nook",
    "Pet Pals",
    "Shoe Stop",
    "Paper Trail",
]
SUITES = [("Suite", "Ste"), ("Unit", "Unit"), ("Floor", "Fl"), ("Apartment", "Apt")]
_KEYBOARD = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class _Entity:
    entity: str
    name: str
    number: int
    street: str  # street name without its suffix
    suffix: int  # index into SUFFIXES
    direction: int | None
    suite: tuple[int, int] | None
    city: int
    lat: float
    lon: float
    phone: str


@dataclass(frozen=True, slots=True)
class Listing:
    """A generated record and the entity it lists (the ground truth)."""

    record: dict[str, Any]
    entity: str


def _offset(lat: float, lon: float, north_m: float, east_m: float) -> tuple[float, float]:
    dlat = north_m / 111_195.0
    dlon = east_m / (111_195.0 * math.cos(math.radians(lat)))
    return lat + dlat, lon + dlon


def _street(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.08:
        return rng.choice(SAINT_STREETS)
    if roll < 0.2:
        return rng.choice(ORDINALS)[0]
    return rng.choice(STREETS)


def _business_name(rng: random.Random, city: int) -> str:
    roll = rng.random()
    kind = rng.choice(KINDS)
    if roll < 0.3:
        return f"{rng.choice(PEOPLE)}'s {kind}"
    if roll < 0.55:
        return f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {kind}"
    if roll < 0.68:
        return f"The {rng.choice(NOUNS)} & {rng.choice(NOUNS)}"
    if roll < 0.8:
        return f"{rng.choice(SURNAMES)} & Sons {kind}"
    if roll < 0.9:
        return f"Saint {rng.choice(SAINTS)}'s {rng.choice(SAINT_KINDS)}"
    return f"{rng.choice(SURNAMES)} {rng.choice(SURNAMES)} {kind}"


def _phone(rng: random.Random) -> str:
    return f"{rng.randint(201, 989)}{rng.randint(200, 999)}{rng.randint(0, 9999):04d}"


def _entities(
    rng: random.Random, count: int, towns: list[tuple[str, float, float]]
) -> Iterator[_Entity]:
    made = 0
    while made < count:
        city = rng.randrange(len(towns))
        _, clat, clon = towns[city]
        roll = rng.random()
        if roll < 0.1:  # a chain: several branches on one street, more elsewhere in town
            name, street, suffix = rng.choice(CHAINS), _street(rng), rng.randrange(len(SUFFIXES))
            base = _offset(clat, clon, rng.uniform(-4000, 4000), rng.uniform(-4000, 4000))
            along = 0.0
            for _ in range(rng.randint(2, 6)):
                along += rng.uniform(250, 700)  # branches a few hundred metres apart
                lat, lon = _offset(*base, 0.0, along)
                number = 100 + int(along / 5) + rng.randint(0, 9)
                yield _Entity(
                    f"e{made}", name, number, street, suffix, None, None, city, lat, lon,
                    _phone(rng),
                )  # fmt: skip
                made += 1
            continue
        street, suffix = _street(rng), rng.randrange(len(SUFFIXES))
        direction = rng.randrange(4) if rng.random() < 0.15 else None
        lat, lon = _offset(clat, clon, rng.uniform(-6000, 6000), rng.uniform(-6000, 6000))
        number = rng.randint(1, 2999)
        tenants = rng.randint(2, 4) if roll < 0.18 else 1  # one building, several businesses
        for tenant in range(tenants):
            suite = (rng.randrange(len(SUITES)), 100 * (tenant + 1)) if tenants > 1 else None
            yield _Entity(
                f"e{made}", _business_name(rng, city), number, street, suffix, direction,
                suite, city, lat, lon, _phone(rng),
            )  # fmt: skip
            made += 1


def _typo(rng: random.Random, text: str) -> str:
    # inside a word, past its first letter: people rarely mistype a word's start
    letters = [i for i in range(1, len(text)) if text[i].isalpha() and text[i - 1].isalpha()]
    if len(letters) < 3:
        return text
    at = rng.choice(letters)
    kind = rng.randrange(4)
    if kind == 0:
        return text[:at] + text[at + 1 :]
    if kind == 1:
        return text[:at] + rng.choice(_KEYBOARD) + text[at:]
    if kind == 2:
        return text[:at] + rng.choice(_KEYBOARD) + text[at + 1 :]
    return text[: at - 1] + text[at] + text[at - 1] + text[at + 1 :]


def _vary_name(rng: random.Random, name: str, city: str) -> str:
    words = name.split()
    if words[0] == "Saint" and rng.random() < 0.6:
        words[0] = rng.choice(["St.", "St", "ST"])
    if words[0] == "The" and rng.random() < 0.5:
        words = words[1:]
    words = [rng.choice(["and", "&", "+"]) if w == "&" else w for w in words]
    if rng.random() < 0.15 and len(words) >= 2:  # joined words
        at = rng.randrange(len(words) - 1)
        words[at : at + 2] = [words[at] + words[at + 1].lower()]
    if rng.random() < 0.1:  # split word
        long = [i for i, w in enumerate(words) if len(w) >= 7]
        if long:
            i = rng.choice(long)
            cut = rng.randint(3, len(words[i]) - 3)
            words[i : i + 1] = [words[i][:cut], words[i][cut:].capitalize()]
    if rng.random() < 0.08 and len(words) >= 3:  # reordered
        words = [*words[-1:], *words[:-1]]
    if rng.random() < 0.1:
        words.append(rng.choice([city, f"- {city}", f"({city})"]))
    text = " ".join(words)
    for _ in range(rng.choice([0, 0, 0, 0, 1, 1, 1, 2])):
        text = _typo(rng, text)
    style = rng.random()
    return text.upper() if style < 0.08 else text.lower() if style < 0.14 else text


def _address(rng: random.Random, entity: _Entity, varied: bool) -> str:
    street = entity.street
    for long, short in ORDINALS:
        if street == long and varied and rng.random() < 0.5:
            street = short
    if street.startswith("Saint ") and varied and rng.random() < 0.6:
        street = "St " + street[6:]
    long, shorts = SUFFIXES[entity.suffix]
    suffix = rng.choice(shorts) if varied and rng.random() < 0.6 else long
    parts = [str(entity.number)]
    if entity.direction is not None:
        name, short = DIRECTIONS[entity.direction]
        parts.append(short if varied and rng.random() < 0.5 else name)
    parts += [street, suffix]
    if entity.suite is not None and (not varied or rng.random() < 0.8):
        unit, number = entity.suite
        label = SUITES[unit][1] if varied and rng.random() < 0.5 else SUITES[unit][0]
        parts += [("#" if varied and rng.random() < 0.2 else label), str(number)]
    text = " ".join(parts)
    if varied and rng.random() < 0.12:
        text = _typo(rng, text)
    return text


def _phone_format(rng: random.Random, digits: str) -> str:
    a, b, c = digits[:3], digits[3:6], digits[6:]
    return rng.choice(
        [f"({a}) {b}-{c}", f"{a}-{b}-{c}", f"+1 {a} {b} {c}", f"{a}.{b}.{c}", f"1-{a}-{b}-{c}"]
    )


def _record(
    rng: random.Random, entity: _Entity, index: int, first: bool, flavour: str, city: str
) -> dict[str, Any]:
    source = "atlas" if rng.random() < 0.5 else "yellow"
    record: dict[str, Any] = {
        "id": f"r{index}",
        "url": f"https://{source}.example/listing/{index}",
        "source": source,
        "name": entity.name if first else _vary_name(rng, entity.name, city),
    }
    if first or rng.random() > 0.08:
        record["address"] = _address(rng, entity, varied=not first)
    if first or rng.random() > 0.05:
        shown = city
        if city.startswith("Saint ") and rng.random() < 0.5:
            shown = "St. " + city[6:]
        if city.startswith("Fort ") and rng.random() < 0.5:
            shown = "Ft " + city[5:]
        if city.startswith("Mount ") and rng.random() < 0.5:
            shown = "Mt. " + city[6:]
        record["city"] = shown.upper() if rng.random() < 0.1 else shown
    if flavour == "coords" and (first or rng.random() > 0.1):
        moved = rng.uniform(0, 60) if not first else 0.0
        bearing = rng.uniform(0, 2 * math.pi)
        lat, lon = _offset(
            entity.lat, entity.lon, moved * math.cos(bearing), moved * math.sin(bearing)
        )
        record["latitude"], record["longitude"] = round(lat, 6), round(lon, 6)
    if rng.random() < 0.7:
        record["phone"] = _phone_format(rng, entity.phone)
    return record


def generate(
    count: int, seed: int = 1, flavour: str = "coords", rich: bool = False
) -> list[Listing]:
    """About ``count`` listings (shuffled) with their entity ids. ``rich`` adds a description
    and a price (``extras``), drawn apart: the other fields are the same as without."""
    if flavour not in ("coords", "plain"):
        raise ValueError(f"flavour={flavour!r}: use coords or plain")
    rng = random.Random(seed)
    extra_rng = random.Random(f"{seed}/extras")
    listings: list[Listing] = []
    towns = towns_for(count)
    entities = _entities(rng, count, towns)
    while len(listings) < count:
        entity = next(entities)
        copies = 1 + (min(4, int(rng.expovariate(1.0))) if rng.random() < 0.45 else 0)
        details = None
        if rich:  # a chain's branches share their description and prices
            key = entity.name if entity.name in CHAINS else entity.entity
            street = f"{entity.street} {SUFFIXES[entity.suffix][0]}"
            details = details_of(key, seed, entity.name, towns[entity.city][0], street)
        for copy in range(copies):
            record = _record(rng, entity, len(listings), copy == 0, flavour, towns[entity.city][0])
            if details is not None:
                add_extras(record, details, copy == 0, extra_rng)
            listings.append(Listing(record, entity.entity))
    rng.shuffle(listings)
    return listings[:count]
