"""Stage 1 of the pipeline, pure and batched: pages to fingerprints, sketches, super-shingles."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import xxhash

from ._hashing import U64, drop_repeats
from .canonical import Tokenizer, visible_text
from .records import Page
from .settings import Settings
from .shingles import shingle_sets, top_bits
from .sketch import Sketch, sketch_family
from .supershingles import super_shingles

__all__ = ["Fingerprints", "PreparedDoc", "Preparer"]

_NO_SUPER_SHINGLES: U64 = np.zeros(0, dtype=np.uint64)
_NO_SHINGLE_KEYS: npt.NDArray[np.uint32] = np.zeros(0, dtype=np.uint32)


@dataclass(frozen=True, slots=True)
class Fingerprints:
    """The exact-match shortcuts, each 64 bits (``None`` where the document has no tokens).

    * ``raw``: the content's UTF-8 bytes (identical documents);
    * ``canonical``: the canonical token stream (lexically-equivalent documents: they differ
      only in markup, case, punctuation or white space);
    * ``shingle_set``: the set of shingles (shingle-equivalent documents).
    """

    raw: int
    canonical: int | None
    shingle_set: int | None


@dataclass(frozen=True, slots=True, eq=False)
class PreparedDoc:
    """Everything the later stages need to know about one page."""

    page: Page
    doc_id: int
    fingerprints: Fingerprints
    sketch: Sketch
    #: b super-shingles, or none for a document below ``Settings.super_shingle_limit``
    super_shingles: U64
    #: for short documents (below ``Settings.short_limit``), the high 32 bits of their first
    #: ``Settings.short_index_prefix`` shingles (smallest fingerprints first)
    shingle_keys: npt.NDArray[np.uint32]

    @property
    def shingle_count(self) -> int:
        return self.sketch.shingle_count

    @property
    def is_short(self) -> bool:
        """True for a document without super-shingles (too small to be banded)."""
        return bool(len(self.super_shingles) == 0)


class Preparer:
    """Prepares batches of pages with one settings object (keeps its lookup tables warm)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._tokenizer = Tokenizer(settings.seed, settings.token_unit)

    def prepare(self, pages: list[Page]) -> list[PreparedDoc]:
        settings = self.settings
        encoded = [page.content.encode("utf-8") for page in pages]
        # case is folded by the tokenizer, in numpy (the same as str.casefold, without the GIL)
        tokens = self._tokenizer.hash_batch(
            [
                visible_text(page.content, page.content_type, raw)
                for page, raw in zip(pages, encoded, strict=True)
            ]
        )
        sets = shingle_sets(tokens, settings.shingle_size, settings.seed)
        bands = super_shingles(sets, settings)
        family = sketch_family(settings)
        short_limit, super_limit = settings.short_limit, settings.super_shingle_limit
        bounds = tokens.offsets.tolist()
        prepared = []
        for index, page in enumerate(pages):
            shingles = sets[index]
            count = len(shingles)
            stream = tokens.hashes[bounds[index] : bounds[index + 1]]
            prepared.append(
                PreparedDoc(
                    page,
                    page.doc_id,
                    Fingerprints(
                        xxhash.xxh3_64_intdigest(encoded[index]),
                        xxhash.xxh3_64_intdigest(stream.data) if count else None,  # no copies
                        xxhash.xxh3_64_intdigest(shingles.data) if count else None,
                    ),
                    Sketch.from_shingles(shingles, settings, family),
                    bands[index] if count >= super_limit else _NO_SUPER_SHINGLES,
                    drop_repeats(top_bits(shingles[: settings.short_index_prefix(count)]))
                    if 0 < count < short_limit
                    else _NO_SHINGLE_KEYS,
                )
            )
        return prepared
