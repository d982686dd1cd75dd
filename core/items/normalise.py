"""Normalised values and tokens of item fields.

Text: markup removed (Lexbor, as for pages), case folded, accents removed (NFKD), "&" read as
"and", possessive "'s" and apostrophes dropped ("Joe's" -> "joe", "O'Brien" -> "obrien"),
punctuation removed; words are maximal runs of letters and digits. Each word is replaced by
its canonical form (``synonyms.SynonymTable``), stop words are dropped and the other words
are stemmed with Snowball (PyStemmer; canonical forms and numbers are kept as they are).

A text has two token sets. Its word tokens: each word's first ``WORD_PREFIX`` letters (a
number whole), so that a typo past a word's third letter, a plural or a longer form keeps the
token ("Insurnace" and "Insurance", "Pizza" and "Pizzeria" both "ins", "piz"); numbers stay
whole because "12" and "1200" are different houses. Its n-grams: the character n-grams of each
word padded with "^" and "$" (so a typo costs a few n-grams, not the word). Measured on the
bench corpora (bench/items/README.md) against whole words and n-grams across joined words.
Tokens are 32-bit hashes (xxh3, tagged by kind), small to store; a chance collision between
two of an item's tokens is negligible for a similarity.

Street suffixes and unit designators (``St``, ``Suite``) are no word tokens. The others are
kept in the key order: tokens of the synonym table's other canonical forms (directionals,
ordinals, "saint") and one-letter tokens last, each group by hash. Keys take a text's first
word tokens; the common ones would bring many candidates. Measured: F1 -0.003 on listings
without coordinates, a word token fewer in most addresses.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from functools import lru_cache

import Stemmer
import xxhash

from ..canonical import html_to_text
from .schema import IdentifierKind
from .synonyms import STOP_WORDS, SynonymTable, fold_word

__all__ = [
    "GRAM_SIZE",
    "PHONE_DIGITS",
    "SHINGLE_SIZE",
    "WORD_PREFIX",
    "TextNormaliser",
    "char_grams",
    "fold_text",
    "gram_tokens",
    "normalise_identifier",
    "raw_words",
    "shingle_tokens",
    "token_hash",
    "word_token",
]

#: n of the character n-grams of text fields (chosen by measurement: bench/items/README.md)
GRAM_SIZE = 2
#: letters of a word kept in its word token (numbers are kept whole)
WORD_PREFIX = 3
# synonym table sections whose words are no word tokens: most addresses have one, so they
# would only bring candidates (they stay in the n-grams)
_MINOR_KINDS = frozenset({"suffix", "unit"})
#: w of the word shingles of longtext fields (as pages are shingled, shorter: descriptions are)
SHINGLE_SIZE = 3

_WORD = re.compile(r"[^\W_]+")
# apostrophes: ASCII, right single quotation mark, grave and acute accents
_QUOTES = "'\u2019`\u00b4"
_POSSESSIVE = re.compile(rf"[{_QUOTES}]s\b")
_APOSTROPHE = re.compile(rf"(?<=[^\W_])[{_QUOTES}](?=[^\W_])")
_MARKUP = re.compile(r"<[A-Za-z!/]")
_NOT_DIGIT = re.compile(r"\D")
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*://")
_NOT_CODE = re.compile(r"[^\w]|_")
#: phone numbers are compared on their last digits: long enough to identify a line, short
#: enough to ignore country codes and trunk prefixes ("+353 21 ..." and "021 ...")
PHONE_DIGITS = 9


def fold_text(text: str) -> str:
    """Markup removed (when the text has tags), accents removed, case folded."""
    if _MARKUP.search(text):
        text = html_to_text(text)  # decodes entities too
    elif "&" in text:
        text = html.unescape(text)
    return fold_word(text)


def raw_words(text: str) -> list[str]:
    """The folded words of a text, before synonyms, stop words and stemming."""
    folded = fold_text(text).replace("&", " and ")
    folded = _APOSTROPHE.sub("", _POSSESSIVE.sub("", folded))
    return _WORD.findall(folded)


class TextNormaliser:
    """Words of a text in canonical form: synonyms, stop words, Snowball stemming."""

    def __init__(self, table: SynonymTable, language: str = "english") -> None:
        self._table = table
        self._canonical_forms = frozenset(table.canonical.values())
        # decided on the token, not the word: the key order must be one order of tokens
        self._common = frozenset(word_token(form) for form in self._canonical_forms)
        self._minor = frozenset(form for form, kind in table.kind.items() if kind in _MINOR_KINDS)
        self._stem = lru_cache(maxsize=65536)(Stemmer.Stemmer(language).stemWord)

    @property
    def table(self) -> SynonymTable:
        return self._table

    def word_tokens(self, words: Sequence[str]) -> list[int]:
        """The distinct word tokens' hashes in the key order: rare tokens first (longer than a
        letter, not a canonical form's), then the common ones, each group by hash. Street
        suffixes and unit designators are left out (unless they are all the text has)."""
        tokens = {word_token(word) for word in words if word not in self._minor}
        if not tokens:
            tokens = {word_token(word) for word in words}
        ranked = sorted(
            (token in self._common or len(token) < 2, token_hash("w", token)) for token in tokens
        )
        return [token for _, token in ranked]

    def words(self, text: str) -> list[str]:
        """The canonical words of a text, in order."""
        out = []
        for word in self._table.apply(raw_words(text)):
            if word in STOP_WORDS:
                continue
            if word in self._canonical_forms or not word.isalpha():
                out.append(word)
            else:
                out.append(self._stem(word))
        return out

    def category(self, text: str) -> str:
        """A category's value: its canonical words (stop words kept), joined by spaces."""
        words = self._table.apply(raw_words(text))
        return " ".join(
            word if word in self._canonical_forms or not word.isalpha() else self._stem(word)
            for word in words
        )


def word_token(word: str) -> str:
    """A word's token: its first ``WORD_PREFIX`` letters, or the whole word if a number."""
    return word if word.isdigit() else word[:WORD_PREFIX]


def char_grams(words: Sequence[str], size: int = GRAM_SIZE) -> list[str]:
    """The character n-grams of each word padded with "^" and "$", in order."""
    return [
        padded[start : start + size]
        for word in words
        for padded in (f"^{word}$",)
        for start in range(len(padded) - size + 1)
    ]


def token_hash(kind: str, value: str) -> int:
    """32-bit hash of a token, tagged by its kind (word, gram, shingle, value)."""
    return xxhash.xxh3_64_intdigest(f"{kind}\x1f{value}".encode()) & 0xFFFFFFFF


def gram_tokens(words: Sequence[str], size: int = GRAM_SIZE) -> list[int]:
    """A text's character n-grams (``char_grams``), as sorted distinct hashes."""
    return sorted({token_hash("g", gram) for gram in char_grams(words, size)})


def shingle_tokens(words: Sequence[str], size: int = SHINGLE_SIZE) -> list[int]:
    """A long text's w-shingles (all of its words when it has fewer), as sorted hashes."""
    if len(words) <= size:
        return [token_hash("s", " ".join(words))] if words else []
    return sorted(
        {token_hash("s", " ".join(words[at : at + size])) for at in range(len(words) - size + 1)}
    )


def normalise_identifier(value: str, kind: IdentifierKind) -> str:
    """An identifier's comparable form: a phone's last digits, a URL's host and path without
    scheme, "www." or trailing slash, a code's letters and digits (case folded)."""
    folded = fold_text(value).strip()
    if kind == "phone":
        digits = _NOT_DIGIT.sub("", folded)
        return digits[-PHONE_DIGITS:]
    if kind == "url":
        bare = _URL_SCHEME.sub("", folded).split("#", 1)[0].split("?", 1)[0]
        return bare.removeprefix("www.").rstrip("/")
    return _NOT_CODE.sub("", folded)
