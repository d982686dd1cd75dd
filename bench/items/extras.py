"""A description (longtext) and a price (number) for generated listings.

Each business gets a few sentences and a typical price, drawn from its own seed; a chain's
branches share them (corporate boilerplate, one price list), which makes descriptions a weak
signal on purpose. A listing copies the description, drops or reorders sentences, appends a
site's own line or is rewritten from other sentences altogether (another source's writer);
the price is the same, rounded, or updated by a few percent. Either may be missing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

__all__ = ["Details", "add_extras", "details_of"]

_OPENERS = [
    "{name} is a family run business in {city}, owned by {owner} since {year}.",
    "Welcome to {name}, serving {city} from {street} since {year}.",
    "{owner} opened {name} on {street} in {year}.",
    "Locals have trusted {name} of {city} for over {age} years.",
    "Find {name} at {street}, a short walk from downtown {city}.",
]
_MIDDLES = [
    "{owner} and the team are known for {thing} and {other}.",
    "Our {adj} {thing} is a favourite with regulars from {street}.",
    "Ask about the {thing}, made the way {owner} learned it.",
    "Everything at {name} is prepared on site: try the {thing}.",
    "Since {year} we have added {other} and {thing} to the menu.",
    "Regulars come back for the {adj} {other} and the {thing}.",
    "The {adj} staff of {name} will help you choose {other}.",
    "We renovated in {renovated} to make room for {thing}.",
]
_CLOSERS = [
    "Open seven days a week with free parking nearby.",
    "Call ahead for group bookings and special requests.",
    "Gift cards are available at the counter.",
    "We accept all major cards and contactless payment.",
    "Follow us online for seasonal offers.",
]
_SITE_LINES = [
    "Listing verified by our editors.",
    "Claim this business to update its details.",
    "Reviews and photos are shared by visitors.",
]
_ADJECTIVES = [
    "friendly",
    "experienced",
    "careful",
    "generous",
    "relaxed",
    "reliable",
    "cheerful",
    "skilled",
    "welcoming",
    "quick",
    "honest",
    "modern",
    "famous",
    "seasonal",
    "homemade",
    "award winning",
    "traditional",
    "signature",
]
_THINGS = [
    "breakfast menu",
    "lunch specials",
    "house blend",
    "weekend brunch",
    "repairs",
    "tasting menu",
    "fresh bread",
    "craft selection",
    "gift boxes",
    "catering",
    "custom orders",
    "daily specials",
    "late hours",
    "loyalty card",
    "home delivery",
    "garden terrace",
    "private room",
    "kids corner",
    "vegan options",
    "local beers",
    "express service",
    "same day pickup",
    "free estimates",
    "walk in service",
    "fitting service",
    "warranty work",
    "classic recipes",
    "live music",
    "quiz night",
    "market stall",
    "cooking classes",
    "wine list",
    "espresso bar",
    "pastry counter",
]
_OWNERS = [
    "Joe",
    "Maria",
    "Frank",
    "Lucy",
    "Omar",
    "Priya",
    "Hans",
    "Olga",
    "Pedro",
    "Mei",
    "Kofi",
    "Nora",
    "Hugo",
    "Lena",
    "Theo",
    "Ruth",
    "Walt",
    "Ida",
    "Otto",
    "Vera",
]
_SURNAMES = [
    "Murphy",
    "Kelly",
    "Russo",
    "Nguyen",
    "Patel",
    "Schmidt",
    "Garcia",
    "Novak",
    "Silva",
    "Haddad",
    "Okafor",
    "Tanaka",
    "Larsen",
    "Duffy",
    "Weber",
    "Byrne",
]


@dataclass(frozen=True, slots=True)
class Details:
    """One business's description sentences (two sets: two writers) and typical price."""

    sentences: tuple[str, ...]
    rewrite: tuple[str, ...]
    price: float


def _sentences(rng: random.Random, name: str, city: str, street: str) -> tuple[str, ...]:
    year = rng.randint(1950, 2020)
    fill = {
        "name": name,
        "city": city,
        "street": street,
        "year": year,
        "age": 2024 - year,
        "renovated": rng.randint(year, 2023),
        "owner": f"{rng.choice(_OWNERS)} {rng.choice(_SURNAMES)}",
    }
    chosen = [rng.choice(_OPENERS)]
    chosen += rng.sample(_MIDDLES, rng.randint(2, 4))
    chosen += rng.sample(_CLOSERS, rng.randint(0, 2))
    return tuple(
        s.format(
            **fill,
            adj=rng.choice(_ADJECTIVES),
            thing=rng.choice(_THINGS),
            other=rng.choice(_THINGS),
        )
        for s in chosen
    )


def details_of(key: str, seed: int, name: str, city: str, street: str) -> Details:
    """The details of the business ``key`` (a chain's name for its branches)."""
    rng = random.Random(f"{seed}/{key}")
    price = round(rng.lognormvariate(3.0, 0.8), 2)
    return Details(_sentences(rng, name, city, street), _sentences(rng, name, city, street), price)


def add_extras(record: dict[str, Any], details: Details, first: bool, rng: random.Random) -> None:
    """Add a description and a price to a generated record (in place)."""
    if first or rng.random() < 0.75:
        roll = rng.random()
        if first or roll < 0.4:
            text = list(details.sentences)
        elif roll < 0.75:
            text = [s for s in details.sentences if rng.random() < 0.75] or [details.sentences[0]]
            if rng.random() < 0.3:
                rng.shuffle(text)
        else:
            text = list(details.rewrite)
        if not first and rng.random() < 0.3:
            text.append(rng.choice(_SITE_LINES))
        record["description"] = " ".join(text)
    if first or rng.random() < 0.7:
        roll = rng.random()
        price = details.price
        if not first and roll < 0.3:
            price = float(round(price))
        elif not first and roll < 0.5:
            price = round(price * rng.uniform(0.9, 1.15), 2)
        record["price"] = price if rng.random() < 0.8 else f"{price}"
