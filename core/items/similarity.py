"""The verdict on a pair of items, and the set similarities the comparisons are made of.

* ``jaccard_sorted``: |A ∩ B| / |A ∪ B| of two sets of token hashes (a text's character
  bigrams, ``compare.py``);
* ``sketch_resemblance``: Broder's estimate of the resemblance of two descriptions from their
  bottom-s samples of shingles (MIN_s: of the s smallest values of the union, the share found
  in both; exact below s shingles).

What a pair's comparisons add up to is the model's (``model.py``, ``scorer.py``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["ItemMatch", "jaccard_sorted", "sketch_resemblance"]


@dataclass(frozen=True, slots=True)
class ItemMatch:
    """The verdict on a pair: its match probability, each compared field's similarity
    (fields missing in either item are absent), and whether the probability reaches the
    schema's threshold."""

    score: float
    fields: dict[str, float]
    matched: bool


def jaccard_sorted(a: Collection[int], b: Collection[int]) -> float:
    """|A ∩ B| / |A ∪ B| of two collections of distinct values (0 when either is empty)."""
    if not a or not b:
        return 0.0
    shared = len((a if isinstance(a, frozenset) else set(a)).intersection(b))
    return shared / (len(a) + len(b) - shared)


def sketch_resemblance(a: Sequence[int], b: Sequence[int], size: int) -> float:
    """Broder's estimate from two bottom-``size`` samples (sorted): among the ``size`` smallest
    values of their union, the share present in both."""
    if not a or not b:
        return 0.0
    union = sorted(set(a).union(b))[:size]
    in_a, in_b = set(a), set(b)
    both = sum(1 for value in union if value in in_a and value in in_b)
    return both / len(union)
