"""Numbers written as words, read as digits: "fifth" is "5th", "twenty one" is "21", "III"
is "3".

Scraped records write one number both ways ("5th Ave" and "Fifth Avenue", "Five Guys" and
"5 Guys"); the words and their digits must be one token. Cardinals from zero to ninety-nine
(a tens word followed by a unit word is one number) and ordinals from first to ninety-ninth;
larger numbers are written with digits in the records that matter here (house numbers,
model codes), and "hundred" alone is too often a name ("Hundred Acre Wood").

Written by hand: the packages that parse number words (word2number, text2num) read whole
phrases into one value and would turn "one two three" into 123; this reads word by word.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["read_numerals"]

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
_ORDINAL_UNITS = [
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
_ORDINAL_TENS = {
    "twentieth": 20,
    "thirtieth": 30,
    "fortieth": 40,
    "fiftieth": 50,
    "sixtieth": 60,
    "seventieth": 70,
    "eightieth": 80,
    "ninetieth": 90,
}
#: Roman numerals read as numbers ("Warlords III", "Part II"); not the single letters i, v
#: and x, which are words and sizes more often than numbers
_ROMAN = {
    roman: value
    for value, roman in enumerate(
        [
            "-",
            "i",
            "ii",
            "iii",
            "iv",
            "v",
            "vi",
            "vii",
            "viii",
            "ix",
            "x",
            "xi",
            "xii",
            "xiii",
            "xiv",
            "xv",
            "xvi",
            "xvii",
            "xviii",
            "xix",
            "xx",
        ]
    )
    if len(roman) > 1
}
_CARDINAL = {word: value for value, word in enumerate(_UNITS)} | _TENS
_ORDINAL = {word: value for value, word in enumerate(_ORDINAL_UNITS)} | _ORDINAL_TENS


def _ordinal(value: int) -> str:
    if value % 100 in (11, 12, 13):
        return f"{value}th"
    return str(value) + {1: "st", 2: "nd", 3: "rd"}.get(value % 10, "th")


def read_numerals(words: Sequence[str]) -> list[str]:
    """Folded words with number words replaced by digits ("twenty", "first" -> "20", "1st";
    "twenty", "first" -> "21st"); every other word as it is."""
    out: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        following = words[at + 1] if at + 1 < len(words) else ""
        if word in _TENS and 0 < _CARDINAL.get(following, 0) < 10:
            out.append(str(_TENS[word] + _CARDINAL[following]))
            at += 2
            continue
        if word in _TENS and 0 < _ORDINAL.get(following, 0) < 10:
            out.append(_ordinal(_TENS[word] + _ORDINAL[following]))
            at += 2
            continue
        if word in _CARDINAL:
            out.append(str(_CARDINAL[word]))
        elif word in _ROMAN:
            out.append(str(_ROMAN[word]))
        elif word in _ORDINAL:
            out.append(_ordinal(_ORDINAL[word]))
        else:
            out.append(word)
        at += 1
    return out
