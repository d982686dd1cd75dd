"""A worker's configuration fails fast, reads the environment, and its state directory refuses
settings or partition counts other than those it was built with (no broker needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from neardup.core import IncompatibleStateError, NeardupError, Settings
from neardup.streams.topology import internal_topics
from neardup.streams.worker import check_settings
from neardup.streams.worker_config import WorkerConfig


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"broker": "localhost"}, "HOST:PORT"),
        ({"partitions": 0}, "partitions=0"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"pages_topic": "a b"}, "'a b'"),
    ],
)
def test_bad_configuration_is_refused_with_the_value(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    fields: dict[str, object] = {"broker": "localhost:9092", "state_dir": tmp_path} | changes
    with pytest.raises(NeardupError, match=message):
        WorkerConfig(**fields)  # type: ignore[arg-type]


def test_flags_win_over_environment() -> None:
    environ = {"NEARDUP_BROKER": "env:1", "NEARDUP_PARTITIONS": "8", "NEARDUP_STATE": "/s"}
    merged = WorkerConfig.from_environment({"broker": "flag:2", "partitions": None}, environ)
    assert merged == {"broker": "flag:2", "partitions": 8, "state_dir": "/s"}


def test_state_directory_refuses_other_settings_and_partitions(tmp_path: Path) -> None:
    first = WorkerConfig("localhost:9092", tmp_path, partitions=4)
    check_settings(first)
    check_settings(first)  # the same again is fine
    with pytest.raises(IncompatibleStateError, match=r"threshold: stored 0\.5, requested 0\.7"):
        check_settings(WorkerConfig("localhost:9092", tmp_path, settings=Settings(threshold=0.7)))
    with pytest.raises(IncompatibleStateError, match="partitions: stored 4, requested 2"):
        check_settings(WorkerConfig("localhost:9092", tmp_path, partitions=2))


def test_union_sees_one_order_and_other_stages_are_partitioned_alike(tmp_path: Path) -> None:
    topics = internal_topics(WorkerConfig("localhost:9092", tmp_path, partitions=3, app_id="x"))
    assert topics["x-edges"] == 1
    assert {topics[f"x-{stage}"] for stage in ("docs", "keys", "candidates", "verify")} == {3}
    assert topics["neardup.pages"] == 3
