"""The worker lends the detector's state to its service only once it holds the prepared log
and has caught the state up to what the log's last holder applied; it takes the state back,
and stops its front, when it lets go."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiokafka.structs import TopicPartition
from neardup.state import State
from neardup.streams.kafka.lending import Lender
from neardup.streams.kafka.owner import OWNER_KEY
from neardup.streams.service import ApiError, LiveState

LOG = "app-prepared"
URL = "http://worker-a:8080"


class _Worker:
    """A Lender over a real (in-memory) state, with a catch-up the test lets finish."""

    def __init__(self) -> None:
        self.source = LiveState(why_none="not yet")
        self.sent: list[tuple[str, bytes, bytes, int]] = []
        self.withdrawn = 0
        self.release = asyncio.Event()
        self.catch_ups = 0

        async def send(topic: str, key: bytes, value: bytes, partition: int) -> None:
            self.sent.append((topic, key, value, partition))

        def withdrawn() -> None:
            self.withdrawn += 1

        self.lender = Lender(self.source, LOG, "app-service", URL, send, withdrawn)

    async def catch_up(self) -> None:
        self.catch_ups += 1
        await self.release.wait()

    def why(self) -> str:
        with pytest.raises(ApiError) as refused, self.source.reading():
            pass
        return str(refused.value)


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_the_state_is_lent_once_caught_up_and_taken_back_when_the_log_is_revoked() -> None:
    async def scenario() -> None:
        worker = _Worker()
        with State.open(None) as state:
            await worker.lender.opened(state, worker.catch_up)
            assert not worker.source.attached and worker.sent == [], "the log is not held"

            await worker.lender.assigned([TopicPartition(LOG, 0)])
            await _settle()
            assert worker.catch_ups == 1 and not worker.source.attached
            assert "catching up" in worker.why()
            (topic, key, value, _) = worker.sent[0]
            assert (topic, key, json.loads(value)["url"]) == ("app-service", OWNER_KEY, URL)

            worker.release.set()
            await _settle()
            assert worker.source.attached
            with worker.source.reading() as lent:
                assert lent is state

            await worker.lender.assigned([TopicPartition("app.pages", 0)])  # not the log
            await worker.lender.revoked([TopicPartition("app.pages", 0)])
            assert worker.source.attached and worker.withdrawn == 0

            await worker.lender.revoked([TopicPartition(LOG, 0)])
            assert not worker.source.attached and worker.withdrawn == 1
            assert "no longer holds" in worker.why()

    asyncio.run(scenario())


def test_a_revocation_during_the_catch_up_lends_nothing() -> None:
    async def scenario() -> None:
        worker = _Worker()
        with State.open(None) as state:
            await worker.lender.assigned([TopicPartition(LOG, 0)])
            await worker.lender.opened(state, worker.catch_up)  # either order
            await _settle()
            assert worker.catch_ups == 1
            await worker.lender.revoked([TopicPartition(LOG, 0)])
            worker.release.set()
            await _settle()
            assert not worker.source.attached, "lent after the log was revoked"
            assert worker.withdrawn == 0, "no front to stop: nothing had been lent"
            assert "no longer holds" in worker.why()

            await worker.lender.assigned([TopicPartition(LOG, 0)])  # held again
            await _settle()
            assert worker.catch_ups == 2 and worker.source.attached
            await worker.lender.closing()
            assert not worker.source.attached and worker.withdrawn == 1
            assert "stopping" in worker.why()

    asyncio.run(scenario())


def test_a_catch_up_that_fails_lends_nothing_and_says_why() -> None:
    async def scenario() -> None:
        worker = _Worker()

        async def failing() -> None:
            raise RuntimeError("the log starts at offset 40")

        with State.open(None) as state:
            await worker.lender.opened(state, failing)
            await worker.lender.assigned([TopicPartition(LOG, 0)])
            await _settle()
            assert not worker.source.attached
            assert "cannot catch up" in worker.why() and "offset 40" in worker.why()

    asyncio.run(scenario())
