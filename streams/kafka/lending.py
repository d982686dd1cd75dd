"""The detector's state, lent to the worker's service while this worker holds the log.

Every worker opens its detector state when it starts (Faust runs each agent on every
worker), but only the one assigned the prepared log's partition holds the deployment's
state. When it is assigned the log, it advertises its URL on the service topic at once (the
other workers redirect to it), catches its state up to what the log's last holder applied
(a state that another worker went on writing is behind: with no new pages it would stay
behind, and answer from an old state), and only then lends it to its service; until then a
state query gets a 503 that says so. It takes the state back when the partition is revoked
(a rebalance) and before the state closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from neardup.state import State

from ..service import LiveState
from .owner import OWNER_KEY, advertisement

__all__ = ["Lender"]

logger = logging.getLogger(__name__)

#: sends (topic, key, value, partition)
Send = Callable[[str, bytes, bytes, int], Awaitable[None]]
#: brings the opened state up to what the log's last holder applied
CatchUp = Callable[[], Awaitable[None]]


class Lender:
    def __init__(
        self,
        source: LiveState,
        log: str,
        topic: str,
        url: str,
        send: Send,
        withdrawn: Callable[[], None] | None = None,
    ) -> None:
        self._source = source
        self._log = log
        self._topic = topic
        self._url = url
        self._send = send
        #: called once the state is taken back (the service's front stops: service/fronted.py)
        self._withdrawn = withdrawn
        self._state: State | None = None
        self._catch_up: CatchUp | None = None
        self._lending: asyncio.Task[None] | None = None
        self._holds = False

    async def opened(self, state: State, catch_up: CatchUp) -> None:
        self._state = state
        self._catch_up = catch_up
        await self._lend()

    async def closing(self) -> None:
        """Before the state closes: waits for the requests reading it."""
        self._state = None
        await self._withdraw("this worker's detector is stopping")

    async def assigned(self, partitions: Iterable[Any]) -> None:
        if any(tp.topic == self._log for tp in partitions):
            self._holds = True
            await self._lend()

    async def revoked(self, partitions: Iterable[Any]) -> None:
        if any(tp.topic == self._log for tp in partitions):
            self._holds = False
            await self._withdraw("this worker no longer holds the detector")

    async def _lend(self) -> None:
        if self._state is None or not self._holds or self._source.attached:
            return
        if self._lending is not None and not self._lending.done():
            return
        await self._send(self._topic, OWNER_KEY, advertisement(self._url), 0)
        self._source.detach("this worker is catching up on the detector's log; ask again soon")
        # a task: a long catch-up must not hold up the rebalance that assigned the log
        self._lending = asyncio.get_running_loop().create_task(
            self._lend_when_caught_up(self._state)
        )

    async def _lend_when_caught_up(self, state: State) -> None:
        assert self._catch_up is not None
        try:
            await self._catch_up()
        except Exception as error:  # the detect agent meets it again at its next batch
            logger.error("detector: cannot catch up on %s: %s", self._log, error)
            self._source.detach(f"this worker's detector cannot catch up on its log: {error}")
            return
        if self._state is state and self._holds:
            self._source.attach(state)

    async def _withdraw(self, why: str) -> None:
        lending, self._lending = self._lending, None
        if lending is not None:
            lending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lending
        if self._source.attached:
            await asyncio.get_running_loop().run_in_executor(None, self._take_back, why)
        else:
            self._source.detach(why)

    def _take_back(self, why: str) -> None:
        self._source.detach(why)
        if self._withdrawn is not None:
            self._withdrawn()
