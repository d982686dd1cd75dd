"""Where a service reads its state from: a state its process lends, or a follower.

A writer (``neardup run``, the worker that holds the detector) lends its open state to its
metrics (``LiveState``) and takes it back before closing it: ``detach`` waits for the
scrapes still reading it. ``neardup serve`` reads a state directory that another process
writes, through a RocksDB secondary instance (``FollowedState``) caught up with each write of
the writer, off the request path.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Protocol

from neardup.state import State

from .errors import UnavailableError

__all__ = ["FollowedState", "LiveState", "StateSource"]

logger = logging.getLogger(__name__)


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
    instance that a background thread catches up every ``every`` seconds.

    rocksdict holds the interpreter lock through a catch-up, so frequent small catch-ups keep
    each pause of the requests short: the log is looked at every ``every`` seconds, and a
    catch-up follows each write of the writer, one batch (docs/service.md). A catch-up
    cannot show what the writer flushed until its log moves on
    (see ``Store.outdated``); when the writer has flushed and then written nothing for
    ``quiet`` seconds (a pause, or the end of a run), the thread opens a new follower, lends
    it to the next requests, and closes the old one once no request reads it. Reopening
    replays the writer's whole log, a longer pause, so it waits for quiet."""

    def __init__(
        self, path: str | os.PathLike[str], every: float = 0.05, quiet: float = 1.0
    ) -> None:
        self._path = path
        self._every = every
        self._quiet = quiet
        self._lent = LiveState(State.follow(path))
        self._swap = threading.Lock()  # a request takes the follower lent at one instant
        self._log: tuple[str, int] | None = None
        self._log_moved = time.monotonic()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="neardup-follower", daemon=True)
        self._thread.start()

    @contextmanager
    def reading(self) -> Iterator[State]:
        with ExitStack() as lent:
            with self._swap:
                state = lent.enter_context(self._lent.reading())
            yield state

    def _follow(self) -> None:
        while not self._stopping.wait(self._every):
            try:
                self._refresh()
            except Exception:  # the writer may be mid-rename: the old follower still answers
                logger.exception("neardup serve: cannot catch up with %s", self._path)

    def _refresh(self) -> None:
        # only this thread replaces the follower, so self._lent holds still here
        with self._lent.reading() as state:
            log = state.writer_log
            if log != self._log:  # a catch-up costs even when there is nothing to see
                state.catch_up()
        now = time.monotonic()
        if log != self._log:
            self._log, self._log_moved = log, now
        elif now - self._log_moved >= self._quiet and self._lent_outdated():
            fresh = LiveState(State.follow(self._path))
            with self._swap:
                old, self._lent = self._lent, fresh
            retired = old.detach("a newer follower answers")
            if retired is not None:
                retired.close()

    def _lent_outdated(self) -> bool:
        # read only once the writer is quiet: it reads the writer's manifest
        with self._lent.reading() as state:
            return state.outdated

    def close(self) -> None:
        self._stopping.set()
        self._thread.join()
        state = self._lent.detach("the server is stopping")
        if state is not None:
            state.close()
