"""The fit's pairs compared in bulk, here or part of them elsewhere.

A fit (``fit.py``) compares a hundred thousand pairs of its sample and more, one at a time in
Python: its candidates, random pairs, a drawn sample of the other candidates. A pair's levels
depend on the model's counts alone (word weights, common codes), not on what is learned
from them, so a caller with a second core idle (the embedded run's prepare process, before
its first batch) can compare some of them there: ``Elsewhere`` sends pairs and the counts,
and the levels come back as they would have been computed here.

``Comparing`` sends pairs there as soon as they are known (``later``: random pairs, drawn
candidates, needed at the fit's end), and whatever this process waits for, it compares
itself the part not started there (``now``: the candidates, needed at once). Without
``Elsewhere``, everything is compared here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from .model import ItemModel
from .prepare import PreparedItem
from .schema import ItemSchema
from .scorer import ItemFeatures, Scorer

__all__ = ["Awaited", "Compared", "Comparing", "Elsewhere", "Here", "compared", "comparer_of"]

I8 = npt.NDArray[np.int8]
#: pairs' levels (a row each) and their similarity (``similarity``: what ranks candidates)
Compared = tuple[I8, npt.NDArray[np.float64]]
#: pairs fewer than this are compared here at once (a trip elsewhere costs more)
_WORTH_SENDING = 2048


#: pairs compared here (by position in the sample)
Here = Callable[[Sequence[tuple[int, int]]], Compared]


class Awaited(Protocol):
    """Pairs sent elsewhere. Calling waits for them; the part not started there by then is
    compared ``here`` instead (the two sides share the work whatever each one's speed).
    ``cancel`` drops what has not started."""

    def __call__(self, here: Here) -> Compared: ...

    def cancel(self) -> None: ...


#: pairs of the sample (by position) sent elsewhere, to be compared under a model's counts
Elsewhere = Callable[[ItemModel, Sequence[tuple[int, int]]], Awaited]


def similarity(schema: ItemSchema, scores: dict[str, float]) -> float:
    """The schema-weighted mean of a pair's field similarities: what ranks an item's
    candidates before anything is learned (a name shared by a chain's branches is not
    enough)."""
    total = weight = 0.0
    for spec in schema.fields:
        if spec.name in scores:
            total += spec.weight * scores[spec.name]
            weight += spec.weight
    return total / weight if weight else 0.0


def compared(
    scorer: Scorer, features: Sequence[ItemFeatures], pairs: Iterable[tuple[int, int]]
) -> Compared:
    """The pairs' levels and similarities."""
    found = [scorer.compare(features[a], features[b]) for a, b in pairs]
    levels = np.array([row for row, _ in found], dtype=np.int8)
    similarities = np.array([similarity(scorer.schema, scores) for _, scores in found])
    return levels.reshape(len(found), len(scorer.comparisons)), similarities


def comparer_of(
    schema: ItemSchema, model: ItemModel, items: Sequence[PreparedItem]
) -> Callable[[Sequence[tuple[int, int]]], Compared]:
    """``compared`` for pairs of ``items`` under ``model``'s counts: what ``Elsewhere``
    runs where it runs."""
    return Comparing(schema, model, items, iter, None).now


class Comparing:
    """The fit's comparisons under one model's counts (``each`` wraps the loops, to look
    for a stop)."""

    def __init__(
        self,
        schema: ItemSchema,
        model: ItemModel,
        items: Sequence[PreparedItem],
        each: Callable[[Iterable[tuple[int, int]]], Iterable[tuple[int, int]]],
        elsewhere: Elsewhere | None,
    ) -> None:
        self.scorer = Scorer(schema, model)
        self._items = items
        self._each = each
        self._elsewhere = elsewhere
        self._features: list[ItemFeatures] | None = None
        self._sent: list[Awaited] = []

    @property
    def features(self) -> list[ItemFeatures]:
        """Each item readied (made at the first use, after ``later`` has sent work away)."""
        if self._features is None:
            self._features = [self.scorer.features(item.values) for item in self._items]
        return self._features

    def later(self, pairs: Sequence[tuple[int, int]]) -> Callable[[], Compared]:
        """The pairs sent elsewhere now (compared here when there is no elsewhere); calling
        the result waits for them, and compares here what has not started there."""
        if self._elsewhere is None or len(pairs) < _WORTH_SENDING:
            return lambda: self._here(pairs)
        sent = self._elsewhere(self.scorer.model, pairs)
        self._sent.append(sent)
        return lambda: sent(self._here)

    def now(self, pairs: Sequence[tuple[int, int]]) -> Compared:
        """The pairs compared, here and elsewhere at once if there is an elsewhere."""
        return self.later(pairs)()

    def _here(self, pairs: Sequence[tuple[int, int]]) -> Compared:
        return compared(self.scorer, self.features, self._each(pairs))

    def cancel(self) -> None:
        """What was sent and has not started, dropped (the counts changed)."""
        for sent in self._sent:
            sent.cancel()
