"""When the embedded run fits item mode's model (``detection.item_fit``).

Before its first batch, a run on a state without a model reads ahead: it prepares the first
``FIT_SAMPLE`` records of its inputs (files; standard input cannot be read twice) and fits
the model on them, so that every item is matched under it from the first and nothing needs
scoring again. At its end, when a fit is due (the state has doubled since its model's
sample, or it had no model, as after standard input), it fits again and scores every item
again under the new model, in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from itertools import islice

from neardup.core import AbandonedError, Page
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.core.prepared_items import is_tombstone
from neardup.state import State
from neardup.state.items import stored_model

from ..detection import BatchResult
from ..detection.item_fit import FIT_SAMPLE, fit_due, fit_model, item_count, refit
from .fit_work import ComparedInChild
from .inputs import DeadLetter, NumberedLine, iter_numbered_lines
from .prepare_work import Prepared, decode_items, prepare_items_timed

__all__ = ["fit_ahead", "fit_at_end"]

_CHUNK = 1024


def _lines(inputs: Iterable[str], max_bytes: int) -> Iterable[NumberedLine]:
    for name in inputs:
        for line in iter_numbered_lines(name, max_bytes):
            if not isinstance(line, DeadLetter):
                yield line


def fit_ahead(
    state: State,
    schema: ItemSchema,
    inputs: Sequence[str],
    max_bytes: int,
    should_stop: Callable[[], bool] | None = None,
    child: Executor | None = None,
) -> bool:
    """Fit a state without a model on the first records of ``inputs`` (files); whether it
    did. ``should_stop``: asked between chunks and during the fit; when it says so,
    ``AbandonedError`` is raised and no model is stored. ``child``: the run's prepare process
    (one worker), idle until the first batch: it prepares a chunk of the sample whenever it has
    none to do, and compares some of the fit's pairs (``fit_work``)."""
    if not schema.learn or stored_model(state.store) is not None or "-" in inputs:
        return False
    latest: dict[str, PreparedItem] = {}
    lines = islice(_lines(inputs, max_bytes), FIT_SAMPLE)
    chunks: list[Future[Prepared] | Prepared] = []
    schema_json = schema.to_json()
    while chunk := list[Page | bytes]([line.raw for line in islice(lines, _CHUNK)]):
        if should_stop is not None and should_stop():
            raise AbandonedError
        if child is not None and not any(isinstance(c, Future) and not c.done() for c in chunks):
            chunks.append(child.submit(prepare_items_timed, chunk, schema_json, max_bytes))
        else:
            chunks.append(prepare_items_timed(chunk, schema_json, max_bytes))
    for done in chunks:
        prepared, _, _ = done.result() if isinstance(done, Future) else done
        assert isinstance(prepared, bytes)
        for item in decode_items(prepared):
            if is_tombstone(item):
                latest.pop(item.id, None)
            else:
                latest[item.id] = item
    if len(latest) < 2:
        return False
    made: list[ComparedInChild] = []

    def elsewhere(sample: Sequence[PreparedItem]) -> ComparedInChild:
        assert child is not None
        made.append(ComparedInChild(child, schema, sample, should_stop))
        return made[-1]

    try:
        model = fit_model(
            schema, list(latest.values()), should_stop, None if child is None else elsewhere
        )
    finally:
        for levels in made:
            levels.close()
    view = state.view()
    view.items.put_model(model)
    view.commit()
    return True


def fit_at_end(
    state: State, schema: ItemSchema, should_stop: Callable[[], bool]
) -> BatchResult | None:
    """Fit again and score every item again when a fit is due; what changed, or None."""
    if not schema.learn or not fit_due(item_count(state), stored_model(state.store)):
        return None
    view, result, _ = refit(state, schema, should_stop=should_stop)
    view.commit()
    return result
