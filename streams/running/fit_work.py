"""The fit's pair comparisons in the run's child process, beside this one's.

Fitting item mode's model (``neardup.core.items.fit``) compares a hundred thousand pairs
and more of its sample, one at a time in Python, before the run's first batch: the prepare
child has nothing to do then. ``ComparedInChild`` is the fit's ``Elsewhere`` there
(``neardup.core.items.comparing``): the sample and the model's counts go to the child once
(a job of their own), then the pairs in chunks. A chunk the child has not started when the
fit needs it is compared in this process instead, the last first while the child works
from the first: the two share the work whatever each chunk costs (a random pair of long
titles costs ten times a candidate pair of names). A stop asked for while the fit waits is
honoured within a chunk's time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout

import msgspec
import numpy as np
import xxhash
from neardup.core import AbandonedError
from neardup.core.items.compare import comparisons_of
from neardup.core.items.comparing import Compared, Here, comparer_of
from neardup.core.items.model import ItemModel
from neardup.core.items.prepare import PreparedItem
from neardup.core.items.schema import ItemSchema

from .prepare_work import decode_items

__all__ = ["ComparedInChild", "compared_here", "load_here"]

#: pairs a chunk (a few hundredths of a second to a few tenths of comparisons)
_CHUNK = 2048
#: seconds between two looks at a stop while a chunk is awaited
_POLL = 0.1

Pairs = Sequence[tuple[int, int]]
_loaded: tuple[bytes, Callable[[Pairs], Compared]] | None = None


def load_here(token: bytes, schema_json: str, model: bytes, items: bytes) -> None:
    """In the child: the sample readied under the model's counts, kept for the chunks."""
    global _loaded
    _loaded = None  # the last sample's features go before the next one's come
    if items:
        schema = ItemSchema.from_json(schema_json)
        _loaded = (token, comparer_of(schema, ItemModel.decode(model), decode_items(items)))


def compared_here(token: bytes, pairs: Pairs) -> tuple[bytes, bytes]:
    """In the child: the pairs' levels (rows of int8) and similarities (float64)."""
    if _loaded is None or _loaded[0] != token:
        raise RuntimeError("pairs sent for a sample the child does not hold")
    levels, similarities = _loaded[1](pairs)
    return levels.tobytes(), similarities.tobytes()


class _Sent:
    """Chunks of pairs in the child (``Awaited``)."""

    def __init__(
        self,
        chunks: list[tuple[Pairs, Future[tuple[bytes, bytes]]]],
        columns: int,
        should_stop: Callable[[], bool] | None,
    ) -> None:
        self._chunks = chunks
        self._columns = columns
        self._should_stop = should_stop

    def __call__(self, here: Here) -> Compared:
        done: dict[int, Compared] = {}
        for at in reversed(range(len(self._chunks))):
            pairs, future = self._chunks[at]
            if not future.cancel():
                break  # started there, and so are those before it
            done[at] = here(pairs)
        for at, (_, future) in enumerate(self._chunks):
            if at not in done:
                levels, similarities = self._result(future)
                done[at] = (
                    np.frombuffer(levels, dtype=np.int8).reshape(-1, self._columns),
                    np.frombuffer(similarities, dtype=np.float64),
                )
        parts = [done[at] for at in range(len(self._chunks))]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def cancel(self) -> None:
        for _, future in self._chunks:
            future.cancel()

    def _result(self, future: Future[tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
        while True:
            try:
                return future.result(timeout=_POLL)
            except FutureTimeout:
                if self._should_stop is not None and self._should_stop():
                    self.cancel()
                    raise AbandonedError(
                        "a stop was asked for while the model was being fitted"
                    ) from None


class ComparedInChild:
    """``Elsewhere`` (``neardup.core.items.comparing``) in ``pool``'s process (one worker),
    for a fit of ``items``."""

    def __init__(
        self,
        pool: Executor,
        schema: ItemSchema,
        items: Sequence[PreparedItem],
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self._pool = pool
        self._schema = schema.to_json()
        self._columns = len(comparisons_of(schema))
        self._items = msgspec.msgpack.encode(list(items))
        self._should_stop = should_stop
        self._loaded = b""
        self._sent: list[_Sent] = []

    def __call__(self, model: ItemModel, pairs: Pairs) -> _Sent:
        encoded = model.encode()
        token = xxhash.xxh3_128_digest(encoded) + xxhash.xxh3_128_digest(self._items)
        if token != self._loaded:
            self._pool.submit(load_here, token, self._schema, encoded, self._items)
            self._loaded = token
        chunks = [
            (part, self._pool.submit(compared_here, token, part))
            for at in range(0, len(pairs), _CHUNK)
            for part in (pairs[at : at + _CHUNK],)
        ]
        self._sent.append(_Sent(chunks, self._columns, self._should_stop))
        return self._sent[-1]

    def close(self) -> None:
        """Cancel what has not started and free the child's copy of the sample."""
        for sent in self._sent:
            sent.cancel()
        self._sent.clear()
        with contextlib.suppress(RuntimeError):  # the pool shut down: the child is gone
            self._pool.submit(load_here, b"", "", b"", b"")
