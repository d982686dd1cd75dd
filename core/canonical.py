"""Canonical form: a page becomes text, then a sequence of 64-bit token hashes.

Markup, scripts and styles are removed with a real HTML5 parser (Lexbor, via selectolax),
entities decoded, case folded with ``str.casefold``; tokens are maximal runs of Unicode
letters and digits (the characters of the regex ``[^\\W_]``), or single letters/digits in
character mode. Everything else (punctuation, white space, symbols) separates tokens and is
otherwise ignored.

Tokens are hashed for a whole batch at once: the batch is one UTF-32 array, token boundaries
come from a lookup table, and each token's hash is a polynomial of its code points computed
from one prefix sum (mod 2**64, divided out with the inverse power), then mixed. No Python
code runs per token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from selectolax.lexbor import LexborHTMLParser

from ._hashing import U64, PowerTable, fmix64, seeded_constant
from .settings import TokenUnit

__all__ = ["TokenBatch", "Tokenizer", "html_to_text", "looks_like_html", "to_canonical_text"]

_DROPPED_ELEMENTS = ["script", "style", "noscript", "template", "svg"]
_HTML_SNIFF = re.compile(
    r"<\s*(?:!doctype\s+html|html|head|body|title|meta|div|p|br|span|a|table|ul|li|h[1-6])\b",
    re.IGNORECASE,
)
# Purposes of seeded constants in this module (see _hashing.seeded_constant).
_TOKEN_BASE, _TOKEN_MIX = 1, 2


def looks_like_html(content: str, content_type: str = "") -> bool:
    """True if the declared type says HTML, or, with no usable type, the text starts like markup."""
    declared = content_type.lower()
    if "html" in declared or "xml" in declared:
        return True
    if declared and not declared.startswith("application/octet-stream"):
        return False
    head = content[:2048].lstrip()
    return head.startswith("<") and _HTML_SNIFF.search(head) is not None


def html_to_text(html: str) -> str:
    """The visible text of an HTML document, with scripts, styles and templates dropped."""
    tree = LexborHTMLParser(html)
    tree.strip_tags(_DROPPED_ELEMENTS)
    root = tree.root
    return "" if root is None else str(root.text(separator=" "))


def to_canonical_text(content: str, content_type: str = "") -> str:
    """Markup removed (when the content is HTML) and case folded."""
    text = html_to_text(content) if looks_like_html(content, content_type) else content
    return text.casefold()


@lru_cache(maxsize=1)
def _alnum_table() -> npt.NDArray[np.bool_]:
    """A lookup table over all code points: is it a letter or digit (``[^\\W_]``)?"""
    every_code_point = "".join(map(chr, range(0x110000)))
    table = np.zeros(0x110000, dtype=np.bool_)
    for match in re.finditer(r"[^\W_]+", every_code_point):
        table[match.start() : match.end()] = True
    return table


@dataclass(frozen=True, slots=True)
class TokenBatch:
    """Token hashes of a batch of documents: document i owns ``hashes[offsets[i]:offsets[i+1]]``."""

    hashes: U64
    offsets: npt.NDArray[np.int64]

    def of(self, index: int) -> U64:
        return self.hashes[self.offsets[index] : self.offsets[index + 1]]


class Tokenizer:
    """Turns canonical texts into token hashes, a whole batch per call."""

    def __init__(self, seed: int, unit: TokenUnit = "word") -> None:
        self.unit = unit
        self._powers = PowerTable(seeded_constant(seed, _TOKEN_BASE, odd=True))
        self._mix = np.uint64(seeded_constant(seed, _TOKEN_MIX))

    def hash_batch(self, texts: list[str]) -> TokenBatch:
        if not texts:
            return TokenBatch(np.zeros(0, np.uint64), np.zeros(1, np.int64))
        # A NUL between documents is not a letter or digit, so no token spans two documents.
        joined = "\x00".join(texts)
        code_points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        is_token_char = _alnum_table()[code_points]
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        doc_starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]])
        if self.unit == "character":
            positions = np.flatnonzero(is_token_char)
            hashes = fmix64(code_points[positions].astype(np.uint64) ^ self._mix)
        else:
            positions, hashes = self._word_hashes(code_points, is_token_char)
        owner = np.searchsorted(doc_starts, positions, side="right") - 1
        counts = np.bincount(owner, minlength=len(texts))
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return TokenBatch(hashes, offsets)

    def _word_hashes(
        self, code_points: npt.NDArray[np.uint32], is_token_char: npt.NDArray[np.bool_]
    ) -> tuple[npt.NDArray[np.intp], U64]:
        size = len(code_points)
        previous = np.concatenate([[False], is_token_char[:-1]])
        following = np.concatenate([is_token_char[1:], [False]])
        starts = np.flatnonzero(is_token_char & ~previous)
        ends = np.flatnonzero(is_token_char & ~following) + 1
        self._powers.ensure(size + 1)
        weighted = (code_points.astype(np.uint64) + np.uint64(1)) * self._powers.forward[:size]
        weighted[~is_token_char] = 0
        prefix = np.concatenate([np.zeros(1, np.uint64), np.cumsum(weighted, dtype=np.uint64)])
        # sum of c_i * p**i over the token, shifted to start at p**0
        polynomial = (prefix[ends] - prefix[starts]) * self._powers.backward[starts]
        lengths = (ends - starts).astype(np.uint64)
        return starts, fmix64(polynomial ^ (lengths * np.uint64(0x9E3779B97F4A7C15)) ^ self._mix)
