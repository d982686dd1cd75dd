"""How a worker's detect agent splits a batch of prepared messages into transactions: fewer
messages each while a front follows the detector's state (no broker needed)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from neardup.streams.kafka.topology import transactions


@given(st.lists(st.integers(), max_size=8), st.booleans())
def test_a_batch_is_applied_whole_and_in_order(batch: list[int], followed: bool) -> None:
    parts = transactions(batch, followed)
    assert [message for part in parts for message in part] == batch
    assert all(part for part in parts)


def test_a_followed_detector_applies_two_messages_a_transaction_and_eight_otherwise() -> None:
    batch = list(range(8))
    assert transactions(batch, followed=False) == [batch]
    assert transactions(batch, followed=True) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert transactions([0, 1, 2], followed=True) == [[0, 1], [2]]
