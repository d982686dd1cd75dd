"""What item mode has learned from the data: a Fellegi-Sunter model of matching, and counts.

For each comparison (``compare.py``) and each of its levels, m is the share of matching
pairs at that level and u the share of non-matching ones; a pair's match weight is the sum
over its comparisons of log2(m / u) at its levels, plus the prior log2-odds that two items
of the corpus match. Its match probability is 1 / (1 + 2^-weight), and it is a match at the
schema's threshold or above. An exact agreement is weighed by how common its value is
(u is then the value's own share of the items: equal rare names say more than equal common
ones).

The counts are those of a sample of the items (``fit.py``): per text field, how many items
hold each word (the rarity weights of ``compare.py``, and the order of the keys), per
exact comparison how many hold each value, and how many hold each code.

Before any fit, ``ItemModel.prior_of`` gives every comparison weights shaped by the schema's
field weights and every word the same rarity: the model that scores the first items.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from .compare import LEVELS, comparisons_of
from .schema import ItemSchema

__all__ = ["MODEL_VERSION", "Counts", "ItemModel"]

MODEL_VERSION = 1
U64 = npt.NDArray[np.uint64]


class Counts(msgspec.Struct, frozen=True, array_like=True):
    """How many of ``total`` sampled items hold each term (hashes sorted, counts aligned)."""

    total: int = 0
    hashes: bytes = b""
    counts: bytes = b""

    @classmethod
    def of(cls, total: int, counted: dict[int, int]) -> Counts:
        keys = np.array(sorted(counted), dtype=np.uint64)
        values = np.array([counted[int(key)] for key in keys], dtype=np.uint32)
        return cls(total, keys.tobytes(), values.tobytes())

    def as_dict(self) -> dict[int, int]:
        keys = np.frombuffer(self.hashes, dtype=np.uint64)
        values = np.frombuffer(self.counts, dtype=np.uint32)
        return dict(zip(keys.tolist(), values.tolist(), strict=True))


class ItemModel(msgspec.Struct, frozen=True):
    """The fitted model (or the prior). ``comparisons`` names them, as ``compare`` does."""

    comparisons: tuple[str, ...]
    m: tuple[tuple[float, ...], ...]
    u: tuple[tuple[float, ...], ...]
    #: log2 odds that two items of the corpus match, before their comparisons are seen
    prior: float
    #: items the model was fitted on (0: the schema's prior, fitted on nothing)
    items: int = 0
    #: per field (aligned with the schema's fields): items holding each word
    words: tuple[Counts, ...] = ()
    #: per comparison: items holding each whole value (exact agreements)
    values: tuple[Counts, ...] = ()
    #: items holding each code
    codes: Counts = Counts()
    #: per comparison, the scale of its evidence for and against a match (``calibration.py``)
    scales: tuple[tuple[float, float], ...] = ()
    #: keys a candidate shares with an item, at least, to be verified (unless none shares
    #: as many): fewer miss about none of the matches (``fit.py``)
    least_shared: int = 1
    #: (X, Y, bits): comparison Y's evidence for a match, less these bits where the pair
    #: agrees on comparison X's value, a series' (``series.py``)
    series: tuple[tuple[int, int, float], ...] = ()
    version: int = MODEL_VERSION

    @property
    def fitted(self) -> bool:
        return self.items > 0

    def words_of(self, field: int) -> Counts:
        """Field ``field``'s word counts (none for a model made by hand)."""
        return self.words[field] if field < len(self.words) else Counts()

    def values_of(self, comparison: int) -> Counts:
        """Comparison ``comparison``'s value counts (none for a model made by hand)."""
        return self.values[comparison] if comparison < len(self.values) else Counts()

    def encode(self) -> bytes:
        return _ENCODER.encode(self)

    @staticmethod
    def decode(raw: bytes) -> ItemModel:
        return _DECODER.decode(raw)

    def matches(self, schema: ItemSchema) -> bool:
        """Whether the model was made for this schema's comparisons."""
        return self.comparisons == tuple(c.name for c in comparisons_of(schema))

    @classmethod
    def prior_of(cls, schema: ItemSchema) -> ItemModel:
        """A model from the schema alone: each field's agreement worth more with its weight,
        disagreement a little against; the prior odds those of 1 match in 1,000 pairs."""
        comparisons = comparisons_of(schema)
        mean = schema.total_weight / len(schema.fields)
        ms, us = [], []
        for comparison in comparisons:
            levels = LEVELS[comparison.kind]
            weight = (
                schema.fields[comparison.field].weight if comparison.field >= 0 else mean
            ) / mean
            m, u = _prior_levels(levels, weight, comparison.kind in ("numbers", "codes"))
            ms.append(m)
            us.append(u)
        return cls(
            tuple(c.name for c in comparisons),
            tuple(ms),
            tuple(us),
            prior=math.log2(1e-3),
            words=tuple(Counts() for _ in schema.fields),
            values=tuple(Counts() for _ in comparisons),
        )


def _prior_levels(
    levels: int, weight: float, minor: bool
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """m rising and u falling with the level, steeper for heavier fields: at the top level a
    field of mean weight is worth about 8 bits, at the bottom about -3."""
    steep = (0.5 if minor else 1.0) * weight
    rank = np.arange(levels, dtype=float) / max(1, levels - 1)
    m = np.exp2(4.0 * steep * rank)
    u = np.exp2(-4.0 * steep * rank + 3.0 * steep * (1.0 - rank))
    return _normal(m), _normal(u)


def _normal(values: Sequence[float] | np.ndarray) -> tuple[float, ...]:
    array = np.asarray(values, dtype=float)
    return tuple(float(x) for x in array / array.sum())


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(ItemModel)
