"""The detector's state, shown in the worker's metrics while this worker holds the log.

Every worker opens its detector state when it starts (Faust runs each agent on every
worker), but only the one assigned the prepared log's partition holds the deployment's
state: its ``/metrics`` reports the state's numbers, the others' only their own work, so
that a sum over the workers counts each document once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from neardup.state import State

from ..service import LiveState

__all__ = ["HeldState"]


class HeldState:
    """Lends ``source`` the detector's state while the worker holds the log named ``log``."""

    def __init__(self, source: LiveState, log: str) -> None:
        self._source = source
        self._log = log
        self._state: State | None = None
        self._holds = False

    def opened(self, state: State) -> None:
        self._state = state
        self._lend()

    def closing(self) -> None:
        """Before the state closes: waits for the scrapes reading it."""
        self._state = None
        self._source.detach("this worker's detector is stopping")

    def assigned(self, partitions: Iterable[Any]) -> None:
        if any(tp.topic == self._log for tp in partitions):
            self._holds = True
            self._lend()

    def revoked(self, partitions: Iterable[Any]) -> None:
        if any(tp.topic == self._log for tp in partitions):
            self._holds = False
            self._source.detach("this worker no longer holds the detector")

    def _lend(self) -> None:
        if self._state is not None and self._holds:
            self._source.attach(self._state)
