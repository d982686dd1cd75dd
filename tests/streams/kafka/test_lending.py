"""A worker shows the detector's state in its metrics only while it holds the prepared log,
so that a sum over the workers counts each document once."""

from __future__ import annotations

import pytest
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


def test_the_state_is_shown_only_while_the_log_is_held_and_open() -> None:
    source = LiveState(why_none="not yet")
    held = HeldState(source, LOG)
    with State.open(None) as state:
        held.assigned({TopicPartition("app-pages", 0)})
        held.opened(state)
        assert not _shown(source), "another topic's partition is not the log"
        held.assigned({TopicPartition(LOG, 0)})
        assert _shown(source)
        held.revoked({TopicPartition(LOG, 0)})
        assert not _shown(source)
        held.assigned({TopicPartition(LOG, 0)})
        assert _shown(source)
        held.closing()
        assert not _shown(source)
        with pytest.raises(ApiError, match="stopping"), source.reading():
            pass


def test_a_log_held_before_the_state_opens_is_shown_once_it_opens() -> None:
    source = LiveState(why_none="not yet")
    held = HeldState(source, LOG)
    held.assigned({TopicPartition(LOG, 0)})
    assert not _shown(source)
    with State.open(None) as state:
        held.opened(state)
        assert _shown(source)
        held.closing()
