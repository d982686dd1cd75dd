"""The fit's pairs compared in the prepare child (``fit_work.py``): the model fitted with
the child is the one fitted without it; a stop asked for while the fit waits on the child is
honoured within a chunk's time, whatever the fit is doing."""

from __future__ import annotations

import time

from neardup.core import AbandonedError
from neardup.core.items.fit import fit
from neardup.core.items.prepare import ItemPreparer, PreparedItem
from neardup.core.items.schema import ItemSchema
from neardup.streams.running.fit_work import ComparedInChild
from neardup.streams.running.prepare_work import executor

from bench.items import listings
from bench.items.evaluate import SCHEMAS


def _sample(count: int) -> tuple[ItemSchema, list[PreparedItem]]:
    schema = ItemSchema.from_toml((SCHEMAS / "listings.toml").read_text())
    preparer = ItemPreparer(schema)
    return schema, [preparer.prepare(x.record) for x in listings.generate(count, 6)]


def test_a_fit_with_the_child_is_the_fit_without() -> None:
    schema, items = _sample(1500)
    with executor("process") as child:
        elsewhere = ComparedInChild(child, schema, items)
        try:
            with_child = fit(schema, items, seed=2, elsewhere=elsewhere)
        finally:
            elsewhere.close()
    assert with_child == fit(schema, items, seed=2)


def test_a_stop_during_a_fit_with_the_child_is_honoured_at_once() -> None:
    schema, items = _sample(3000)
    with executor("process") as child:
        elsewhere = ComparedInChild(child, schema, items)
        started = time.monotonic()
        fit(schema, items, seed=2, elsewhere=elsewhere)
        whole = time.monotonic() - started
        elsewhere.close()
        stopped = []
        for share in (0.2, 0.4, 0.6, 0.8):  # counting, comparing, waiting on the child, ...
            asked = time.monotonic() + share * whole

            def stop() -> bool:
                return time.monotonic() > asked  # noqa: B023 (read in this round only)

            elsewhere = ComparedInChild(child, schema, items, stop)
            try:
                fit(schema, items, seed=2, should_stop=stop, elsewhere=elsewhere)
            except AbandonedError:
                stopped.append(share)
            finally:
                elsewhere.close()
            # stopped, or done (near its end, a fit no longer looks)
            assert time.monotonic() - asked < 1.0, share
    assert stopped[:2] == [0.2, 0.4], stopped
