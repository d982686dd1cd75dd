"""Fitting item mode's model to a state's items, and scoring every item again under it.

The model (``core.items.model``) is learned from a sample: the stored items with the
smallest doc ids (hashes of their item ids: a sample that does not depend on arrival order),
at most ``FIT_SAMPLE`` of them, in id order. A fit is due when the state has no fitted
model, or when it holds at least twice the items the model was fitted on and the sample can
still grow (``fit_due``); the embedded run fits before its first batch on the records it is
about to read, and again at its end when one is due; a Kafka detector at the end of a batch
when one is due; ``neardup fit`` whenever asked.

A new model changes every item's keys and every pair's score, so a fit is followed by a
rescoring, in the same transaction: the key index and the graph of matches are emptied,
every item is matched again in id order (as if it arrived then), and the clusters are cut
again from the new graph, with ``cluster_merged`` and ``cluster_split`` events for what
changed. Given a model, the clusters are a function of the items alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import MappingProxyType

from neardup.core import AbandonedError
from neardup.core.items.comparing import Elsewhere
from neardup.core.items.fit import fit
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.state import State, StateView
from neardup.state.items import item_doc_id
from threadpoolctl import threadpool_limits

from .events import ClusterMerged, Event
from .items import ItemScoring, _Batch, number_events
from .result import BatchResult, Stage

__all__ = [
    "FIRST_FIT",
    "FIT_SAMPLE",
    "fit_due",
    "fit_model",
    "item_count",
    "refit",
    "regroup_all",
]

#: items a model is fitted on at most
FIT_SAMPLE = 20_000
#: items a state needs before a Kafka detector fits its first model
FIRST_FIT = 1_000
#: items matched again per chunk of a rescoring
_CHUNK = 1024


def fit_due(items: int, model: ItemModel | None, least: int = 2) -> bool:
    """Whether a state of ``items`` items should fit its model again: none fitted yet (and
    at least ``least`` items), or twice the items the model knows and room in the sample."""
    if model is None or not model.fitted:
        return items >= least
    return model.items < FIT_SAMPLE and items >= 2 * model.items


def item_count(state: State) -> int:
    """The items a state holds (arrived, not removed)."""
    counters = state.view().counters
    return counters.get("documents") - counters.get("items_removed")


def fit_model(
    schema: ItemSchema,
    items: Sequence[PreparedItem],
    should_stop: Callable[[], bool] | None = None,
    elsewhere: Callable[[Sequence[PreparedItem]], Elsewhere] | None = None,
) -> ItemModel:
    """The model of a sample: the items with the smallest doc ids, in id order.
    ``elsewhere``: given the sample, where some of its pairs are compared (``fit``)."""
    ordered = sorted(items, key=lambda item: item_doc_id(item.id))
    sample = _distinct(ordered[:FIT_SAMPLE])
    return _fit(schema, sample, should_stop, None if elsewhere is None else elsewhere(sample))


def _fit(
    schema: ItemSchema,
    sample: Sequence[PreparedItem],
    should_stop: Callable[[], bool] | None,
    elsewhere: Elsewhere | None = None,
) -> ItemModel:
    # one BLAS thread: a run's other process (preparing the next items) holds the other
    # core, and a BLAS thread waiting for a busy core spins (the calibration's regression:
    # 5 s of febrl4's fit with two threads, 0.1 s with one)
    with threadpool_limits(limits=1, user_api="blas"):
        return fit(schema, sample, should_stop=should_stop, elsewhere=elsewhere)


def _distinct(items: Sequence[PreparedItem]) -> list[PreparedItem]:
    """One item of each set of values (copies say nothing of how a match's fields differ,
    and a thousand copies would bring half a million pairs), in the order given."""
    seen: set[bytes] = set()
    kept = []
    for item in items:
        values = PreparedItem("", None, item.values).encode()
        if values not in seen:
            seen.add(values)
            kept.append(item)
    return kept


def refit(
    state: State,
    schema: ItemSchema,
    model: ItemModel | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[StateView, BatchResult, ItemModel]:
    """Fit the model to the state's items (or take ``model``) and score them all again: the
    view, uncommitted (the caller commits it), what changed, and the model. ``should_stop``:
    asked between chunks; when it says so, ``AbandonedError`` is raised and nothing is kept."""
    view = state.view()
    started = time.perf_counter()
    ids = view.items.all_ids()
    if model is None:
        sample = [item for item in view.items.get_many(ids[:FIT_SAMPLE]) if item is not None]
        model = _fit(schema, _distinct(sample), should_stop)
    view.items.put_model(model)
    for table in ("itemkeys", "edges"):
        for key in list(state.store.keys(table)):
            view.tx.delete(table, key)
    scoring = ItemScoring(schema, model)
    candidates = pairs = 0
    for start in range(0, len(ids), _CHUNK):
        if should_stop is not None and should_stop():
            raise AbandonedError
        chunk = [item for item in view.items.get_many(ids[start : start + _CHUNK]) if item]
        batch = _Batch(view, scoring, chunk, rescoring=True)
        for at, item in enumerate(chunk):
            batch.add(at, item)
        batch.post()
        candidates += batch.candidates
        pairs += batch.pairs
    events, gauges = regroup_all(view, scoring, ids)
    merges = sum(1 for event in events if isinstance(event, ClusterMerged))
    timing: dict[Stage, float] = {"verify": time.perf_counter() - started}
    result = BatchResult(
        events=number_events(view, events),
        merges=merges,
        splits=len(events) - merges,
        candidates=candidates,
        pairs_estimated=pairs,
        stage_seconds=MappingProxyType(timing),
    )
    view.counters.add_many(result.counter_increments())
    view.counters.add_many(gauges)
    view.counters.add("item_fits", 1)
    return view, result, model


def regroup_all(
    view: StateView, scoring: ItemScoring, ids: Sequence[int]
) -> tuple[list[Event], dict[str, int]]:
    """Every cluster cut again from the graph: a ``cluster_split`` for each that came apart
    and a ``cluster_merged`` for each that another took in; and the cluster gauges' changes."""
    batch = _Batch(view, scoring, [])
    after, old_roots = batch.regroup(set(ids))
    batch.tell_merges(after, old_roots, set(), {})
    return batch.events, batch.gauges
