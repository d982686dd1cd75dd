"""The detector's state, lent to the worker's service while this worker holds the log.

Every worker opens its detector state when it starts (Faust runs each agent on every
worker), but only the one assigned the prepared log's partition holds the deployment's
state: it lends it to its service and advertises its URL on the service topic; it takes it
back when the partition is revoked (a rebalance) and before the state closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from neardup.state import State

from ..service import LiveState, Service
from .owner import OWNER_KEY, advertisement

__all__ = ["Lender"]

#: sends (topic, key, value, partition)
Send = Callable[[str, bytes, bytes, int], Awaitable[None]]


class Lender:
    def __init__(
        self, service: Service, source: LiveState, log: str, topic: str, url: str, send: Send
    ) -> None:
        self._service = service
        self._source = source
        self._log = log
        self._topic = topic
        self._url = url
        self._send = send
        self._state: State | None = None
        self._holds = False

    async def opened(self, state: State) -> None:
        self._state = state
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
        self._source.attach(self._state)
        await self._send(self._topic, OWNER_KEY, advertisement(self._url), 0)

    async def _withdraw(self, why: str) -> None:
        if self._source.attached:
            await asyncio.get_running_loop().run_in_executor(None, self._source.detach, why)
