"""The detector's state, shown in the worker's metrics while this worker holds the log.

Every worker opens its detector state when it starts (Faust runs each agent on every
worker), but only the one assigned the prepared log's partition holds the deployment's
state: its ``/metrics`` reports the state's numbers, the others' only their own work, so
that a sum over the workers counts each document once. A worker assigned the log first
catches its state up to what the log's last holder applied (with no new pages it would
stay behind, and report an old state, and so would a ``serve`` following it), then lends
it; it takes the state back when the partition is revoked and before the state closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from neardup.state import State

from ..service import LiveState

__all__ = ["HeldState"]

logger = logging.getLogger(__name__)

#: brings the opened state up to what the log's last holder applied
CatchUp = Callable[[], Awaitable[None]]


class HeldState:
    """Lends ``source`` the detector's state while the worker holds the log named ``log``."""

    def __init__(self, source: LiveState, log: str) -> None:
        self._source = source
        self._log = log
        self._state: State | None = None
        self._catch_up: CatchUp | None = None
        self._lending: asyncio.Task[None] | None = None
        self._holds = False

    async def opened(self, state: State, catch_up: CatchUp) -> None:
        self._state, self._catch_up = state, catch_up
        self._lend()

    async def closing(self) -> None:
        """Before the state closes: waits for the scrapes reading it."""
        self._state = None
        await self._withdraw("this worker's detector is stopping")

    async def assigned(self, partitions: Iterable[Any]) -> None:
        if any(tp.topic == self._log for tp in partitions):
            self._holds = True
            self._lend()

    async def revoked(self, partitions: Iterable[Any]) -> None:
        if any(tp.topic == self._log for tp in partitions):
            self._holds = False
            await self._withdraw("this worker no longer holds the detector")

    def _lend(self) -> None:
        if self._state is None or not self._holds or self._source.attached:
            return
        if self._lending is not None and not self._lending.done():
            return
        # a task: a long catch-up must not hold up the rebalance that assigned the log
        self._lending = asyncio.get_running_loop().create_task(self._lend_caught_up(self._state))

    async def _lend_caught_up(self, state: State) -> None:
        assert self._catch_up is not None
        try:
            await self._catch_up()
        except Exception as error:  # the detect agent meets it again at its next batch
            logger.error("detector: cannot catch up on %s: %s", self._log, error)
            return
        if self._state is state and self._holds:
            self._source.attach(state)

    async def _withdraw(self, why: str) -> None:
        lending, self._lending = self._lending, None
        if lending is not None:
            lending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lending
        await asyncio.get_running_loop().run_in_executor(None, self._source.detach, why)
