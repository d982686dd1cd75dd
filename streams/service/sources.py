"""Where a service reads its state from: the state a runtime is writing, or a follower.

A runtime (``neardup run``, the worker that holds the detector) lends its open state to the
service (``LiveState``) and takes it back before closing it: ``detach`` waits for the queries
still reading it. ``neardup serve`` reads a state directory that another process writes,
through a RocksDB secondary instance (``FollowedState``) caught up at most once a second.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Protocol

from neardup.state import State

from .errors import UnavailableError

__all__ = ["FollowedState", "LiveState", "StateSource"]


class StateSource(Protocol):
    """A state to answer from, lent for the length of one request."""

    def reading(self) -> AbstractContextManager[State]:
        """The state, until the block ends; UnavailableError when there is none."""
        ...


class LiveState:
    """The state a runtime is writing, lent to the service while the runtime holds it.

    Reads need no lock against the writer: RocksDB serves them beside its writes, and every
    batch is one atomic write, so a query sees each batch whole or not at all (a query that
    reads several keys may see two batches)."""

    def __init__(self, state: State | None = None, why_none: str = "no state yet") -> None:
        self._changed = threading.Condition()
        self._state = state
        self._readers = 0
        self._why_none = why_none

    def attach(self, state: State) -> None:
        with self._changed:
            self._state = state

    def detach(self, why: str) -> State | None:
        """Take the state back (returned, if one was lent) once no request reads it, so that
        it may be closed."""
        with self._changed:
            state, self._state = self._state, None
            self._why_none = why
            self._changed.wait_for(lambda: self._readers == 0)
            return state

    @property
    def attached(self) -> bool:
        return self._state is not None

    @contextmanager
    def reading(self) -> Iterator[State]:
        with self._changed:
            state = self._state
            if state is None:
                raise UnavailableError(self._why_none)
            self._readers += 1
        try:
            yield state
        finally:
            with self._changed:
                self._readers -= 1
                self._changed.notify_all()


class FollowedState:
    """A state directory another process writes (or wrote), read by a RocksDB secondary
    instance: it sees the writer's batches up to the last catch-up, at most ``every``
    seconds old. When the writer has flushed or compacted since, a new follower is opened
    (tens of milliseconds) and the old one closed once no request reads it."""

    def __init__(self, path: str | os.PathLike[str], every: float = 1.0) -> None:
        self._path = path
        self._every = every
        self._lent = LiveState(State.follow(path))
        self._caught_up = time.monotonic()
        self._lock = threading.Lock()

    @contextmanager
    def reading(self) -> Iterator[State]:
        with ExitStack() as lent:
            with self._lock:  # taken before a refresh can retire the follower
                if time.monotonic() - self._caught_up >= self._every:
                    self._refresh()
                    self._caught_up = time.monotonic()
                state = lent.enter_context(self._lent.reading())
            yield state

    def _refresh(self) -> None:
        with self._lent.reading() as state:
            outdated = state.outdated
            if not outdated:
                state.catch_up()
        if outdated:
            old, self._lent = self._lent, LiveState(State.follow(self._path))
            retired = old.detach("a newer follower answers")
            if retired is not None:
                retired.close()

    def close(self) -> None:
        state = self._lent.detach("the server is stopping")
        if state is not None:
            state.close()
