"""A worker shows the detector's state in its metrics only while it holds the prepared log,
and only once it has caught the state up to what the log's last holder applied."""

from __future__ import annotations

import asyncio

from aiokafka.structs import TopicPartition
from neardup.state import State
from neardup.streams.kafka.lending import HeldState
from neardup.streams.service import ApiError, LiveState

LOG = "app-prepared"


def _shown(source: LiveState) -> bool:
    try:
        with source.reading():
            return True
    except ApiError:
        return False


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_the_state_is_shown_while_the_log_is_held_once_caught_up() -> None:
    async def scenario() -> None:
        source = LiveState(why_none="not yet")
        held = HeldState(source, LOG)
        release = asyncio.Event()
        catch_ups = 0

        async def catch_up() -> None:
            nonlocal catch_ups
            catch_ups += 1
            await release.wait()

        with State.open(None) as state:
            await held.opened(state, catch_up)
            await held.assigned({TopicPartition("app-pages", 0)})
            await _settle()
            assert not _shown(source) and catch_ups == 0, "another topic is not the log"
            await held.assigned({TopicPartition(LOG, 0)})
            await _settle()
            assert catch_ups == 1 and not _shown(source), "lent only once caught up"
            release.set()
            await _settle()
            assert _shown(source)
            await held.revoked({TopicPartition(LOG, 0)})
            assert not _shown(source)
            await held.assigned({TopicPartition(LOG, 0)})
            await _settle()
            assert catch_ups == 2 and _shown(source)
            await held.closing()
            assert not _shown(source)

    asyncio.run(scenario())


def test_a_revocation_during_the_catch_up_lends_nothing() -> None:
    async def scenario() -> None:
        source = LiveState(why_none="not yet")
        held = HeldState(source, LOG)
        release = asyncio.Event()

        async def catch_up() -> None:
            await release.wait()

        with State.open(None) as state:
            await held.opened(state, catch_up)
            await held.assigned({TopicPartition(LOG, 0)})
            await _settle()
            await held.revoked({TopicPartition(LOG, 0)})
            release.set()
            await _settle()
            assert not _shown(source)
            await held.closing()

    asyncio.run(scenario())
